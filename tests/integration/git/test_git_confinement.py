"""docs/CONTRACT.md, "What io runs on the host" and "Git built-ins": no program named by
a file the agent can write runs outside the sandbox through io's git (issue #22).

Every attack runs through `io tool git_status|git_diff|git_commit` (a real `io`
process, real git). The program each one plants writes a file outside the workspace;
that file is the oracle. Each trap is first shown to fire under plain git, and each
refusal has its negative control: an ordinary repository still gives the right answer.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_io
from tests.unit.git.test_git_tools import git, make_repo

Arm = Callable[[Path, str], None]


class Scene:
    """A repository in `tmp/ws`, a trap program in it, the oracle file outside it."""

    def __init__(self, tmp: Path) -> None:
        self.ws = make_repo(tmp / "ws")
        self.outside = tmp / "outside"
        self.outside.mkdir()
        self.escaped = self.outside / "escaped"
        hook = self.ws / "hook.sh"
        hook.write_text(f"#!/bin/sh\necho pwned >> '{self.escaped}'\nexec cat\n")
        hook.chmod(0o755)
        self.hook = f"sh {hook}"
        self.program = str(hook)  # for settings git runs without a shell (gpg.program)
        self.config = tmp / "io.toml"
        self.config.write_text('[policy]\ntier = "workspace-write"\n'
                               '[sandbox]\nbackend = "native"\n')
        self.store = tmp / "state.db"

    def tool(self, name: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        done = run_io(["tool", name, "--json", "--config", str(self.config),
                       "--args", json.dumps(args)], cwd=self.ws,
                      env={"IO_STORE": str(self.store)})
        assert done.stdout, done.stderr
        out: dict[str, Any] = json.loads(done.stdout)
        return done.returncode, out

    def plain_git_fires(self, *args: str) -> bool:
        subprocess.run(["git", *args], cwd=self.ws, capture_output=True, check=False,
                       stdin=subprocess.DEVNULL)
        fired = self.escaped.exists()
        self.escaped.unlink(missing_ok=True)
        return fired


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    return Scene(tmp_path)


def _filter_in_config(s: Scene, hook: str) -> None:
    git(s.ws, "config", "filter.x.clean", hook)
    (s.ws / ".gitattributes").write_text("* filter=x\n")


def _commondir(s: Scene, hook: str) -> None:
    """The issue's attack: .git/commondir at a workspace folder whose config has a filter."""
    evil = s.ws / "evil"
    evil.mkdir()
    shutil.copytree(s.ws / ".git" / "objects", evil / "objects")
    shutil.copytree(s.ws / ".git" / "refs", evil / "refs")
    (evil / "config").write_text(
        f'[core]\n\trepositoryformatversion = 0\n[filter "x"]\n\tclean = {hook}\n')
    (s.ws / ".gitattributes").write_text("* filter=x\n")
    (s.ws / ".git" / "commondir").write_text("../evil\n")


def _smudge_and_process(s: Scene, hook: str) -> None:
    git(s.ws, "config", "filter.x.smudge", hook)
    git(s.ws, "config", "filter.x.process", hook)
    (s.ws / ".gitattributes").write_text("* filter=x\n")


def _include_in_workspace(s: Scene, hook: str) -> None:
    (s.ws / "extra.cfg").write_text(f'[filter "x"]\n\tclean = {hook}\n')
    git(s.ws, "config", "include.path", "../extra.cfg")
    (s.ws / ".gitattributes").write_text("* filter=x\n")


def _include_if_outside(s: Scene, hook: str) -> None:
    (s.outside / "extra.cfg").write_text(f'[filter "x"]\n\tclean = {hook}\n')
    git(s.ws, "config", "includeIf.gitdir:/.path", str(s.outside / "extra.cfg"))
    (s.ws / ".gitattributes").write_text("* filter=x\n")


