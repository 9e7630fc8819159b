"""Keeping provider keys from commands where there is no pid namespace (the floor).

A process of the same user can read another's `/proc/PID/environ` and memory unless the
target is non-dumpable, which `make_undumpable` makes `io` (Linux `prctl`). That covers
`io` itself; an ancestor that holds a key in its own environment (the shell that
exported it) is out of `io`'s reach, so `ancestor_holding` finds one, and the floor then
reports that it cannot keep the key. Root reads every process regardless.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil
else:
    from harness_core._lazy import psutil  # imported on its first use


__all__ = ["ancestor_holding", "make_undumpable"]

_PR_SET_DUMPABLE = 4
_done = False


def make_undumpable() -> None:
    """Make this process non-dumpable (Linux), so same-user processes cannot read it.

    Its children are unaffected: `execve` restores dumpability. Idempotent.

    Raises:
        OSError: The kernel refused.
    """
    global _done
    if _done:
        return
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_DUMPABLE, 0): {os.strerror(errno)}")
    _done = True


def ancestor_holding(secrets: Collection[str]) -> str | None:
    """The first ancestor of this process whose readable environment holds a secret.

    Args:
        secrets: The values to look for (never returned or logged).

    Returns:
        ``"PID (name)"`` of the ancestor, or None.
    """
    needles = [s.encode() for s in secrets if s]
    try:
        parents = psutil.Process().parents()
    except psutil.Error:
        return None
    for parent in parents:
        try:
            with open(f"/proc/{parent.pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        entries = environ.split(b"\0")
        if any(entry.partition(b"=")[2] == needle for entry in entries for needle in needles):
            try:
                name = parent.name()
            except psutil.Error:
                name = "?"
            return f"{parent.pid} ({name})"
    return None
