"""When a process started, as the process ledger records it and its sweep compares it.

A sweep matches a recorded command to a live process by its start time
(`psutil.Process.create_time`, within 50 ms), so a reused pid is never signalled.
`started_between` gives that very value for a command just spawned without reading
the new process's ``/proc/PID/stat`` when the clock readings around the spawn pin it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil
else:
    from harness_core._lazy import psutil  # imported on its first use

__all__ = ["process_started", "spawn_clock", "started_between"]


def process_started(pid: int) -> float | None:
    """`pid`'s start time as `psutil.Process.create_time` gives it (what a sweep compares).

    On Linux it is read the way psutil reads it (``/proc/PID/stat``'s start tick over the
    tick rate, plus ``/proc/stat``'s boot time), without importing psutil."""
    if _LINUX:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                text = handle.read()
            tick = int(text[text.rindex(b")") + 2 :].split()[19])
        except (OSError, ValueError, IndexError):
            return None
        return float(tick) / _CLOCK_TICKS + _boot_time()
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


_LINUX = sys.platform.startswith("linux")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if _LINUX else 100
_TICK_NS = 1_000_000_000 // _CLOCK_TICKS
_boot: list[float] = []


def _boot_time() -> float:
    """The boot time psutil adds to a start time, read once per process (it moves only
    when the wall clock is stepped, which shifts a start time read at any other moment
    as much)."""
    if not _boot:
        _boot.append(_linux_boot_time() if _LINUX else float(psutil.boot_time()))
    return _boot[0]


def _linux_boot_time() -> float:
    """``/proc/stat``'s ``btime``, as psutil reads it (psutil itself if it is missing)."""
    try:
        with open("/proc/stat", "rb") as handle:
            for line in handle:
                if line.startswith(b"btime"):
                    return float(line.strip().split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return float(psutil.boot_time())


def spawn_clock() -> int | None:
    """Nanoseconds on the clock a Linux process's start time is taken from (None elsewhere).

    Read just before and just after starting a command, it bounds the command's start
    time; see `started_between`."""
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME) if _LINUX else None


def started_between(pid: int, before: int | None, after: int | None) -> float | None:
    """The start time of `pid`, forked between clock readings `before` and `after`, exactly
    as `_started` reads it, without reading ``/proc`` when it can be avoided.

    The kernel records a process's start in clock ticks since boot (`/proc/PID/stat`'s
    field 22, which psutil divides by the tick rate and adds the boot time to). When both
    readings fall in one tick, the fork did too and that tick is the start time: no read
    of the new process's ``stat``, which blocks until its `exec` is done (most of a
    millisecond for a small program). Otherwise the file is read once, and psutil itself
    is the fallback off Linux.
    """
    if before is None or after is None:
        return process_started(pid)
    tick = before // _TICK_NS
    if after // _TICK_NS != tick:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                text = handle.read()
            tick = int(text[text.rindex(b")") + 2 :].split()[19])
        except (OSError, ValueError, IndexError):
            return process_started(pid)
    return float(tick) / _CLOCK_TICKS + _boot_time()
