"""`ManualClock`: a `Clock` whose time moves only when a test (or a sleep) moves it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class ManualClock:
    """A `Clock` that moves only when slept on or advanced; records every sleep."""

    def __init__(self) -> None:
        self._start = datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 0.0
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self._mono)

    def monotonic(self) -> float:
        return self._mono

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self._mono += seconds

    def advance(self, seconds: float) -> None:
        self._mono += seconds