def _config_worktree(s: Scene, hook: str) -> None:
    git(s.ws, "config", "extensions.worktreeConfig", "true")
    (s.ws / ".git" / "config.worktree").write_text(f'[filter "x"]\n\tclean = {hook}\n')
    (s.ws / ".gitattributes").write_text("* filter=x\n")


def _textconv(s: Scene, hook: str) -> None:
    git(s.ws, "config", "diff.x.textconv", hook)
    (s.ws / ".gitattributes").write_text("*.txt diff=x\n")


def _diff_command(s: Scene, hook: str) -> None:
    git(s.ws, "config", "diff.x.command", hook)
    (s.ws / ".gitattributes").write_text("*.txt diff=x\n")


def _fsmonitor(s: Scene, hook: str) -> None:
    git(s.ws, "config", "core.fsmonitor", hook)


def _hooks_path(s: Scene, hook: str) -> None:
    hooks = s.ws / "myhooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text(f"#!/bin/sh\n{hook} </dev/null\n")
    (hooks / "pre-commit").chmod(0o755)
    git(s.ws, "config", "core.hooksPath", str(hooks))


def _gitdir_file(s: Scene, hook: str) -> None:
    """`.git` replaced by a file naming a git directory elsewhere in the workspace."""
    (s.ws / ".git").rename(s.ws / "realgit")
    (s.ws / ".git").write_text("gitdir: realgit\n")
    git(s.ws, "config", "filter.x.clean", hook)
    (s.ws / ".gitattributes").write_text("* filter=x\n")


ATTACKS: dict[str, tuple[Arm, tuple[str, ...], str]] = {
    # name: (arm, the plain git command it fires under, what the refusal names)
    "commondir": (_commondir, ("status",), ".git/commondir"),
    "filter-clean": (_filter_in_config, ("status",), "filter.x.clean"),
    "filter-smudge-process": (_smudge_and_process, ("add", "-A"), "filter.x.smudge"),
    "include-in-workspace": (_include_in_workspace, ("status",), "extra.cfg"),
    "include-if-outside": (_include_if_outside, ("status",), "filter.x.clean"),
    "config-worktree": (_config_worktree, ("status",), "filter.x.clean"),
    "textconv": (_textconv, ("diff",), "diff.x.textconv"),
    "diff-command": (_diff_command, ("diff",), "diff.x.command"),
    "fsmonitor": (_fsmonitor, ("status",), "core.fsmonitor"),
    "hooks-path": (_hooks_path, ("commit", "-qam", "x"), "core.hooksPath"),
    "gitdir-file": (_gitdir_file, ("status",), "realgit"),
}

TOOLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("git_status", {}),
    ("git_diff", {}),
    ("git_commit", {"message": "m", "paths": ["a.txt"]}),
)


def _arm(scene: Scene, name: str, hook: str) -> None:
    ATTACKS[name][0](scene, hook)
    # The same size as before: git must read the file (through any filter) to see the change.
    (scene.ws / "a.txt").write_text("two\n")


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_planted_program_fires_under_plain_git(scene: Scene, name: str) -> None:
    _arm(scene, name, scene.hook)
    assert scene.plain_git_fires(*ATTACKS[name][1])


@pytest.mark.parametrize("name", list(ATTACKS))
def test_io_s_git_refuses_the_repository_and_runs_nothing(scene: Scene, name: str) -> None:
    _arm(scene, name, scene.hook)
    named = ATTACKS[name][2]
    for tool, args in TOOLS:
        code, out = scene.tool(tool, args)
        assert code == 1 and out["ok"] is False, (tool, out)
        refused = out["refused"]
        assert refused["layer"] == "builtin" and refused["act"] == "exec", refused
        assert named.lower() in refused["reason"].lower(), refused["reason"]
        assert str(refused["rule"]).startswith("git:"), refused  # every refusal names its rule
        assert not scene.escaped.exists(), (tool, "the planted program ran")


