"""docs/CONTRACT.md, "Git built-ins": git runs with no fsmonitor, no external diff and no
textconv, whatever the repository's own config asks (real git, real repositories; each
trap is first shown to fire under plain git)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.unit.git.test_git_tools import call, git, make_repo


def _trap(root: Path, name: str) -> Path:
    """A program that leaves `name.fired` beside the repository when git runs it."""
    marker = root.parent / f"{name}.fired"
    script = root.parent / f"{name}.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 0\n")
    os.chmod(script, 0o755)
    return script


def _armed_repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    git(root, "config", "diff.external", str(_trap(root, "external")))
    git(root, "config", "core.fsmonitor", str(_trap(root, "fsmonitor")))
    git(root, "config", "diff.conv.textconv", str(_trap(root, "textconv")))
    (root / ".git" / "info" / "attributes").write_text("*.txt diff=conv\n")
    (root / "a.txt").write_text("two\n")
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


def test_git_status_and_git_diff_run_none_of_them(tmp_path: Path) -> None:
    root = _armed_repo(tmp_path)
    status = call(root, "git_status", {})
    assert not status.is_error, status.output
    assert "a.txt" in status.output
    diff = call(root, "git_diff", {})
    assert not diff.is_error, diff.output
    assert "-one" in diff.output and "+two" in diff.output  # the real content, not a driver's
    staged = call(root, "git_diff", {"staged": True})
    assert not staged.is_error, staged.output
    assert _fired(root) == set()
