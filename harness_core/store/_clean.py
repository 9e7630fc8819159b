"""Whether a SQLite store was closed cleanly since it was last checked: open markers and
the clean-close fingerprint, so that opening a store costs the same at any size.

`PRAGMA quick_check` reads the whole file (about 0.3 s at 360 MB), so it runs only when
the file may have changed outside io's own clean use of it:

* Each io connection leaves an **open marker** beside the store while it is open
  (``<store>-open-<pid>-<token>``, holding the process's start time); `Store.close`
  removes it. A marker whose process is gone (or whose pid now names another process)
  means an io process died with the store open: an unclean close.
* The last io connection to close writes the **clean-close fingerprint**
  (``<store>-clean``): the file's device, inode, size, modification and change times
  (the change time cannot be set back by any tool), and its log's size and times.

An open therefore runs the check when a dead marker lies beside the store, or when no
live io process holds it open and the file's fingerprint is not the one recorded at the
last clean close (a write by another program, a copy, a truncation, a missing or
unreadable fingerprint). A store that live io processes hold open is trusted as they
left it: each of them checked it when it opened. Every doubt (a marker or fingerprint
that is not a regular file, one that cannot be read) counts as an unclean close.

Nothing here follows a symlink: markers are created with ``O_EXCL | O_NOFOLLOW``, the
fingerprint is written to a new file and renamed over the old, and read with
``O_NOFOLLOW``. A marker or fingerprint that cannot be written is skipped (a read-only
directory, a full disk); the next open then checks. This module never opens the store.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from pathlib import Path

__all__ = ["OpenMarker", "needs_check", "settle_unclean"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def process_started(pid: int) -> int | None:
    """`pid`'s start tick from ``/proc/PID/stat`` (None: gone, or no ``/proc`` to ask,
    which makes every marker a doubt and every open a checked one)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
        return int(text[text.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _clean_path(store: Path) -> Path:
    return store.with_name(store.name + "-clean")


def _marker_prefix(store: Path) -> str:
    return store.name + "-open-"


def fingerprint(store: Path) -> dict[str, object] | None:
    """What identifies the store's bytes without reading them (None: no such file)."""
    try:
        info = os.stat(store, follow_symlinks=False)
    except OSError:
        return None
    print_: dict[str, object] = {
        "dev": info.st_dev, "ino": info.st_ino, "size": info.st_size,
        "mtime_ns": info.st_mtime_ns, "ctime_ns": info.st_ctime_ns, "wal": None}
    try:
        wal = os.stat(store.with_name(store.name + "-wal"), follow_symlinks=False)
    except OSError:
        return print_
    print_["wal"] = [wal.st_size, wal.st_mtime_ns, wal.st_ctime_ns, stat.S_IFMT(wal.st_mode)]
    return print_


def _read_small(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def _markers(store: Path) -> list[Path]:
    prefix = _marker_prefix(store)
    try:
        with os.scandir(store.parent) as entries:
            return [store.with_name(e.name) for e in entries if e.name.startswith(prefix)]
    except OSError:
        return []


def _is_live(marker: Path) -> bool:
    """Whether the process that left `marker` still runs (False for any doubt)."""
    body = _read_small(marker)
    if body is None:
        return False
    try:
        pid_text, started_text = body.decode("ascii").split()
        pid, started = int(pid_text), int(started_text)
    except ValueError:
        return False
    return process_started(pid) == started


def needs_check(store: Path) -> bool:
    """Whether opening `store` must run ``quick_check``: a dead marker lies beside it,
    or no live io holds it open and its fingerprint is not the last clean close's."""
    live = False
    for marker in _markers(store):
        if not _is_live(marker):
            return True
        live = True
    if live:
        return False
    recorded = _read_small(_clean_path(store))
    if recorded is None:
        return True
    try:
        return bool(json.loads(recorded) != fingerprint(store))
    except ValueError:
        return True


def settle_unclean(store: Path) -> None:
    """After a check passed: remove the markers of dead processes (their close is
    accounted for), so the next open need not check again."""
    for marker in _markers(store):
        if not _is_live(marker):
            _unlink(marker)


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass  # already gone (another process settled it), or not ours to remove


class OpenMarker:
    """This connection's open marker; `close` removes it and, when no other io
    connection holds the store open, records the clean-close fingerprint."""

    def __init__(self, store: Path) -> None:
        self._store = store
        self._path: Path | None = None
        started = process_started(os.getpid())
        if started is None:
            return  # no start time to prove this process's marker live: leave none
        path = store.with_name(f"{_marker_prefix(store)}{os.getpid()}-{secrets.token_hex(6)}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        except OSError:
            return  # read-only directory or full disk: the next open checks
        try:
            os.write(fd, f"{os.getpid()} {started}".encode("ascii"))
        except OSError:
            os.close(fd)
            _unlink(path)
            return
        os.close(fd)
        self._path = path

    def close(self, *, clean: bool = True) -> None:
        """Remove the marker; write the fingerprint when `clean` and no marker remains.

        Args:
            clean: False leaves the store to be checked at the next open (the
                connection failed to close).
        """
        if self._path is None:
            return
        _unlink(self._path)
        self._path = None
        if clean and not _markers(self._store):
            _write_fingerprint(self._store)


def _write_fingerprint(store: Path) -> None:
    current = fingerprint(store)
    if current is None:
        return
    body = json.dumps(current, sort_keys=True).encode("ascii")
    target = _clean_path(store)
    if _read_small(target) == body:
        return  # unchanged: leave the file's bytes alone
    fresh = store.with_name(f"{target.name}.{secrets.token_hex(6)}")
    try:
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        os.write(fd, body)
        os.close(fd)
        os.replace(fresh, target)  # rename replaces a planted link, never follows it
    except OSError:
        _unlink(fresh)
