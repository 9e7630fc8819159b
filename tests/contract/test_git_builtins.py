"""docs/CONTRACT.md, "Git built-ins": a repository whose configuration names a program
(an external diff, an fsmonitor, a textconv) is refused and none of them runs; and git
runs with every such setting pinned off, so one written after the check runs nothing
either (real git, real repositories; each trap is first shown to fire under plain git)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness_core.tools._git import GitSettings
from harness_core.tools._git_repo import open_repository, run_git
from tests.unit.git.test_git_tools import call, git, make_repo


def _trap(root: Path, name: str) -> Path:
    """A program that leaves `name.fired` beside the repository when git runs it."""
    marker = root.parent / f"{name}.fired"
    script = root.parent / f"{name}.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 0\n")
    os.chmod(script, 0o755)
    return script


def _arm(root: Path) -> None:
    git(root, "config", "diff.external", str(_trap(root, "external")))
    git(root, "config", "core.fsmonitor", str(_trap(root, "fsmonitor")))
    git(root, "config", "diff.conv.textconv", str(_trap(root, "textconv")))
    git(root, "config", "core.pager", str(_trap(root, "pager")))
    git(root, "config", "log.showSignature", "true")
    git(root, "config", "gpg.program", str(_trap(root, "gpg")))
    (root / ".git" / "info" / "attributes").write_text("*.txt diff=conv\n")
    (root / "a.txt").write_text("two\n")


def _armed_repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    _arm(root)
    return root


def _fired(root: Path) -> set[str]:
    return {p.name.removesuffix(".fired") for p in root.parent.glob("*.fired")}


def test_the_traps_fire_under_plain_git(tmp_path: Path) -> None:
    root = _armed_repo(tmp_path)
    subprocess.run(["git", "status"], cwd=root, capture_output=True, check=False)
    subprocess.run(["git", "diff"], cwd=root, capture_output=True, check=False)
    subprocess.run(["git", "diff", "--no-ext-diff"], cwd=root, capture_output=True,
                   check=False)
    assert _fired(root) == {"external", "fsmonitor", "textconv"}


def test_git_status_and_git_diff_refuse_the_repository_and_run_none_of_them(
        tmp_path: Path) -> None:
    root = _armed_repo(tmp_path)
    for tool, args in (("git_status", {}), ("git_diff", {}), ("git_diff", {"staged": True})):
        out = call(root, tool, args)
        assert out.is_error and out.refused is not None, out.output
        reason = out.refused.reason
        assert out.refused.layer == "builtin" and "diff.external" in reason
        assert "core.fsmonitor" in reason and "diff.conv.textconv" in reason
    assert _fired(root) == set()


def test_settings_written_after_the_check_still_run_nothing(tmp_path: Path) -> None:
    """The check and git's own read are two moments; what git runs is pinned on its
    command line, so a setting that appears between them is not obeyed."""
    root = make_repo(tmp_path / "repo")
    with open_repository(str(root), GitSettings()) as repo:
        _arm(root)
        (root / "hooks").mkdir()
        (root / "hooks" / "pre-commit").write_text(f"#!/bin/sh\n{_trap(root, 'hook')}\n")
        (root / "hooks" / "pre-commit").chmod(0o755)
        git(root, "config", "core.hooksPath", str(root / "hooks"))
        git(root, "config", "commit.gpgSign", "true")
        status = run_git(repo, ["status", "--porcelain=v2", "-z"])
        assert b"a.txt" in status.stdout
        diff = run_git(repo, ["diff", "--no-ext-diff", "--no-textconv"]).stdout.decode()
        assert "-one" in diff and "+two" in diff
        run_git(repo, ["add", "a.txt"])
        run_git(repo, ["commit", "-q", "-m", "pinned"])
        assert "pinned" in run_git(repo, ["log", "-1"]).stdout.decode()
    assert _fired(root) == set()


def test_a_commit_moved_out_of_head_s_history_is_made_again_on_resume(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    (root / "b.txt").write_text("b\n")
    first = call(root, "git_commit", {"message": "b", "paths": ["b.txt"]}, call_ref="r/1/0")
    assert not first.is_error, first.output
    git(root, "reset", "-q", "--hard", "HEAD~1")  # the operator moves it out of HEAD
    (root / "b.txt").write_text("b, written again\n")
    again = call(root, "git_commit", {"message": "b", "paths": ["b.txt"]}, call_ref="r/1/0",
                 resumed=True)
    assert not again.is_error and again.data.recovered is None, again.output
    assert again.data.commit != first.data.commit
    assert "Io-Call: r/1/0" in git(root, "log", "-1", "--format=%B")
    assert git(root, "rev-list", "--count", "HEAD").strip() == "2"


def test_the_trailer_is_searched_only_history_depth_commits_deep(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    (root / "b.txt").write_text("b\n")
    first = call(root, "git_commit", {"message": "b", "paths": ["b.txt"]}, call_ref="r/1/0")
    for i in range(3):
        git(root, "commit", "-q", "--allow-empty", "-m", f"later {i}")
    shallow = GitSettings(history_depth=3)
    again = call(root, "git_commit", {"message": "b", "paths": ["b.txt"]}, call_ref="r/1/0",
                 resumed=True, settings=shallow)
    assert again.data is None or again.data.recovered is None  # four commits back: beyond a depth of 3
    deep = call(root, "git_commit", {"message": "b", "paths": ["b.txt"]}, call_ref="r/1/0",
                resumed=True, settings=GitSettings(history_depth=10))
    assert deep.data.recovered is True and deep.data.commit == first.data.commit
