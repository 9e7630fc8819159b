"""The SQLite store files this process holds open, so that nothing in the process opens
and closes one of them outside SQLite.

POSIX record locks belong to a process, not to a descriptor: closing *any* descriptor
of a file drops every lock the process holds on that file. SQLite keeps its own
descriptors open for that reason, but a descriptor io opens itself is closed when io is
done with it. Closed while a connection of the same process was open, it dropped that
connection's shared lock; another process closing its own connection could then take
the exclusive lock, believe itself the store's last user, and checkpoint and delete the
write-ahead log under the live connection (a "disk I/O error" on its next write). Three
paths did that: the checks `Store` runs before it connects (the batch driver's task
threads each open the store; a report is written after a run), a file tool reading a
store that lies in the workspace, and a shell redirect from it.

So `Store` opens a file this process already holds straight through SQLite, as
`Store.reopen` does (it was checked when this process first opened it), one open at a
time; and the workspace's file access and the shell's redirects refuse a file that is
held (`held`). This module imports nothing of io's: every layer may ask it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["REFUSAL", "File", "Opening", "held", "opening", "release"]

File = tuple[int, int]
"""A store file as this process knows it: its device and inode."""

REFUSAL = ("it is the store io is writing to: reading it inside io would drop the"
           " store's locks")
"""What a refused read says (after the path)."""

_SIBLINGS = ("-wal", "-shm", "-journal")

_lock = threading.RLock()  # re-entrant: a failed open releases inside `opening`
_held: dict[File, int] = {}


def _identity(path: Path) -> File | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def held(name: str, lstat: Callable[[str], os.stat_result]) -> bool:
    """Whether `name` is a store this process holds open, or its ``-wal``, ``-shm`` or
    ``-journal`` (SQLite locks the ``-shm`` too), `lstat` answering for a name in the
    same folder. Asked before every file io opens in a workspace; free when no store
    is held."""
    if not _held:
        return False
    for base in (name, *(name[:-len(end)] for end in _SIBLINGS if name.endswith(end))):
        try:
            info = lstat(base)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in _held:
            return True
    return False


class Opening:
    """One open of a store file in progress (made by `opening`, which holds the lock)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        known = _identity(path)
        self.held = known is not None and _held.get(known, 0) > 0
        """Whether a connection of this process already holds the file: its checks
        must not open it outside SQLite."""

    def retain(self) -> File | None:
        """Count the new connection (once it exists); `release` uncounts it."""
        known = _identity(self._path)
        if known is not None:
            _held[known] = _held.get(known, 0) + 1
        return known


@contextmanager
def opening(path: Path) -> Iterator[Opening]:
    """Open `path` alone in this process: no thread's checks run beside another's
    connect."""
    with _lock:
        yield Opening(path)


def release(known: File | None) -> None:
    """Stop counting a connection `Opening.retain` counted (it is closed now)."""
    if known is None:
        return
    with _lock:
        left = _held.get(known, 0) - 1
        if left > 0:
            _held[known] = left
        else:
            _held.pop(known, None)


def _forget_in_child() -> None:
    """A forked child holds none of its parent's locks (POSIX locks are not inherited),
    and a lock another thread held at the fork would never be let go in it."""
    global _lock
    _lock = threading.RLock()
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
