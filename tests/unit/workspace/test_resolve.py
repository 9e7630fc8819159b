"""`Workspace.resolve`: every way a path could leave the root is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_core.errors import PathEscape, WorkspaceError
from harness_core.workspace import Workspace


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("", ""),
        (".", ""),
        ("./", ""),
        ("a", "a"),
        ("./a/./b", "a/b"),
        ("a//b/", "a/b"),
        ("a/../b", "b"),
        ("a/b/../../c", "c"),
        ("a/..", ""),
        ("not/yet/there.txt", "not/yet/there.txt"),
    ],
)
def test_relative_paths_normalise(root: Path, path: str, expected: str) -> None:
    assert Workspace(root).resolve(path) == expected


@pytest.mark.parametrize("path", ["..", "../x", "a/../../x", "a/b/../../../x", "../proj/x"])
def test_dotdot_above_the_root_escapes(root: Path, path: str) -> None:
    with pytest.raises(PathEscape):
        Workspace(root).resolve(path)


def test_cwd_is_joined_and_cannot_be_climbed_out_of(root: Path) -> None:
    ws = Workspace(root)
    assert ws.resolve("x", cwd="src") == "src/x"
    assert ws.resolve("../x", cwd="src") == "x"
    assert ws.resolve("/" + str(root).lstrip("/") + "/y", cwd="src") == "y"
    assert ws.resolve("x", cwd=str(root / "lib")) == "lib/x"
    with pytest.raises(PathEscape):
        ws.resolve("../../x", cwd="src")
    with pytest.raises(PathEscape):
        ws.resolve("x", cwd="/etc")


def test_absolute_path_inside_the_root_is_accepted(root: Path) -> None:
    ws = Workspace(root)
    assert ws.resolve(str(root)) == ""
    assert ws.resolve(str(root / "src" / "a.py")) == "src/a.py"
    assert ws.resolve(str(root) + "/src/../b") == "b"
    with pytest.raises(PathEscape):
        ws.resolve(str(root) + "/src/../../proj-evil/x")


@pytest.mark.parametrize("path", ["/", "/etc/passwd", "/tmp"])
def test_absolute_path_outside_the_root_escapes(root: Path, path: str) -> None:
    with pytest.raises(PathEscape, match="outside the workspace root"):
        Workspace(root).resolve(path)


def test_prefix_sibling_is_not_inside(tmp_path: Path, root: Path) -> None:
    sibling = tmp_path / "proj-evil"
    sibling.mkdir()
    ws = Workspace(root)
    with pytest.raises(PathEscape):
        ws.resolve(str(sibling / "x"))
    with pytest.raises(PathEscape):
        ws.resolve(str(root) + "-evil/x")
    os.symlink(sibling, root / "sib")
    with pytest.raises(PathEscape):
        ws.resolve("sib/x")


def test_root_given_through_a_link_accepts_both_spellings(tmp_path: Path, root: Path) -> None:
    alias = tmp_path / "alias"
    os.symlink(root, alias)
    ws = Workspace(alias)
    assert ws.root == root.resolve()
    assert ws.resolve(str(alias / "a")) == "a"
    assert ws.resolve(str(root / "a")) == "a"


@pytest.mark.skipif(not os.path.exists("/proc/self/root"), reason="needs /proc")
def test_proc_magic_links_escape(root: Path) -> None:
    ws = Workspace(root)
    with pytest.raises(PathEscape):
        ws.resolve("/proc/self/root/etc/passwd")
    with pytest.raises(PathEscape):
        ws.resolve("/proc/self/root" + str(root) + "/a")  # strict: not spelled under the root
    os.symlink("/proc/self/root", root / "magic")
    with pytest.raises(PathEscape):
        ws.resolve("magic/etc/passwd")
    os.symlink("/proc/self/cwd", root / "here")
    with pytest.raises(PathEscape):
        ws.resolve("here")


def test_link_inside_pointing_inside_is_followed(root: Path) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    os.symlink("src", root / "rel")
    os.symlink(root / "src" / "pkg", root / "abs")
    os.symlink("..", root / "src" / "pkg" / "up")
    ws = Workspace(root)
    assert ws.resolve("rel/pkg/a.py") == "src/pkg/a.py"
    assert ws.resolve("abs/a.py") == "src/pkg/a.py"
    assert ws.resolve("src/pkg/up/pkg/up") == "src"
    assert ws.resolve("abs/../b") == "src/b"  # '..' applies to the link's target, as in POSIX


def test_link_pointing_outside_escapes(root: Path, outside: Path) -> None:
    os.symlink(outside / "canary.txt", root / "file-out")
    os.symlink(outside, root / "dir-out")
    os.symlink("../outside", root / "rel-out")
    ws = Workspace(root)
    for path in ("file-out", "dir-out/canary.txt", "dir-out/new.txt", "rel-out/canary.txt"):
        with pytest.raises(PathEscape, match="through link"):
            ws.resolve(path)


def test_symlinked_parent_directory_pointing_out_escapes(root: Path, outside: Path) -> None:
    (root / "a").mkdir()
    os.symlink(outside, root / "a" / "b")
    ws = Workspace(root)
    with pytest.raises(PathEscape):
        ws.resolve("a/b/c/d.txt")
    with pytest.raises(PathEscape):
        ws.write_bytes("a/b/new.txt", b"x")
    assert sorted(os.listdir(outside)) == ["canary.txt"]


def test_link_loop_is_an_error_not_a_hang(root: Path) -> None:
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    with pytest.raises(WorkspaceError, match="too many symbolic links"):
        Workspace(root).resolve("a/x")


def test_nul_byte_is_refused(root: Path) -> None:
    with pytest.raises(WorkspaceError, match="NUL"):
        Workspace(root).resolve("a\0b")


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="not an existing directory"):
        Workspace(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceError):
        Workspace(tmp_path / "file")


def test_abspath_resolves_first(root: Path) -> None:
    ws = Workspace(root)
    assert ws.abspath("a/../b") == root.resolve() / "b"
    assert ws.abspath("") == root.resolve()
    with pytest.raises(PathEscape):
        ws.abspath("../x")
