"""Garbage collection while `io` starts (rarer during start-up, frozen once a run is
built), and leaving without tearing the interpreter down."""

from __future__ import annotations

import gc
import os
import sys
from typing import NoReturn

__all__ = ["begin_start_up", "end_start_up", "leave"]

_START_UP_GC = (50_000, 20, 100)
_gc_default: tuple[int, int, int] | None = None


def begin_start_up() -> None:
    """Collect garbage rarely while `io` starts (called first thing by `main`).

    Start-up creates some hundred thousand objects that live as long as the process
    (modules, classes, the config's models) and frees few; the default threshold (a young
    collection every 700 allocations, a full one every 70,000) scans them again and
    again, about 5 % of a one-step run's instructions. Collection is only made rarer,
    never off, so a command that never reaches `end_start_up` still collects.
    """
    global _gc_default
    if _gc_default is None:
        _gc_default = gc.get_threshold()
        gc.set_threshold(*_START_UP_GC)


def end_start_up() -> None:
    """Start-up is over (a run is assembled): move what it built out of the collector's
    sight (`gc.freeze`) and collect as usual from here on, so a long run's full
    collections scan only what its steps made."""
    global _gc_default
    if _gc_default is not None:
        gc.freeze()
        gc.set_threshold(*_gc_default)
        _gc_default = None


def leave(ended: SystemExit) -> NoReturn:
    """End the process with `ended`'s exit code, skipping the interpreter's tear-down.

    Tearing down frees every object of every module one by one: about a twelfth of a
    one-step run's instructions (some 58 million of 710 on this machine), spent after the
    command has done everything it does. What must still happen at exit happens here, in
    the order the interpreter keeps: the functions registered with `atexit` run (a
    library's cleanup, `weakref.finalize`'s backstops, a test's or a profiler's hook),
    then the standard streams are flushed; a stream that cannot be flushed (its reader
    went away) ends the process with 120, as the interpreter's own exit does. Every file
    io writes is closed by the code that wrote it and every store transaction is committed
    or rolled back before this point; the operating system closes the rest.

    A process with a thread still running that is not a daemon, or an exit "code" that
    is not a number (`sys.exit("message")`), leaves the usual way.
    """
    import atexit
    import threading

    code = ended.code
    others = [t for t in threading.enumerate()
              if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if others or not (code is None or isinstance(code, int)):
        raise ended
    atexit._run_exitfuncs()
    status = 0 if code is None else code
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            status = 120
    os._exit(status & 0xFF)
