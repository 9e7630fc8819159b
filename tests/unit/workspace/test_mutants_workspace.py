"""Pins written to kill the mutants mutmut left alive in workspace.py (bench/mutation.py).

Real files under tmp_path, both walking modes (fixture `ws`: descriptors, and the path
fallback used where ``dir_fd`` is unsupported). Messages are compared whole: they are
the error observations the model reads.
"""

from __future__ import annotations

import errno
import hashlib
import inspect
import os
import stat
from pathlib import Path

import pytest

from harness_core.errors import WorkspaceError
from harness_core.workspace import Workspace, _Dir

LONG = "n" * 300  # longer than any file name may be (255 bytes): ENAMETOOLONG
TOO_LONG = "File name too long"


def message(call: object) -> str:
    with pytest.raises(WorkspaceError) as caught:
        call()  # type: ignore[operator]
    return caught.value.message


def test_each_operation_names_itself_and_the_path(ws: Workspace, root: Path) -> None:
    (root / "dir").mkdir()
    assert message(lambda: ws.read_bytes("missing")) == (
        "cannot read 'missing': no such file or directory")
    assert message(lambda: ws.read_bytes(LONG)) == f"cannot read '{LONG}': {TOO_LONG}"
    assert message(lambda: ws.remove("dir/missing")) == (
        "cannot remove 'dir/missing': no such file or directory")
    assert message(lambda: ws.remove("dir")) == "cannot remove 'dir': is a directory"
    assert message(lambda: ws.make_dir(f"dir/{LONG}")) == (
        f"cannot create directory 'dir/{LONG}': {TOO_LONG}")
    assert message(lambda: ws.exists(f"dir/{LONG}")) == (
        f"cannot inspect 'dir/{LONG}': {TOO_LONG}")
    assert message(lambda: ws.list_dir("missing")) == (
        "cannot list 'missing': no such file or directory")
    assert message(lambda: list(ws.walk_files("missing"))) == (
        "cannot list 'missing': no such file or directory")
    assert message(lambda: ws.write_bytes(f"dir/{LONG}", b"x")) == (
        f"cannot write 'dir/{LONG}': {TOO_LONG}")


def test_a_file_of_exactly_the_limit_is_read(ws: Workspace, root: Path) -> None:
    (root / "f").write_bytes(b"x" * 10)
    assert ws.read_bytes("f", max_bytes=10) == b"x" * 10
    assert message(lambda: ws.read_bytes("f", max_bytes=9)) == (
        "cannot read 'f': it is 10 bytes, over the 9-byte limit of one read")


