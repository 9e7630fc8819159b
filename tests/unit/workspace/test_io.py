"""File I/O through the workspace: reads, atomic writes, listings, walks, fingerprints.

Most tests run twice (fixture `ws`): with descriptor walking and with the path fallback
used where ``dir_fd`` is unsupported.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness_core.errors import PathEscape, WorkspaceError
from harness_core.workspace import DirEntry, Workspace

from .conftest import CANARY


def test_write_then_read_round_trips_and_creates_parents(ws: Workspace, root: Path) -> None:
    ws.write_bytes("a/b/c.bin", b"\x00\x01data")
    assert (root / "a" / "b" / "c.bin").read_bytes() == b"\x00\x01data"
    assert ws.read_bytes("a/b/c.bin") == b"\x00\x01data"
    ws.write_text("a/t.txt", "héllo\r\n")
    assert ws.read_text("./a/x/../t.txt") == "héllo\r\n"


def test_write_replaces_and_keeps_permission_bits(ws: Workspace, root: Path) -> None:
    script = root / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    ws.write_text("run.sh", "new")
    assert script.read_text() == "new"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750


def test_write_leaves_no_temporary_files(ws: Workspace) -> None:
    for i in range(5):
        ws.write_text("f.txt", str(i))
    assert ws.list_names("") == ["f.txt"]


def test_failed_write_keeps_the_old_content(root: Path) -> None:
    (root / "f.txt").write_bytes(b"old content")
    # A real failure: the file-size limit makes the kernel refuse the write (EFBIG).
    code = textwrap.dedent(
        """
        import resource, signal, sys
        from harness_core.errors import WorkspaceError
        from harness_core.workspace import Workspace
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            Workspace(sys.argv[1]).write_bytes("f.txt", b"x" * 100_000)
        except WorkspaceError as exc:
            print(exc)
            sys.exit(0)
        sys.exit(3)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "file too large" in done.stdout
    assert (root / "f.txt").read_bytes() == b"old content"
    assert os.listdir(root) == ["f.txt"]


def test_failed_write_of_a_wrong_type_leaves_nothing_behind(ws: Workspace, root: Path) -> None:
    (root / "f.txt").write_bytes(b"old")
    with pytest.raises(TypeError):
        ws.write_bytes("f.txt", "not bytes")  # type: ignore[arg-type]
    assert os.listdir(root) == ["f.txt"]
    assert (root / "f.txt").read_bytes() == b"old"


