"""Stall detection: two signals, both in memory (a resumed run starts at zero).

1. The window: the workspace did not change while a call repeated within the last
   `window` calls.
2. Bare repetition: the same call `window` times in a row, whether or not the workspace
   moved.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

__all__ = ["Progress"]


class Progress:
    """Watches calls and workspace changes for a stall.

    Args:
        window: How many recent calls the detector remembers (and the repetition count).
        fingerprint: Returns a digest of the workspace; called only when a call repeats.
    """

    def __init__(self, window: int, fingerprint: Callable[[], str]) -> None:
        self.window = max(window, 2)
        self._fingerprint = fingerprint
        self._recent: deque[tuple[str, str | None]] = deque(maxlen=self.window)
        self._run_key: str | None = None
        self._run_length = 0

    def observe(self, call_key: str) -> str | None:
        """Record one call; return a message naming the repeated call when stalled."""
        if call_key == self._run_key:
            self._run_length += 1
        else:
            self._run_key, self._run_length = call_key, 1
        if self._run_length >= self.window:
            return (f"stalled: the same call repeated {self._run_length} times in a row:"
                    f" {_short(call_key)}")
        seen = [fp for key, fp in self._recent if key == call_key]
        print_now = self._fingerprint() if seen else None
        self._recent.append((call_key, print_now))
        if seen and print_now is not None and any(fp == print_now for fp in seen):
            repeats = len(seen) + 1
            if repeats >= 3:
                return (f"stalled: the workspace did not change while {_short(call_key)}"
                        f" repeated {repeats} times within the last {self.window} calls")
        return None


def _short(key: str) -> str:
    return key if len(key) <= 160 else key[:157] + "..."
