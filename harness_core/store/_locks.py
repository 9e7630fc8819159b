"""Whole-file locks other tools take on the store, which SQLite itself does not see.

SQLite's own locks are POSIX record locks on fixed bytes; `flock(1)` and backup scripts
lock the whole file with `flock(2)`, which SQLite ignores: opened under such a lock, a
command read (and wrote) a file another program had declared its own, and `io runs`
printed whatever it found, exit 0. Opening the store now waits, within the open's busy
budget, until no other process holds an exclusive `flock` on it, and otherwise refuses.
io takes the shared lock only for that look and never holds one, so io processes never
wait for each other here. This module never writes the file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness_core.errors import StoreUnavailable

__all__ = ["wait_for_flock"]

_POLL_SECONDS = 0.05


def wait_for_flock(path: Path, deadline: float) -> None:
    """Wait until no other process holds an exclusive `flock` on `path`.

    Args:
        path: The store file (nothing happens when it does not exist).
        deadline: `time.monotonic()` value after which to give up.

    Raises:
        StoreUnavailable: The lock was still held at the deadline.
    """
    try:
        import fcntl
    except ImportError:  # Windows: no flock to respect
        return
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return  # missing or unreadable: the open that follows says what is wrong
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreUnavailable(
                        str(path), "it is locked by another process (a whole-file lock,"
                                   " flock)",
                        hint="another program holds it (a backup, `flock`); retry when"
                             " it is done") from None
                time.sleep(_POLL_SECONDS)
            except OSError:
                return  # a file system without flock
            else:
                return
    finally:
        os.close(fd)  # closing lets go of the shared lock
