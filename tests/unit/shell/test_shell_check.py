"""The checker: every act through the gate before anything runs, paths through the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_core.policy import Act, ActKind, Policy, Tier
from harness_core.shell import Blocked, RunPlan, operand_acts, prepare
from harness_core.tools._shell_tools import Shell
from harness_core.workspace import Workspace
from tests.unit.shell.support import RecordingGate, context


def _git(root: Path) -> None:
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")


def _blocked(root: Path, line: str, gate: RecordingGate | None = None) -> Blocked:
    result = prepare(line, Workspace(root), gate or RecordingGate())
    assert isinstance(result, Blocked), f"{line!r} was admitted"
    return result


def _plan(root: Path, line: str, gate: RecordingGate | None = None) -> RunPlan:
    result = prepare(line, Workspace(root), gate or RecordingGate())
    assert isinstance(result, RunPlan), f"{line!r} was refused: {result}"
    return result


def test_policy_refusal_of_a_middle_stage_runs_nothing(tmp_path: Path) -> None:
    gate = RecordingGate(Policy.from_lists(tier=Tier.FULL, deny_exec=["python3*"]))
    ctx = context(tmp_path, gate)
    outcome = Shell().run(
        {"line": "touch first.txt | python3 -c pass | touch last.txt; touch after.txt"}, ctx
    )
    assert outcome.is_error and outcome.refused is not None
    assert outcome.refused.act == "exec"
    assert outcome.refused.rule == "python3*"
    assert outcome.refused.layer == "project"
    assert sorted(os.listdir(tmp_path)) == []  # not even the stages before the denied one


def test_every_stage_is_checked_with_its_whole_argv_before_running(tmp_path: Path) -> None:
    gate = RecordingGate()
    _plan(tmp_path, "echo a b | tr a-z A-Z > out.txt && cat < out.txt", gate)
    assert gate.checked == [
        Act.exec(["echo", "a", "b"]),
        Act.exec(["tr", "a-z", "A-Z"]),
        Act.write("out.txt"),
        Act.exec(["cat"]),
        Act.read("out.txt"),
    ]


def test_a_denied_redirect_target_blocks_the_line(tmp_path: Path) -> None:
    gate = RecordingGate(Policy.from_lists(tier=Tier.FULL, deny_write=["secret/**"]))
    blocked = _blocked(tmp_path, "echo x > secret/key", gate)
    assert (blocked.act, blocked.target, blocked.rule) == ("write", "write secret/key", "secret/**")


def test_read_redirect_is_a_read_act(tmp_path: Path) -> None:
    gate = RecordingGate(Policy.from_lists(tier=Tier.FULL, deny_read=["*.pem"]))
    blocked = _blocked(tmp_path, "cat < key.pem", gate)
    assert blocked.act == "read"


@pytest.mark.parametrize("target", ["../out.txt", "/tmp/io-shell-test-out", "a/../../x"])
def test_redirect_outside_the_root_is_refused(tmp_path: Path, target: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    gate = RecordingGate()
    blocked = _blocked(root, f"echo x > {target}", gate)
    assert blocked.act == "write"
    assert "outside the workspace root" in blocked.reason
    assert gate.refused  # the gate recorded the refusal
    assert not (tmp_path / "out.txt").exists()


def test_redirect_through_a_link_that_leaves_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "out").symlink_to(tmp_path)
    blocked = _blocked(root, "echo x >> out/file.txt", RecordingGate())
    assert "outside the workspace root" in blocked.reason


def test_cd_nope_resolves_the_redirect_under_nope_and_inside_the_root(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "cd nope && ls > out.txt")
    ls = plan.chains[0].pipelines[1].stages[0]
    assert ls.cwd == "nope"
    assert ls.redirects[0].path == "nope/out.txt"
    outcome = Shell().run({"line": "cd nope && ls > out.txt"}, context(tmp_path))
    assert outcome.data.exit_status == 1
    assert "cd: nope" in outcome.data.stderr
    assert not (tmp_path / "out.txt").exists()
    assert not (tmp_path / "nope").exists()


def test_cd_above_the_root_is_refused(tmp_path: Path) -> None:
    blocked = _blocked(tmp_path, "cd .. && ls > out.txt")
    assert blocked.construct == "cd"
    assert "outside" in blocked.reason


def test_cd_into_git_then_writing_config_is_refused(tmp_path: Path) -> None:
    _git(tmp_path)
    blocked = _blocked(tmp_path, "cd .git && echo x > config")
    assert blocked.target == "write .git/config"
    assert blocked.layer == "builtin"


@pytest.mark.parametrize(
    "line",
    [
        "mv .git g && echo x >> g/config",
        "mv .git/config c",
        "mv -t elsewhere .git",
        "cp -r stuff/hooks .git",
        "mv stuff .git/hooks",
        "cp evil .git/hooks/pre-commit",
        "cp -t .git/hooks evil",
        "mv evil .gitmodules",
        "cp evil io.toml",
        "rm -rf .git",
        "rm -r .",
        "ln .git/config hard",
        "ln -s anything .git/hooks/post-checkout",
        "tee .git/config",
        "touch io.local.toml",
        "cd .git && mv config ../c",
        "mv --target-dir=.git/hooks evil",
    ],
)
def test_renames_and_copies_that_reach_a_protected_path_are_refused(tmp_path: Path, line: str) -> None:
    _git(tmp_path)
    (tmp_path / "stuff" / "hooks").mkdir(parents=True)
    (tmp_path / "stuff" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (tmp_path / "evil").write_text("x")
    (tmp_path / "elsewhere").mkdir()
    blocked = _blocked(tmp_path, line)
    assert blocked.act == "write"
    assert blocked.layer == "builtin"


def test_moving_a_directory_to_where_git_would_be_shadows_its_config(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()  # empty today: the protected names are probed anyway
    blocked = _blocked(tmp_path, "mv d .git")
    assert blocked.target is not None and blocked.target.startswith("write .git/")


def test_harmless_renames_are_admitted(tmp_path: Path) -> None:
    _git(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    _plan(tmp_path, "mv src lib && cp -r lib lib2 && rm -rf lib2 && ln -s lib l && touch n")


def test_user_deny_rules_see_entries_under_a_moved_directory(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "a.pem").write_text("")
    gate = RecordingGate(Policy.from_lists(tier=Tier.FULL, deny_write=["**/*.pem"]))
    blocked = _blocked(tmp_path, "mv certs c2", gate)
    assert blocked.target == "write certs/a.pem"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("mv", "a", "b"), [("read", "a"), ("write", "a"), ("write", "b")]),
        (("mv", "-f", "--", "-x", "b"), [("read", "-x"), ("write", "-x"), ("write", "b")]),
        (("cp", "a", "dir"), [("write", "dir"), ("read", "a"), ("write", "dir/a")]),
        (("cp", "-t", "dir", "a", "b"),
         [("write", "dir"), ("read", "a"), ("read", "b"), ("write", "dir/a"), ("write", "dir/b")]),
        (("/bin/mv", "-S", ".bak", "a", "b"), [("read", "a"), ("write", "a"), ("write", "b")]),
        (("ln", "-s", "/etc/passwd", "p"), [("write", "p")]),
        (("ln", "x", "y"), [("read", "x"), ("write", "x"), ("write", "y")]),
        (("rm", "-f", "a", "b"), [("read", "a"), ("write", "a"), ("read", "b"), ("write", "b")]),
        (("touch", "-r", "ref", "t"), [("read", "ref"), ("write", "t")]),
        (("tee", "-a", "log"), [("write", "log")]),
        (("grep", "x", "file"), []),
    ],
)
def test_file_operands_become_read_and_write_acts(
    tmp_path: Path, argv: tuple[str, ...], expected: list[tuple[str, str]]
) -> None:
    (tmp_path / "dir").mkdir()
    acts, problem = operand_acts(argv, "", Workspace(tmp_path))
    assert problem is None
    assert [(a.kind.value, a.target) for a in acts] == expected


def test_operand_outside_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    blocked = _blocked(root, "cp ../../etc/passwd here")
    assert blocked.act == "read"
    assert "outside" in blocked.reason


def test_a_symlink_made_earlier_in_the_line_is_caught_at_spawn_time(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    ctx = context(root)
    outcome = Shell().run({"line": f"ln -s {outside} d && echo leaked > d/f.txt"}, ctx)
    assert outcome.refused is not None
    assert "now resolves outside the workspace root" in outcome.refused.reason
    assert (root / "d").is_symlink()  # what ran before the refusal, ran
    assert not (outside / "f.txt").exists()


def test_a_symlink_made_by_a_line_pointing_outside_is_then_refused_by_write_file(
    tmp_path: Path,
) -> None:
    from harness_core.tools._files import WriteFile

    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    ctx = context(root)
    made = Shell().run({"line": f"ln -s {outside} escape"}, ctx)
    assert made.data.exit_status == 0 and (root / "escape").is_symlink()
    written = WriteFile().run({"path": "escape/pwned.txt", "content": "x"}, ctx)
    assert written.is_error and written.refused is not None
    assert written.refused.act == "write"
    assert not (outside / "pwned.txt").exists()
    again = Shell().run({"line": "echo x > escape/pwned.txt"}, ctx)
    assert again.refused is not None and not (outside / "pwned.txt").exists()


def test_denied_act_kinds_round_trip_into_the_refusal(tmp_path: Path) -> None:
    gate = RecordingGate(Policy.from_lists(tier=Tier.READ_ONLY, approval="deny"))
    blocked = _blocked(tmp_path, "ls", gate)
    assert blocked.act == ActKind.EXEC.value
    assert blocked.layer == "tier"


def _src(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("")


def test_a_destination_that_became_a_directory_is_checked_again_at_spawn_time(
    tmp_path: Path,
) -> None:
    _src(tmp_path)
    gate = RecordingGate()
    outcome = Shell().run({"line": "mkdir build && cp -r src build"}, context(tmp_path, gate))
    assert outcome.data.exit_status == 0, outcome.output
    assert (tmp_path / "build" / "src" / "a.py").exists()
    assert Act.write("build/src/a.py") in gate.checked  # only knowable once build existed


def test_a_spawn_time_act_the_policy_denies_stops_the_line_there(tmp_path: Path) -> None:
    _src(tmp_path)
    gate = RecordingGate(Policy.from_lists(tier=Tier.FULL, deny_write=["build/src/**"]))
    outcome = Shell().run({"line": "mkdir build && cp -r src build; touch after"},
                          context(tmp_path, gate))
    assert outcome.refused is not None and outcome.refused.rule == "build/src/**"
    assert (tmp_path / "build").is_dir()  # what ran before the refusal, ran
    assert not (tmp_path / "build" / "src").exists() and not (tmp_path / "after").exists()


def test_a_handle_line_never_asks_at_spawn_time_it_stops(tmp_path: Path) -> None:
    from harness_core.clock import SystemClock
    from harness_core.shell import HandleRegistry
    from harness_core.tools._shell_tools import ShellPoll, ShellStart
    from tests.unit.shell.support import off_launcher, wait_for

    root = tmp_path / "ws"
    root.mkdir()
    _src(root)
    with HandleRegistry(run_id="r", launcher=off_launcher(root), workspace=Workspace(root),
                        capture_dir=tmp_path / "cap", clock=SystemClock()) as registry:
        gate = RecordingGate()
        ctx = context(root, gate, handles=registry)
        started = ShellStart().run({"line": "mkdir build && cp -r src build"}, ctx)
        handle = started.data.handle
        assert wait_for(lambda: not registry.poll(handle, 0).running)
        polled = ShellPoll().run({"handle": handle}, ctx)
        assert "was not checked before it started" in polled.output
        assert not (root / "build" / "src").exists()
        assert Act.write("build/src/a.py") not in gate.checked


def test_beyond_the_tree_cap_the_protected_paths_are_still_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness_core.shell._operands as operands

    monkeypatch.setattr(operands, "MAX_TREE_ENTRIES", 3)
    big = tmp_path / "node_modules"
    big.mkdir()
    for index in range(10):
        (big / f"f{index}.js").write_text("")
    gate = RecordingGate()
    _plan(tmp_path, "rm -rf node_modules", gate)
    assert len([a for a in gate.checked if a.target.startswith("node_modules/")]) == 3
    (tmp_path / "io.toml").write_text("")
    blocked = _blocked(tmp_path, "rm -rf .")
    assert blocked.layer == "builtin"
