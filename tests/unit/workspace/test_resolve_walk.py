"""`Workspace.resolve` walks each component once: what it skips, and what it must not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_core.errors import PathEscape
from harness_core.workspace import Workspace


def test_components_below_a_missing_directory_are_kept_as_written(root: Path) -> None:
    assert Workspace(root).resolve("nope/a/../b/c.txt") == "nope/b/c.txt"


def test_components_below_a_regular_file_are_kept_as_written(root: Path) -> None:
    (root / "f").write_text("x")
    assert Workspace(root).resolve("f/x/y") == "f/x/y"


def test_links_are_followed_again_once_dotdot_climbs_above_a_missing_part(root: Path) -> None:
    (root / "d").mkdir()
    os.symlink("d", root / "l")
    assert Workspace(root).resolve("nope/deeper/../../l/x") == "d/x"
    assert Workspace(root).resolve("x", cwd="nope/..") == "x"


def test_link_out_after_climbing_above_a_missing_part_still_escapes(
    root: Path, outside: Path
) -> None:
    os.symlink(outside, root / "out")
    with pytest.raises(PathEscape):
        Workspace(root).resolve("nope/../out/canary.txt")


def test_link_out_after_climbing_above_a_file_still_escapes(root: Path, outside: Path) -> None:
    (root / "f").write_text("x")
    os.symlink(outside, root / "out")
    with pytest.raises(PathEscape):
        Workspace(root).resolve("f/../out/canary.txt")


def test_link_in_the_cwd_is_followed_before_dotdot(root: Path, outside: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    os.symlink("a/b", root / "l")
    assert Workspace(root).resolve("../x", cwd="l") == "a/x"


def test_nothing_is_remembered_between_calls(root: Path, outside: Path) -> None:
    workspace = Workspace(root)
    (root / "d").mkdir()
    assert workspace.resolve("d/x") == "d/x"
    (root / "d").rmdir()
    os.symlink(outside, root / "d")
    with pytest.raises(PathEscape):
        workspace.resolve("d/x")