def _ordinary_answers(scene: Scene) -> None:
    code, status = scene.tool("git_status", {})
    assert code == 0, status
    assert {e["path"]: e["worktree"] for e in status["data"]["entries"]}["a.txt"] == "M"
    code, diff = scene.tool("git_diff", {})
    assert code == 0 and "-one" in diff["output"] and "+two" in diff["output"], diff
    code, commit = scene.tool("git_commit", {"message": "second", "paths": ["a.txt"]})
    assert code == 0, commit
    assert git(scene.ws, "log", "-1", "--format=%s %an").strip() == "second Operator"
    assert git(scene.ws, "show", "HEAD:a.txt") == (scene.ws / "a.txt").read_text()


def test_negative_control_an_ordinary_repository_works(scene: Scene) -> None:
    (scene.ws / "a.txt").write_text("two\n")
    _ordinary_answers(scene)


def test_negative_control_settings_that_name_no_program_are_accepted(scene: Scene) -> None:
    upstream = scene.ws.parent / "up.git"
    git(scene.ws.parent, "init", "-q", "--bare", str(upstream))
    for key, value in (("remote.origin.url", str(upstream)), ("branch.main.remote", "origin"),
                       ("core.fsmonitor", "false"), ("core.hooksPath", ""),
                       ("alias.st", "status"), ("lfs.repositoryformatversion", "0"),
                       ("commit.gpgSign", "false"), ("diff.x.xfuncname", "^def")):
        git(scene.ws, "config", key, value)
    (scene.ws / ".git" / "objects" / "info" / "alternates").write_text(
        str(upstream / "objects") + "\n")  # objects from elsewhere run no program
    (scene.ws / "a.txt").write_text("two\n")
    _ordinary_answers(scene)


def test_the_hostile_settings_are_refused_only_where_git_reads_them(scene: Scene) -> None:
    # config.worktree without extensions.worktreeConfig is not read by git: no refusal.
    (scene.ws / ".git" / "config.worktree").write_text(f'[filter "x"]\n\tclean = {scene.hook}\n')
    (scene.ws / "a.txt").write_text("two\n")
    _ordinary_answers(scene)
    assert not scene.escaped.exists()


@pytest.mark.parametrize("program", ["gpg.program", "gpg.ssh.program"])
def test_a_signing_program_is_refused(scene: Scene, program: str) -> None:
    git(scene.ws, "config", "commit.gpgSign", "true")
    if program == "gpg.ssh.program":
        git(scene.ws, "config", "gpg.format", "ssh")
        git(scene.ws, "config", "user.signingKey", "key::ssh-ed25519 AAAA")
    git(scene.ws, "config", program, scene.program)
    (scene.ws / "a.txt").write_text("two\n")
    assert scene.plain_git_fires("commit", "-qam", "signed")
    code, out = scene.tool("git_commit", {"message": "m", "paths": ["a.txt"]})
    assert code == 1 and "commit.gpgsign" in out["refused"]["reason"], out
    assert not scene.escaped.exists()
    git(scene.ws, "config", "commit.gpgSign", "false")  # the program alone is refused too
    code, out = scene.tool("git_commit", {"message": "m", "paths": ["a.txt"]})
    assert code == 1 and program in out["refused"]["reason"], out
    assert not scene.escaped.exists()


def test_an_attribute_filter_with_no_driver_is_refused(scene: Scene) -> None:
    """A Git LFS repository: io's git has no driver, and would commit the wrong bytes."""
    (scene.ws / ".gitattributes").write_text("*.bin filter=lfs diff=lfs merge=lfs -text\n")
    code, out = scene.tool("git_status", {})
    assert code == 1 and ".gitattributes line 1" in out["refused"]["reason"], out
    (scene.ws / ".gitattributes").write_text("*.bin -text\n")  # negative control
    code, out = scene.tool("git_status", {})
    assert code == 0, out