def test_reads_leave_no_descriptor_open(ws: Workspace, root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_bytes(b"data")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        assert ws.read_bytes("a/b/f") == b"data"
        ws.list_dir("a/b")
        ws.exists("a/b/f")
    assert len(os.listdir("/proc/self/fd")) == before


def test_deep_paths_walk_in_both_modes(ws: Workspace, root: Path) -> None:
    ws.write_text("a/b/c/d.txt", "deep")
    assert ws.read_text("a/b/c/d.txt") == "deep"
    assert ws.list_names("a/b/c") == ["d.txt"]
    assert list(ws.walk_files("a")) == ["a/b/c/d.txt"]
    ws.remove("a/b/c/d.txt")
    assert not ws.exists("a/b/c/d.txt")


def test_made_directories_get_the_usual_mode(ws: Workspace, root: Path) -> None:
    umask = os.umask(0o022)
    try:
        ws.make_dir("m/n")
        ws.write_text("w/x/f.txt", "x")
    finally:
        os.umask(umask)
    for made in ("m", "m/n", "w", "w/x"):
        assert stat.S_IMODE((root / made).stat().st_mode) == 0o755, made


def test_abspath_keeps_spaces_inside_names(root: Path) -> None:
    ws = Workspace(root)
    assert ws.abspath("dir with space/f g") == root / "dir with space" / "f g"
    assert ws.abspath("") == root


def test_the_default_walk_cap() -> None:
    assert inspect.signature(Workspace.walk_files).parameters["max_files"].default == 100_000


# -- the listing is of the directory that was opened, never of a link swapped in -----


def test_a_listing_reads_the_opened_directory_not_a_link_swapped_in(
    root: Path, outside: Path
) -> None:
    ws = Workspace(root)
    (root / "d").mkdir()
    (root / "d" / "mine.txt").write_text("x")
    with ws._opened_dir("d") as directory:
        os.rename(root / "d", root / "moved")
        os.symlink(outside, root / "d")
        names = [name for name, _ in directory.entries()]
    assert names == ["mine.txt"]


# -- the path fallback refuses a link by name ---------------------------------------


def test_the_path_fallback_refuses_a_link_with_eloop(root: Path) -> None:
    (root / "target").write_text("x")
    os.symlink("target", root / "link")
    directory = _Dir(None, str(root))
    with pytest.raises(OSError) as caught:
        directory.open("link", os.O_RDONLY)
    assert caught.value.errno == errno.ELOOP
    assert caught.value.strerror == os.strerror(errno.ELOOP)
    assert caught.value.filename == str(root / "link")
    assert type(caught.value) is OSError


def test_the_path_fallback_reports_a_too_long_tree(root: Path) -> None:
    # Paths over PATH_MAX (4096) cannot be opened by name; descriptors can walk them.
    part = "p" * 200
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(25):
            os.mkdir(part, dir_fd=fd)
            child = os.open(part, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("x")
    finally:
        os.close(fd)
    deep = "/".join([part] * 25) + "/f.txt"
    assert list(Workspace(root).walk_files()) == [deep]
    fallback = Workspace(root)
    fallback._use_dir_fd = False
    said = message(lambda: list(fallback.walk_files()))
    assert said.startswith("cannot list 'ppp")
    assert said.endswith(f": {TOO_LONG}")


# -- the fingerprint ------------------------------------------------------------------


def test_fingerprint_is_sixteen_bytes_of_hex(ws: Workspace) -> None:
    print_ = ws.fingerprint()
    assert len(print_) == 32
    int(print_, 16)


def test_fingerprint_sees_files_after_a_directory(ws: Workspace, root: Path) -> None:
    (root / "a").mkdir()
    (root / "b").write_text("x")
    before = ws.fingerprint()
    (root / "b").write_text("xy")
    assert ws.fingerprint() != before


def test_fingerprint_takes_names_that_are_not_utf8(ws: Workspace, root: Path) -> None:
    os.mkdir(os.path.join(os.fsencode(root), b"dir-\xff"))
    with open(os.path.join(os.fsencode(root), b"file-\xfe"), "wb") as handle:
        handle.write(b"x")
    before = ws.fingerprint()
    with open(os.path.join(os.fsencode(root), b"file-\xfe"), "ab") as handle:
        handle.write(b"y")
    assert ws.fingerprint() != before


def test_fingerprint_is_the_documented_digest(root: Path) -> None:
    (root / "d").mkdir()
    (root / "d" / "f").write_text("x")
    expected = hashlib.blake2b(digest_size=16)
    for rel in ("d", "d/f"):
        info = os.lstat(root / rel)
        kind = stat.S_IFMT(info.st_mode)
        if stat.S_ISDIR(info.st_mode):
            expected.update(f"{kind}\0{rel}\n".encode())
        else:
            expected.update(
                f"{kind}\0{rel}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    assert Workspace(root).fingerprint() == expected.hexdigest()


# -- modes of written files -----------------------------------------------------------


def test_a_new_file_gets_the_usual_mode_and_a_fifo_is_replaced_plainly(
    ws: Workspace, root: Path
) -> None:
    os.mkfifo(root / "pipe", 0o600)
    umask = os.umask(0o022)
    try:
        ws.write_text("new.txt", "x")
        ws.write_text("pipe", "now a file")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((root / "new.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((root / "pipe").stat().st_mode) == 0o644
    assert (root / "pipe").read_text() == "now a file"


def test_a_short_write_is_an_error_not_a_truncated_file(root: Path) -> None:
    import resource
    import signal

    ws = Workspace(root)
    (root / "f.txt").write_bytes(b"old content")
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
    try:
        # The kernel writes the first 4096 bytes, then refuses the rest (EFBIG).
        said = message(lambda: ws.write_bytes("f.txt", b"x" * 100_000))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert said == "cannot write 'f.txt': file too large"
    assert (root / "f.txt").read_bytes() == b"old content"
    assert ws.list_names("") == ["f.txt"]


# -- escapes name the path and the way out ----------------------------------------------


def test_escape_messages_are_whole(root: Path, outside: Path) -> None:
    from harness_core.errors import PathEscape

    ws = Workspace(root)
    os.symlink(outside, root / "out")
    with pytest.raises(PathEscape) as caught:
        ws.resolve("/etc/passwd")
    assert (caught.value.path, caught.value.reason) == (
        "/etc/passwd", "is an absolute path outside the workspace root")
    assert caught.value.message == (
        "path '/etc/passwd' is an absolute path outside the workspace root")
    with pytest.raises(PathEscape) as caught:
        ws.resolve("out/canary.txt")
    assert caught.value.path == "out/canary.txt"
    assert caught.value.reason == "leads outside the workspace root through link 'out'"


def test_an_absolute_path_differing_in_case_from_the_root_is_outside(root: Path) -> None:
    from harness_core.errors import PathEscape

    ws = Workspace(root)
    shouted = str(root.parent / root.name.upper() / "f.txt")
    with pytest.raises(PathEscape):
        ws.resolve(shouted)
    assert ws.resolve(str(root / "f.txt")) == "f.txt"


def test_forty_links_are_followed_and_the_forty_first_is_refused(root: Path) -> None:
    (root / "target").write_text("x")
    previous = "target"
    for n in range(41):
        os.symlink(previous, root / f"l{n}")
        previous = f"l{n}"
    ws = Workspace(root)
    assert ws.resolve("l39") == "target"  # forty links
    assert message(lambda: ws.resolve("l40")) == (
        "path 'l40' goes through too many symbolic links")


# -- the directory handle -------------------------------------------------------------


def test_a_link_met_by_descriptor_is_eloop_with_its_name(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "link")
    (root / "file").write_text("x")
    directory = _Dir(os.open(root, os.O_RDONLY), str(root))
    try:
        with pytest.raises(OSError) as caught:
            directory.child("link", create=False)
        assert (caught.value.errno, caught.value.strerror, caught.value.filename) == (
            errno.ELOOP, os.strerror(errno.ELOOP), "link")
        with pytest.raises(NotADirectoryError):
            directory.child("file", create=False)
    finally:
        directory.close()
        directory.close()  # closing twice is harmless
    assert directory.fd is None


def test_a_file_met_by_path_is_enotdir_with_its_path(root: Path) -> None:
    (root / "file").write_text("x")
    directory = _Dir(None, str(root))
    with pytest.raises(NotADirectoryError) as caught:
        directory.child("file", create=False)
    assert (caught.value.errno, caught.value.strerror, caught.value.filename) == (
        errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(root / "file"))


@pytest.mark.parametrize("by_descriptor", [True, False])
def test_opened_files_do_not_leak_into_commands(root: Path, by_descriptor: bool) -> None:
    import fcntl

    (root / "f").write_text("x")
    directory = _Dir(os.open(root, os.O_RDONLY) if by_descriptor else None, str(root))
    fd = directory.open("f", os.O_RDONLY)
    try:
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    finally:
        os.close(fd)
        directory.close()


# -- resolution: messages, snapshots, odd spellings of the root ---------------------------


def test_resolution_errors_name_the_path_as_given(root: Path, outside: Path) -> None:
    from harness_core.errors import PathEscape

    ws = Workspace(root)
    (root / "d").mkdir()
    os.symlink("..", root / "up")
    os.symlink(outside, root / "d" / "out")
    cases = [
        (lambda: ws.resolve("../x"), "../x", "resolves outside the workspace root"),
        (lambda: ws.resolve("up/x"), "up/x", "leads outside the workspace root through link 'up'"),
        (lambda: ws.resolve("d/out/canary.txt"), "d/out/canary.txt",
         "leads outside the workspace root through link 'd/out'"),
        (lambda: ws.resolve("f", cwd="/etc"), "f",
         "is an absolute path outside the workspace root"),
    ]
    for call, path, reason in cases:
        with pytest.raises(PathEscape) as caught:
            call()
        assert (caught.value.path, caught.value.reason) == (path, reason)


def test_a_nul_in_the_cwd_is_refused(root: Path) -> None:
    assert message(lambda: Workspace(root).resolve("f", cwd="a\0b")) == (
        "path 'f' contains a NUL byte")


def test_a_lone_surrogate_is_refused_whole(root: Path) -> None:
    assert message(lambda: Workspace(root).resolve("a\ud800b")) == (
        "path 'a\\ud800b' holds a character no file name can hold (a lone surrogate)")


def test_a_snapshot_follows_links_and_is_filled(root: Path) -> None:
    (root / "d").mkdir()
    os.symlink("d", root / "l")
    ws = Workspace(root)
    kinds: dict[str, int] = {}
    assert ws.resolve("l/f", _kinds=kinds) == "d/f"
    assert ws.resolve("l/g", _kinds=kinds) == "d/g"  # the second time from the snapshot
    assert kinds[f"{root}/l"] == stat.S_IFLNK
    assert kinds[f"{root}/d"] == stat.S_IFDIR


@pytest.mark.parametrize("spelling", ["//", "/./"])
def test_an_absolute_path_may_spell_the_root_loosely(root: Path, spelling: str) -> None:
    loose = str(root).replace("/", spelling) + spelling + "f.txt"
    assert Workspace(root).resolve(loose) == "f.txt"


def test_a_root_whose_name_ends_in_a_space(tmp_path: Path) -> None:
    root = tmp_path / "proj "
    (root / "d").mkdir(parents=True)
    os.symlink("d", root / "l")
    ws = Workspace(root)
    assert ws.resolve("l/f") == "d/f"
    assert ws.resolve(f"{root}/l/f") == "d/f"


def test_the_root_is_opened_without_following_a_link_swapped_in(
    tmp_path: Path, outside: Path
) -> None:
    root = tmp_path / "swapped"
    root.mkdir()
    ws = Workspace(root)
    os.rename(root, tmp_path / "moved")
    os.symlink(outside, root)
    with pytest.raises(WorkspaceError):
        ws.read_bytes("canary.txt")


def test_the_root_descriptor_does_not_leak_into_commands(root: Path) -> None:
    import fcntl

    directory = Workspace(root)._open_root()
    try:
        assert directory.fd is not None
        assert fcntl.fcntl(directory.fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    finally:
        directory.close()


@pytest.mark.skipif(os.sep == "\\", reason="a backslash is a separator on Windows")
def test_a_backslash_in_an_absolute_path_is_part_of_a_name(root: Path) -> None:
    from harness_core.errors import PathEscape

    (root / "a\\b").write_text("x")
    ws = Workspace(root)
    assert ws.resolve(f"{root}/a\\b") == ws.resolve("a\\b") == "a\\b"
    assert ws.read_text(f"{root}/a\\b") == "x"
    with pytest.raises(PathEscape):
        ws.resolve("/" + str(root)[1:].replace("/", "\\") + "/x")  # one odd name, not the root
