"""The SQLite stores this process holds open, so that opening one again never closes a
descriptor of its file.

POSIX record locks belong to a process, not to a descriptor: closing *any* descriptor
of a file drops every lock the process holds on that file. SQLite keeps its own
descriptors open for that reason, but the checks `Store` runs before it connects (the
header read, the `flock` wait) open and close the file themselves. Run while another
connection of the same process was open (the batch driver's task threads each open the
store; a report is written after a run), that close dropped the live connection's
shared lock. Another process closing its own connection could then take the exclusive
lock, believe itself the store's last user, and checkpoint and delete the write-ahead
log under the live connection: a "disk I/O error" on its next write.

So an open of a file this process already holds goes straight to SQLite, as
`Store.reopen` does (the file was checked when this process first opened it), and
opens are taken one at a time, so that no thread's checks run beside another's connect.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["File", "Opening", "opening", "release"]

File = tuple[int, int]
"""A store file as this process knows it: its device and inode."""

_lock = threading.RLock()  # re-entrant: a failed open releases inside `opening`
_held: dict[File, int] = {}


def _identity(path: Path) -> File | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


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
