"""What every query mixin of `Store` may use: the connection and the write transaction.

The mixins (`_runs`, `_steps`, `_checkpoints`, `_oversight`, `_handles`, `_sessions`,
`_todos`, `_questions`, `_spend`, `_sweeps`, `_tree`) declare these here once; `Store`
provides them.
"""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_core.messages import Message
    from harness_core.store._records import RunRecord

__all__ = ["HOST", "AliveCheck", "StoreParts", "now"]

AliveCheck = Callable[[int, float | None], bool]
"""(pid, process start time) → whether that very process still lives."""

HOST = socket.gethostname()
"""The runner, recorded per completion and per drive."""


def now() -> str:
    """The time as the store records it: ISO 8601, UTC, microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


class StoreParts:
    """The two things a query mixin needs from `Store`."""

    _conn: sqlite3.Connection
    backend: str
    """"sqlite" or "postgresql" (set by `Store` when it opens)."""

    if TYPE_CHECKING:

        def run(self, run_id: str) -> RunRecord:
            """One run's row (`RunQueries`)."""
            ...

        def _insert_messages(self, conn: sqlite3.Connection, run_id: str, step: int,
                             messages: Sequence[Message]) -> None:
            """Append messages inside an open transaction (`StepQueries`)."""
            ...

        def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
            """Run one read and return its rows."""
            ...

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
