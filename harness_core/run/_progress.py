"""Stall detection: two signals, carried across a resume.

1. The window: the workspace did not change while a call repeated within the last
   `window` calls.
2. Bare repetition: the same call `window` times in a row, whether or not the workspace
   moved.

What the detector keeps is small: the last `window` calls with the workspace print taken
with each (if one was). The loop records each call's print with its observation
(`last_mark`), and a resumed run `replay`s the recorded ones, so a run that loops,
crashes and resumes stops at the same step as one that never crashed. No I/O of its own
but the `fingerprint` it is given.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

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
        self.last_mark = ""
        """What the latest `observe` took: the workspace print, or '' when it took none
        (what the store records with the call, for `replay`)."""

    def replay(self, trail: Iterable[tuple[str, str]]) -> None:
        """Take back recorded calls, oldest first: each call's key and its `last_mark`.

        Nothing is reported and no print is taken: these calls were judged when they ran.
        """
        for call_key, mark in trail:
            self._count(call_key)
            self._recent.append((call_key, mark or None))

    def _count(self, call_key: str) -> None:
        if call_key == self._run_key:
            self._run_length += 1
        else:
            self._run_key, self._run_length = call_key, 1

    def observe(self, call_key: str) -> str | None:
        """Record one call; return a message naming the repeated call when stalled."""
        self._count(call_key)
        self.last_mark = ""
        if self._run_length >= self.window:
            return (f"stalled: the same call repeated {self._run_length} times in a row:"
                    f" {_short(call_key)}")
        seen = [fp for key, fp in self._recent if key == call_key]
        print_now = self._fingerprint() if seen else None
        self._recent.append((call_key, print_now))
        self.last_mark = print_now or ""
        if seen and print_now is not None and any(fp == print_now for fp in seen):
            repeats = len(seen) + 1
            if repeats >= 3:
                return (f"stalled: the workspace did not change while {_short(call_key)}"
                        f" repeated {repeats} times within the last {self.window} calls")
        return None


def _short(key: str) -> str:
    return key if len(key) <= 160 else key[:157] + "..."
