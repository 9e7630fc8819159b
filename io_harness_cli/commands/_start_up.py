"""Garbage collection while `io` starts: rarer during start-up, frozen once a run is built."""

from __future__ import annotations

import gc

__all__ = ["begin_start_up", "end_start_up"]

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