def test_a_submodule_s_own_configuration_never_runs(scene: Scene) -> None:
    """A nested repository with an fsmonitor and a filter, recorded as a gitlink: plain
    git status runs them inside it; io compares submodules by commit only."""
    sub = make_repo(scene.ws / "sub")
    git(sub, "config", "core.fsmonitor", scene.hook)
    git(sub, "config", "filter.x.clean", scene.hook)
    (sub / ".gitattributes").write_text("* filter=x\n")
    (sub / "a.txt").write_text("changed inside\n")
    head = git(sub, "rev-parse", "HEAD").strip()
    git(scene.ws, "update-index", "--add", "--cacheinfo", f"160000,{head},sub")
    git(scene.ws, "commit", "-qm", "sub")
    assert scene.plain_git_fires("status")
    for tool, args in TOOLS[:2]:
        code, out = scene.tool(tool, args)
        assert code == 0, out
    assert not scene.escaped.exists()


NEWLY_PROTECTED = (
    ".git/info/attributes",
    ".git/info/exclude",
    ".git/config.worktree",
    ".git/worktrees/w/config.worktree",
    ".git/objects/info/alternates",
)
"""The .git control files the agent may no longer write (``.git/commondir``: below)."""


@pytest.fixture
def native_scene(scene: Scene) -> Scene:
    """The scene under the native sandbox, `tier = "full"` so `exec` runs unasked."""
    import sys

    from harness_core.errors import SandboxUnavailable
    from harness_core.sandbox import BackendChoice, SandboxConfig, select
    from tests.integration.sandbox.conftest import HOST_PATH, unavailable

    if not sys.platform.startswith("linux"):
        unavailable(f"the native Linux backend cannot run on {sys.platform}")
    try:
        select(SandboxConfig(backend=BackendChoice.NATIVE), env={"PATH": HOST_PATH})
    except SandboxUnavailable as exc:
        unavailable(f"native sandbox unavailable: {exc}")
    scene.config.write_text('[policy]\ntier = "full"\n[sandbox]\nbackend = "native"\n')
    return scene


@pytest.mark.parametrize("path", [*NEWLY_PROTECTED, ".git/commondir"])
def test_write_file_and_a_shell_redirect_cannot_write_the_git_control_files(
        scene: Scene, path: str) -> None:
    scene.config.write_text('[policy]\ntier = "full"\n[sandbox]\nbackend = "off"\n')
    code, out = scene.tool("write_file", {"path": path, "content": "../evil\n"})
    assert code == 1 and out["refused"]["layer"] == "builtin", out
    code, out = scene.tool("shell", {"line": f"echo ../evil > {path}"})
    assert code == 1 and out["refused"]["layer"] == "builtin", out
    assert not (scene.ws / path).exists() or path == ".git/info/exclude"
    control = scene.tool("write_file", {"path": "notes.txt", "content": "x"})
    assert control[0] == 0, control


def test_a_sandboxed_command_cannot_write_the_git_control_files(native_scene: Scene) -> None:
    scene = native_scene
    exclude = (scene.ws / ".git" / "info" / "exclude").read_bytes()
    for path in NEWLY_PROTECTED:
        line = f"mkdir -p $(dirname {path}); echo planted >> {path}"
        code, out = scene.tool("exec", {"argv": ["sh", "-c", line]})
        assert code == 0 and out["data"]["exit_status"] != 0, (path, out)
    assert (scene.ws / ".git" / "info" / "exclude").read_bytes() == exclude
    for path in NEWLY_PROTECTED[2:]:
        assert not (scene.ws / path).exists(), path  # and no placeholder is left behind
    assert not (scene.ws / ".git" / "info" / "attributes").exists()
    assert not (scene.ws / ".git" / "worktrees").exists()
    code, out = scene.tool("exec", {"argv": ["sh", "-c", "echo fine > ok.txt && git add ok.txt"]})
    assert code == 0 and out["data"]["exit_status"] == 0, out  # negative control


