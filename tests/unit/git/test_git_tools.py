"""The git built-ins against real git repositories: status parsed from porcelain v2 -z
(a newline in a name, bytes that are not UTF-8), diffs bounded with the cut stated,
commits through the policy with hooks never run and the Io-Call trailer recorded."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    Gate,
    Policy,
    SystemClock,
    Toolbox,
    ToolCall,
    ToolContext,
    ToolOutcome,
    Workspace,
    sandbox_launcher,
    select_sandbox,
)
from harness_core.sandbox import BackendChoice, SandboxConfig, SandboxSpec
from harness_core.tools import DEFAULT_OUTPUT_CAP
from harness_core.tools._git import GitSettings


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def make_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Operator")
    git(root, "config", "user.email", "operator@example.com")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first")
    return root


def call(root: Path, name: str, args: dict[str, Any], *, policy: Policy | None = None,
         call_ref: str = "", settings: GitSettings | None = None,
         resumed: bool = False) -> ToolOutcome:
    ws = Workspace(root)
    selected = select_sandbox(SandboxConfig(backend=BackendChoice.OFF), env={})
    ctx = ToolContext(
        workspace=ws,
        gate=Gate(policy or Policy(tier="workspace-write"), store=None, run_id="",
                  approver=None, emit=lambda e: None),
        launcher=sandbox_launcher(selected, SandboxSpec(workdir=root)), clock=SystemClock(),
        call_ref=call_ref)
    ctx.services.git = settings or GitSettings()
    return Toolbox.builtins().call(ToolCall("c1", name, args), ctx, resumed=resumed)


def test_status_reports_branch_entries_and_a_newline_in_a_name_unambiguously(
        tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    (root / "a.txt").write_text("two\n")
    (root / "new\nline.txt").write_text("x")
    (root / "plain.txt").write_text("y")
    git(root, "add", "plain.txt")
    out = call(root, "git_status", {})
    assert not out.is_error, out.output
    assert out.data.branch == "main" and out.data.upstream is None
    entries = {e["path"]: e for e in out.data.entries}
    assert entries["new\nline.txt"]["kind"] == "untracked"
    assert entries["a.txt"]["worktree"] == "M" and entries["plain.txt"]["index"] == "A"
    lines = out.output.splitlines()
    assert lines[0] == "on branch main"
    assert '?? untracked "new\\nline.txt"' in lines  # one entry, one line
    assert len(lines) == 4


@pytest.mark.skipif(os.uname().sysname == "Darwin", reason="macOS refuses non-UTF-8 names")
def test_status_shows_a_name_that_is_not_utf8_losslessly(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    with open(os.path.join(os.fsencode(root), b"caf\xe9.txt"), "wb") as handle:
        handle.write(b"x")
    out = call(root, "git_status", {})
    entry = out.data.entries[0]
    assert entry["path"] == "caf\\xe9.txt" and entry["path_not_utf8"] is True
    assert bytes.fromhex(entry["path_bytes"]) == b"caf\xe9.txt"
    assert "[not UTF-8]" in out.output and "\\xe9" in out.output


def test_status_reports_ahead_and_behind_its_upstream(tmp_path: Path) -> None:
    upstream = make_repo(tmp_path / "up")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(upstream), str(clone)], check=True)
    git(clone, "config", "user.name", "C")
    git(clone, "config", "user.email", "c@example.com")
    (clone / "b.txt").write_text("b")
    git(clone, "add", "b.txt")
    git(clone, "commit", "-q", "-m", "local")
    (upstream / "c.txt").write_text("c")
    git(upstream, "add", "c.txt")
    git(upstream, "commit", "-q", "-m", "remote")
    git(clone, "fetch", "-q")
    out = call(clone, "git_status", {})
    assert (out.data.upstream, out.data.ahead, out.data.behind) == ("origin/main", 1, 1)
    assert "ahead 1, behind 1" in out.output


def test_status_outside_a_repository_is_an_error_observation(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    out = call(tmp_path / "plain", "git_status", {})
    assert out.is_error and "not a git repository" in out.output


def test_diff_worktree_staged_and_against_a_ref(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    (root / "a.txt").write_text("two\n")
    worktree = call(root, "git_diff", {})
    assert "-one" in worktree.output and "+two" in worktree.output
    assert call(root, "git_diff", {"staged": True}).output.startswith("(no differences)")
    git(root, "add", "a.txt")
    assert "+two" in call(root, "git_diff", {"staged": True}).output
    assert "+two" in call(root, "git_diff", {"ref": "HEAD"}).output
    bad = call(root, "git_diff", {"ref": "--output=/tmp/x"})
    assert bad.is_error and "not a ref" in bad.output


def test_a_long_diff_is_cut_and_the_cut_is_stated(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    for i in range(5):
        (root / f"f{i}.txt").write_text("x\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "files")
    for i in range(5):
        (root / f"f{i}.txt").write_text("line\n" * 5000)
    out = call(root, "git_diff", {})
    assert out.data.truncated > 0 and out.data.total_bytes > DEFAULT_OUTPUT_CAP
    assert f"[diff cut at {DEFAULT_OUTPUT_CAP} of" in out.output and "5 file(s) differ" in out.output


def test_diff_leaves_out_files_the_policy_refuses_reading(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    (root / "secret.env").write_text("k=1\n")
    git(root, "add", "secret.env")
    git(root, "commit", "-q", "-m", "s")
    (root / "secret.env").write_text("k=2\n")
    (root / "a.txt").write_text("two\n")
    policy = Policy.from_lists(tier="workspace-write", deny_read=["*.env"])
    out = call(root, "git_diff", {}, policy=policy)
    assert "k=2" not in out.output and "+two" in out.output
    assert out.data.skipped == ("secret.env",) and "policy refuses reading secret.env" in out.output


def test_commit_stages_paths_carries_the_trailer_and_never_runs_hooks(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch hook-ran\nexit 1\n")
    hook.chmod(0o755)
    (root / "b.txt").write_text("b\n")
    out = call(root, "git_commit", {"message": "add b", "paths": ["b.txt"]},
               call_ref="run1/3/0")
    assert not out.is_error, out.output
    assert not (root / "hook-ran").exists()
    body = git(root, "log", "-1", "--format=%B")
    assert body.startswith("add b") and "Io-Call: run1/3/0" in body
    assert git(root, "log", "-1", "--format=%an <%ae>").strip() == "Operator <operator@example.com>"
    assert out.data.files == ("b.txt",) and out.data.commit == git(root, "rev-parse", "HEAD").strip()


def test_commit_author_comes_from_the_git_table(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    (root / "b.txt").write_text("b\n")
    call(root, "git_commit", {"message": "b", "paths": ["b.txt"]},
         settings=GitSettings(author_name="io agent", author_email="agent@example.com"))
    assert git(root, "log", "-1", "--format=%an <%ae>|%cn").strip() == \
        "io agent <agent@example.com>|io agent"


def test_commit_is_a_write_of_git_through_the_policy(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    (root / "b.txt").write_text("b\n")
    policy = Policy.from_lists(tier="workspace-write", deny_write=[".git/**"])
    out = call(root, "git_commit", {"message": "b", "paths": ["b.txt"]}, policy=policy)
    assert out.is_error and out.refused is not None and out.refused.target == "write .git"
    read_only = call(root, "git_commit", {"message": "b", "paths": ["b.txt"]},
                     policy=Policy.from_lists(tier="read-only", approval="deny"))
    assert read_only.refused is not None
    denied = call(root, "git_commit", {"message": "b", "paths": ["b.txt"]},
                  policy=Policy.from_lists(tier="workspace-write", deny_read=["b.txt"]))
    assert denied.refused is not None and denied.refused.target == "read b.txt"
    assert git(root, "rev-list", "--count", "HEAD").strip() == "1"
    # every other tool still cannot touch git's hooks or config
    hook = call(root, "write_file", {"path": ".git/hooks/post-commit", "content": "x"})
    assert hook.refused is not None and hook.refused.layer == "builtin"


def test_nothing_to_commit_is_an_error_observation(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    out = call(root, "git_commit", {"message": "nothing", "paths": ["a.txt"]})
    assert out.is_error and "nothing to commit" in out.output


def test_a_resumed_commit_whose_trailer_landed_is_reported_not_repeated(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    (root / "b.txt").write_text("b\n")
    first = call(root, "git_commit", {"message": "b", "paths": ["b.txt"]}, call_ref="r/1/0")
    (root / "b.txt").write_text("changed again\n")
    again = call(root, "git_commit", {"message": "b", "paths": ["b.txt"]}, call_ref="r/1/0",
                 resumed=True)
    assert again.data.recovered is True and again.data.commit == first.data.commit
    assert "not committed again" in again.output
    assert git(root, "rev-list", "--count", "HEAD").strip() == "2"
    fresh = call(root, "git_commit", {"message": "b2", "paths": ["b.txt"]}, call_ref="r/2/0",
                 resumed=True)
    assert not fresh.is_error and fresh.data.recovered is None
    assert git(root, "rev-list", "--count", "HEAD").strip() == "3"


def test_git_tools_are_not_exec_acts(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r")
    (root / "b.txt").write_text("b\n")
    policy = Policy.from_lists(tier="workspace-write", deny_exec=["git*"], approval="deny")
    assert not call(root, "git_status", {}, policy=policy).is_error
    assert not call(root, "git_commit", {"message": "b", "paths": ["b.txt"]},
                    policy=policy).is_error
    refused = call(root, "exec", {"argv": ["git", "status"]}, policy=policy)
    assert refused.refused is not None


@pytest.mark.parametrize(("toml", "expected"), [
    ('author = "io agent <agent@example.com>"', ("io agent", "agent@example.com")),
    ('author = "io agent <agent@example.com>"\nauthor_email = "other@example.com"',
     ("io agent", "other@example.com")),
    ('author_name = "N"\nauthor_email = "e@example.com"', ("N", "e@example.com")),
    ("", (None, None)),
])
def test_the_git_table_sets_the_identity(tmp_path: Path, toml: str,
                                         expected: tuple[str | None, str | None]) -> None:
    from harness_core import load_config

    (tmp_path / "io.toml").write_text(f"[git]\n{toml}\n")
    cfg = load_config(tmp_path, env={"HOME": str(tmp_path)})
    assert (cfg.git.author_name, cfg.git.author_email) == expected


def test_a_malformed_author_is_a_config_error(tmp_path: Path) -> None:
    from harness_core import ConfigError, load_config

    (tmp_path / "io.toml").write_text('[git]\nauthor = "just a name"\n')
    with pytest.raises(ConfigError, match="git.author"):
        load_config(tmp_path, env={"HOME": str(tmp_path)})
