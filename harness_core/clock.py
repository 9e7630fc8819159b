"""Time as a seam: the loop, budgets, retries and the stall detector take a `Clock`.

Nothing in `harness_core` calls `time.time()` or `time.sleep()` directly outside this
module; tests pass a manual clock whose `sleep` advances time, so backoff tests finish
at once.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["Clock", "SystemClock"]


class Clock(Protocol):
    """What the harness needs to know about time."""

    def now(self) -> datetime:
        """The current wall-clock time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait `seconds`."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)
