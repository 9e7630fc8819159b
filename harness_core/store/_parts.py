"""What every query mixin of `Store` may use: the connection and the write transaction.

The mixins (`_handles`, `_sessions`, `_todos`, `_questions`, `_spend`) declare these here
once; `Store` provides them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

__all__ = ["StoreParts"]


class StoreParts:
    """The two things a query mixin needs from `Store`."""

    _conn: sqlite3.Connection

    if TYPE_CHECKING:

        def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
            """One write transaction (BEGIN IMMEDIATE), committed or rolled back whole."""
            ...

        def _held(self, kind: str, name: str, pid: int, started: float | None,
                  alive: Callable[[int, float | None], bool]) -> bool:
            """Whether a recorded owner of (kind, name) still drives it."""
            ...

        def _hold(self, kind: str, name: str) -> bool:
            """Take (kind, name)'s cross-machine lock where the backend has one."""
            ...

        def _let_go(self, kind: str, name: str) -> None:
            """Give back what `_hold` took."""
            ...
