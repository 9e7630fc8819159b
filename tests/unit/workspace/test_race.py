"""A link swapped in between the check and the use never lets I/O leave the root.

`resolve` is a check; the I/O then walks from the root by descriptor with O_NOFOLLOW.
The first tests freeze the gap deterministically (a stale resolution is handed to the
I/O); the last ones race a thread that flips paths as fast as it can.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness_core.errors import WorkspaceError
from harness_core.workspace import Workspace

from .conftest import CANARY

ATTEMPTS = 2000


@pytest.fixture
def busy_switching() -> Iterator[None]:
    """Switch threads every 100 µs instead of 5 ms, so the two threads interleave often."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _stale(ws: Workspace, monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    # Freezes the check-then-use gap: the I/O receives the answer `resolve` gave before
    # the swap. Patching is the only way to hold the gap open deterministically.
    monkeypatch.setattr(ws, "resolve", lambda path, *, cwd="": answer)


def test_parent_swapped_for_a_link_after_resolve_fails_closed(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace(root)
    (root / "sub").mkdir()
    answer = ws.resolve("sub/new.txt")
    shutil.rmtree(root / "sub")
    os.symlink(outside, root / "sub")
    _stale(ws, monkeypatch, answer)
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.write_bytes("sub/new.txt", b"escaped")
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.read_bytes("sub/canary.txt")
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.list_names("sub")
    assert sorted(os.listdir(outside)) == ["canary.txt"]


def test_file_swapped_for_a_link_after_resolve_is_never_followed(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = Workspace(root)
    (root / "f.txt").write_bytes(b"mine")
    answer = ws.resolve("f.txt")
    (root / "f.txt").unlink()
    os.symlink(outside / "canary.txt", root / "f.txt")
    _stale(ws, monkeypatch, answer)
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.read_bytes("f.txt")
    ws.write_bytes("f.txt", b"replaced")  # the rename replaces the link itself
    assert (outside / "canary.txt").read_bytes() == CANARY
    assert not (root / "f.txt").is_symlink()
    assert (root / "f.txt").read_bytes() == b"replaced"


@contextmanager
def _flipping(step: Callable[[], None]) -> Iterator[list[int]]:
    """Run `step` in a loop on a thread until the block ends; yields [flips]."""
    stop = threading.Event()
    flips = [0]

    def loop() -> None:
        while not stop.is_set():
            step()
            flips[0] += 1

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield flips
    finally:
        stop.set()
        thread.join(timeout=30)
        assert not thread.is_alive()


def _attempt(action: Callable[[], object]) -> tuple[int, int]:
    done = refused = 0
    for _ in range(ATTEMPTS):
        try:
            action()
            done += 1
        except WorkspaceError:
            refused += 1
    return done, refused


def _file_flip(root: Path, outside: Path) -> Callable[[], None]:
    """One flip: `target.txt` becomes a link to the canary, then a regular file again."""
    target, link, regular, source = (root / n for n in ("target.txt", "l.tmp", "r.tmp", "src.tmp"))
    target.write_bytes(b"inside")
    source.write_bytes(b"inside")

    def flip() -> None:
        os.symlink(outside / "canary.txt", link)
        os.replace(link, target)
        os.link(source, regular)  # a hard link: a regular file without writing data
        os.replace(regular, target)

    return flip


@pytest.mark.usefixtures("busy_switching")
def test_write_never_reaches_the_canary_while_a_file_flips_to_a_link(
    root: Path, outside: Path
) -> None:
    ws = Workspace(root)
    with _flipping(_file_flip(root, outside)) as flips:
        done, refused = _attempt(lambda: ws.write_bytes("target.txt", b"written by the agent"))
    assert done + refused == ATTEMPTS
    assert flips[0] > 0
    assert (outside / "canary.txt").read_bytes() == CANARY
    assert sorted(os.listdir(outside)) == ["canary.txt"]


@pytest.mark.usefixtures("busy_switching")
def test_read_never_returns_the_canary_while_a_file_flips_to_a_link(
    root: Path, outside: Path
) -> None:
    ws = Workspace(root)
    seen: set[bytes] = set()
    with _flipping(_file_flip(root, outside)) as flips:
        done, refused = _attempt(lambda: seen.add(ws.read_bytes("target.txt")))
    assert done + refused == ATTEMPTS and flips[0] > 0
    assert seen <= {b"inside"}


def _exchange() -> Callable[[Path, Path], None] | None:
    """renameat2(RENAME_EXCHANGE): swap two names atomically (Linux 3.15+, glibc 2.28+)."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name, use_errno=True) if name else None
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return None
    at_fdcwd, rename_exchange = -100, 2

    def swap(a: Path, b: Path) -> None:
        if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) != 0:
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error))

    return swap


@pytest.mark.usefixtures("busy_switching")
def test_write_never_escapes_while_a_parent_directory_flips_to_a_link(
    root: Path, outside: Path
) -> None:
    swap = _exchange()
    if swap is None:
        pytest.skip("needs renameat2 to swap a directory and a link atomically")
    ws = Workspace(root)
    (root / "sub").mkdir()
    os.symlink(outside, root / "parked")
    try:
        swap(root / "sub", root / "parked")
        swap(root / "sub", root / "parked")
    except OSError as exc:
        pytest.skip(f"this filesystem cannot exchange names: {exc}")

    with _flipping(lambda: swap(root / "sub", root / "parked")) as flips:
        done, refused = _attempt(lambda: ws.write_bytes("sub/f.txt", b"agent"))
    assert done + refused == ATTEMPTS and flips[0] > 0
    assert sorted(os.listdir(outside)) == ["canary.txt"]
    assert (outside / "canary.txt").read_bytes() == CANARY