def test_the_issue_s_escape_from_a_sandboxed_command_is_refused(native_scene: Scene) -> None:
    """From `exec` under the native sandbox the agent writes `.git/commondir` (a missing
    one gets no placeholder: an empty one stops git) at a workspace folder whose config
    defines a filter, and `.gitattributes` selecting it. io's git refuses; the program
    the filter names never runs."""
    scene = native_scene
    plant = (
        "mkdir evil && cp -r .git/objects .git/refs evil/ && "
        f"printf '[filter \"x\"]\\n\\tclean = {scene.hook}\\n' > evil/config && "
        "echo '* filter=x' > .gitattributes && echo ../evil > .git/commondir && "
        "echo two > a.txt && "
        f"(echo pwned > '{scene.escaped}' || true)"  # the sandbox keeps it in: no file
    )
    code, out = scene.tool("exec", {"argv": ["sh", "-c", plant]})
    assert code == 0 and out["data"]["exit_status"] == 0, out
    assert not scene.escaped.exists()
    assert (scene.ws / ".git" / "commondir").read_text() == "../evil\n"
    for tool, args in TOOLS:
        code, out = scene.tool(tool, args)
        assert code == 1 and ".git/commondir" in out["refused"]["reason"], out
    assert not scene.escaped.exists()
    assert scene.plain_git_fires("status")  # the same repository, under plain git


def test_an_include_of_a_workspace_file_not_there_yet_is_refused(scene: Scene) -> None:
    """`include.path` naming a workspace file that does not exist at the check: git
    would read whatever a background command writes there before git's own read, so
    the include itself is refused, not only what the file holds now."""
    git(scene.ws, "config", "include.path", "../later.cfg")
    (scene.ws / "a.txt").write_text("two\n")
    for tool, args in TOOLS:
        code, out = scene.tool(tool, args)
        assert code == 1 and out["refused"]["layer"] == "builtin", (tool, out)
        assert "later.cfg" in out["refused"]["reason"], out["refused"]["reason"]
    git(scene.ws, "config", "--unset", "include.path")
    outside = scene.outside / "harmless.cfg"
    outside.write_text("[diff]\n\tcontext = 3\n")
    git(scene.ws, "config", "include.path", str(outside))  # negative control: outside
    _ordinary_answers(scene)


def test_a_conditional_include_not_taken_now_is_checked_too(scene: Scene) -> None:
    """`includeIf "onbranch:evil"` names a file outside the workspace holding a textconv
    program for `*.txt diff=x`: on `main` git does not read it, on
    `evil` it does. A branch can change between io's check and git's read (a background
    `git checkout -b evil`), so the file is checked whatever the condition says now."""
    cfg = scene.outside / "textconv.cfg"
    cfg.write_text(f'[diff "x"]\n\ttextconv = {scene.hook}\n')
    git(scene.ws, "config", "includeIf.onbranch:evil.path", str(cfg))
    (scene.ws / ".gitattributes").write_text("*.txt diff=x\n")
    (scene.ws / "a.txt").write_text("two\n")
    assert not scene.plain_git_fires("diff")  # on main the include is not taken
    for tool, args in TOOLS:
        code, out = scene.tool(tool, args)
        assert code == 1 and "diff.x.textconv" in out["refused"]["reason"], (tool, out)
        assert "textconv.cfg" in out["refused"]["reason"], out["refused"]["reason"]
        assert not scene.escaped.exists()
    git(scene.ws, "checkout", "-q", "-b", "evil")
    assert scene.plain_git_fires("diff")  # the trap is real
    git(scene.ws, "checkout", "-q", "main")
    # Negative control: a conditional include of harmless settings is accepted.
    cfg.write_text("[diff]\n\tcontext = 3\n")
    _ordinary_answers(scene)
    # In .git, outside the protected files, the agent could write it: refused as such.
    (scene.ws / ".git" / "mine.cfg").write_text("[diff]\n\tcontext = 3\n")
    git(scene.ws, "config", "includeIf.onbranch:other.path", "mine.cfg")
    code, out = scene.tool("git_status", {})
    assert code == 1 and ".git/mine.cfg" in out["refused"]["reason"], out