def test_hard_link_is_replaced_not_written_through(
    ws: Workspace, root: Path, outside: Path
) -> None:
    os.link(outside / "canary.txt", root / "linked.txt")
    assert ws.read_bytes("linked.txt") == CANARY  # reading what a hard link names is allowed
    ws.write_bytes("linked.txt", b"mine")
    assert (outside / "canary.txt").read_bytes() == CANARY
    assert (root / "linked.txt").read_bytes() == b"mine"


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (lambda ws: ws.read_bytes("missing.txt"), "no such file"),
        (lambda ws: ws.read_bytes("dir"), "not a regular file|is a directory"),
        (lambda ws: ws.read_bytes(""), "workspace root"),
        (lambda ws: ws.write_bytes("", b""), "workspace root"),
        (lambda ws: ws.write_bytes("dir", b"x"), "is a directory"),
        (lambda ws: ws.write_bytes("file.txt/x", b"x"), "not a directory"),
        (lambda ws: ws.read_text("bad.txt"), "not UTF-8"),
        (lambda ws: ws.list_names("file.txt"), "not a directory"),
        (lambda ws: ws.list_names("missing"), "no such file"),
        (lambda ws: ws.remove("dir"), "is a directory"),
        (lambda ws: ws.remove("missing"), "no such file"),
        (lambda ws: ws.make_dir("file.txt/sub"), "not a directory"),
    ],
)
def test_failures_are_workspace_errors_with_a_clear_message(
    ws: Workspace, root: Path, action: object, message: str
) -> None:
    (root / "dir").mkdir()
    (root / "file.txt").write_text("x")
    (root / "bad.txt").write_bytes(b"\xff\xfe\xfa")
    with pytest.raises(WorkspaceError, match=message) as caught:
        action(ws)  # type: ignore[operator]
    assert not isinstance(caught.value, PathEscape)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_reading_a_fifo_is_refused_instead_of_hanging(ws: Workspace, root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(WorkspaceError, match="not a regular file"):
        ws.read_bytes("pipe")


def test_queries(ws: Workspace, root: Path, outside: Path) -> None:
    (root / "d").mkdir()
    (root / "d" / "f.txt").write_text("x")
    os.symlink("d/f.txt", root / "inner-link")
    os.symlink(outside, root / "out-link")
    assert (ws.exists("d"), ws.is_dir("d"), ws.is_file("d")) == (True, True, False)
    assert (ws.exists("d/f.txt"), ws.is_dir("d/f.txt"), ws.is_file("d/f.txt")) == (
        True,
        False,
        True,
    )
    assert ws.is_file("inner-link")  # resolved to d/f.txt
    assert (ws.exists("nope"), ws.is_file("nope"), ws.is_dir("nope")) == (False, False, False)
    assert not ws.exists("d/f.txt/below")
    assert ws.exists("") and ws.is_dir("")
    with pytest.raises(PathEscape):
        ws.exists("out-link")
    with pytest.raises(PathEscape):
        ws.is_file("../outside/canary.txt")


def test_listings_describe_links_without_following_them(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "sub").mkdir()
    (root / "b.txt").write_bytes(b"12345")
    os.symlink(outside, root / "a-link")
    assert ws.list_names("") == ["a-link", "b.txt", "sub"]
    entries = ws.list_dir("")
    assert entries[1:] == [
        DirEntry("b.txt", False, False, 5),
        DirEntry("sub", True, False, entries[2].size),
    ]
    assert entries[0].name == "a-link" and entries[0].is_symlink and not entries[0].is_dir


def test_walk_files_skips_git_and_links(ws: Workspace, root: Path, outside: Path) -> None:
    for rel in ("a.py", "pkg/b.py", "pkg/deep/c.py", ".git/HEAD", "pkg/.git/x", ".github/w.yml"):
        ws.write_text(rel, "x")
    os.symlink(outside, root / "pkg" / "out")
    os.symlink("a.py", root / "alias.py")
    assert sorted(ws.walk_files()) == [".github/w.yml", "a.py", "pkg/b.py", "pkg/deep/c.py"]
    assert sorted(ws.walk_files("pkg")) == ["pkg/b.py", "pkg/deep/c.py"]
    assert len(list(ws.walk_files(max_files=2))) == 2
    with pytest.raises(PathEscape):
        list(ws.walk_files("pkg/out"))


def test_fingerprint_changes_with_the_tree_and_ignores_git(ws: Workspace, root: Path) -> None:
    ws.write_text("a.txt", "one")
    first = ws.fingerprint()
    assert ws.fingerprint() == first
    ws.write_text(".git/index", "changed")
    assert ws.fingerprint() == first
    ws.write_text("a.txt", "two")  # same size; a new inode from the atomic replace
    second = ws.fingerprint()
    assert second != first
    os.utime(root / "a.txt", ns=(1, 1))
    third = ws.fingerprint()
    assert third != second
    ws.make_dir("empty/dir")
    assert ws.fingerprint() != third


def test_remove_and_make_dir(ws: Workspace, root: Path) -> None:
    ws.make_dir("x/y/z")
    ws.make_dir("x/y")  # existing is fine
    assert (root / "x" / "y" / "z").is_dir()
    ws.write_text("x/f.txt", "x")
    ws.remove("x/f.txt")
    assert not (root / "x" / "f.txt").exists()
