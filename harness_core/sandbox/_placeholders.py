"""Placeholders: the empty mount points that keep a missing protected path uncreatable.

The native backend covers a protected path that does not exist (`.gitmodules`,
`io.local.toml`, a missing `.git`) with an empty read-only file or directory inside the
sandbox (see `_linux`). A mount needs a mount point, and the workspace is the host's
directory bound in, so the point exists on the host too: io makes it itself, with
`O_EXCL` (a path that appeared meanwhile is never taken for one of its own), and
records it in the process ledger (`_ledger`) with its device, inode and change time
before any sandbox covers it (an inode number alone is handed to the next file made
there: removed and made again, a path often gets the same one). The ledger names each
placeholder before it is made, too (its path, its kind and the time), so a `kill -9`
between the making and the recording cannot leave one that no ledger names; such an
announced one is taken for io's only if it is of the announced kind, empty, and was made
within seconds of the announcement.

Each placeholder is removed when the last sandbox of this process that covers it has
ended. After `kill -9` of `io` nothing runs that clean-up; the sweep of the next `io`
command that opens a store (`io runs`, `io resume`, ...) reads the dead process's
ledger and removes each placeholder it names that is still the one io made (same
device, inode and change time, not a symbolic link) and still empty. Anything else at that path —
content written into it, a file made there again, a directory with an entry — is left
alone: this module never deletes what it did not make or what holds content.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness_core._record import record
from harness_core.sandbox._ledger import current_ledger

__all__ = ["claim_placeholders", "pending_placeholders", "release_placeholders",
           "remove_if_untouched"]


@record(frozen=False)
class _Made:
    identity: tuple[int, int, int]  # device, inode, change time (ns)
    users: int


_made: dict[Path, _Made] = {}
_lock = threading.Lock()


def _create(path: Path, is_dir: bool) -> os.stat_result | None:
    """Make one placeholder; None when something is at the path already (not ours)."""
    try:
        if is_dir:
            os.mkdir(path, 0o755)
            return os.lstat(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)
    except FileExistsError:
        return None


def _create_recorded(path: Path, is_dir: bool) -> os.stat_result | None:
    """`_create`, named in the ledger before (announced) and after (its identity)."""
    ledger = current_ledger()
    if ledger is None:
        return _create(path, is_dir)
    ledger.announce_placeholder(path, is_dir=is_dir)
    info = None
    try:
        info = _create(path, is_dir)
    finally:
        if info is None:  # not made (something is there, or an error): not io's
            ledger.forget_placeholder(path)
        else:
            ledger.note_placeholder(path, _identity(info))
    return info


def claim_placeholders(dirs: Iterable[Path], files: Iterable[Path]) -> list[Path]:
    """Make the placeholders a new sandbox needs (or count one more user of those this
    process made already), each recorded in the ledger as soon as it exists.

    Returns:
        The placeholders this sandbox now uses (what `release_placeholders` takes back);
        a path that something else created meanwhile is not among them (the sandbox
        still covers it, read-only, but it is never removed as io's).

    Raises:
        OSError: A placeholder could not be made (the sandbox cannot protect the path).
    """
    claimed: list[Path] = []
    try:
        for path, is_dir in [*((d, True) for d in dirs), *((f, False) for f in files)]:
            with _lock:
                if path in _made and is_untouched(path, _made[path].identity):
                    _made[path].users += 1
                    claimed.append(path)
                    continue
                info = _create_recorded(path, is_dir)
                if info is None:
                    continue
                _made[path] = _Made(_identity(info), 1)
                claimed.append(path)
    except OSError:
        release_placeholders(claimed)
        raise
    return claimed


def pending_placeholders() -> list[Path]:
    """This process's placeholders still in use and still empty (a command planning its
    sandbox treats them as missing, so it covers them too)."""
    with _lock:
        return [p for p, made in _made.items() if is_untouched(p, made.identity)]


def release_placeholders(paths: Sequence[Path]) -> None:
    """One sandbox that used `paths` has ended: remove each one no sandbox uses now."""
    for path in paths:
        with _lock:
            made = _made.get(path)
            if made is None:
                continue
            made.users -= 1
            if made.users > 0:
                continue
            del _made[path]
            remove_if_untouched(path, made.identity)
        ledger = current_ledger()
        if ledger is not None:
            ledger.forget_placeholder(path)


def _identity(info: os.stat_result) -> tuple[int, int, int]:
    return info.st_dev, info.st_ino, info.st_ctime_ns


def is_untouched(path: Path, identity: tuple[int, int, int]) -> bool:
    """Whether `path` is still the placeholder recorded as `identity`, and empty."""
    try:
        info = os.lstat(path)
        if _identity(info) != identity:
            return False
        if stat.S_ISDIR(info.st_mode):
            with os.scandir(path) as listing:
                return next(listing, None) is None
        return stat.S_ISREG(info.st_mode) and info.st_size == 0
    except OSError:
        return False


def remove_if_untouched(path: Path, identity: tuple[int, int, int]) -> bool:
    """Remove the placeholder at `path` if it is still the one recorded, and empty.

    Returns:
        Whether it was removed.
    """
    if not is_untouched(path, identity):
        return False
    try:
        if path.is_dir():
            path.rmdir()  # refuses a directory that gained an entry meanwhile
        else:
            path.unlink()
    except OSError:
        return False
    return True


def remove_recorded(records: Iterable[dict[str, Any]]) -> list[str]:
    """Remove what a dead `io`'s ledger names as its placeholders (see the module doc).

    Returns:
        The paths removed.
    """
    removed: list[str] = []
    for entry in records:
        with contextlib.suppress(KeyError, TypeError, ValueError):
            path = Path(str(entry["path"]))
            if not path.is_absolute():
                continue
            if "inode" not in entry:  # announced, then killed before it was noted
                identity = _announced_identity(path, entry)
            else:
                identity = (int(entry["device"]), int(entry["inode"]),
                            int(entry["changed"]))
            if identity is not None and remove_if_untouched(path, identity):
                removed.append(str(path))
    return removed


_ANNOUNCED_WITHIN_NS = 10 * 10**9
"""How long after its announcement a placeholder's making may be taken for io's."""

_CLOCK_SLACK_NS = 50 * 10**6
"""File times come from a coarse clock that can lag `time_ns()` by a tick or so."""


def _announced_identity(path: Path, entry: dict[str, Any]) -> tuple[int, int, int] | None:
    """The identity of what is at `path` if it can only be the placeholder a dead `io`
    announced and then made: the announced kind, and changed last between the
    announcement and `_ANNOUNCED_WITHIN_NS` after it (a file made earlier, or made
    again later, is not it). None when it is not, or when nothing is there."""
    announced, kind = int(entry["announced"]), str(entry["kind"])
    try:
        info = os.lstat(path)
    except OSError:
        return None
    right_kind = stat.S_ISDIR(info.st_mode) if kind == "dir" else stat.S_ISREG(info.st_mode)
    made = info.st_ctime_ns
    if not right_kind or not (announced - _CLOCK_SLACK_NS <= made
                              <= announced + _ANNOUNCED_WITHIN_NS):
        return None
    return _identity(info)
