"""Batch queries: a batch of runs, each task's run id fixed before anything starts.

`BatchQueries` is a mixin of `Store` (it uses `self._conn` and `self._tx()`). A batch and
all its task rows are written in one transaction, with every run id chosen up front:
whoever picks up a task later (the same launcher, another worker after a crash, or
`io batch --resume`) finds the run by that id and resumes it instead of starting a
second one, so no task runs twice. A task row records the launcher's view (``pending``,
``launched``, ``done``); the outcome itself is the run's own status in `runs`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from harness_core._record import record
from harness_core.errors import StateError, UsageError
from harness_core.store._codec import dumps, loads
from harness_core.store._parts import StoreParts

__all__ = ["BATCH_SCHEMA_SQL", "BatchQueries", "BatchRecord", "BatchTaskRecord"]

BATCH_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    tasks_file TEXT NOT NULL,
    engine TEXT NOT NULL,
    settings TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_tasks (
    batch_id TEXT NOT NULL,
    task_index INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    task TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'launched', 'done')),
    attempts INTEGER NOT NULL DEFAULT 0,
    exit_code INTEGER,
    host TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (batch_id, task_index)
)
"""
"""The batch tables. Statements are separated by ``;`` and contain none inside."""


@record
class BatchRecord:
    """One batch: where its tasks came from and how it was launched."""

    batch_id: str
    created_at: str
    tasks_file: str
    engine: str
    settings: dict[str, Any]


@record
class BatchTaskRecord:
    """One task of a batch, with its run's outcome when the run exists.

    Attributes:
        state: The launcher's view: ``pending``, ``launched`` or ``done``.
        attempts: How many times a launcher picked it up.
        status: The run's status (None before the run was created).
    """

    batch_id: str
    index: int
    run_id: str
    task: dict[str, Any]
    state: str
    attempts: int
    exit_code: int | None
    host: str | None
    status: str | None
    steps: int
    tokens: int


class BatchQueries(StoreParts):
    """Mixin of `Store`: batches and their tasks."""

    _conn: sqlite3.Connection

    def create_batch(self, batch_id: str, *, tasks_file: str, engine: str,
                     settings: dict[str, Any],
                     tasks: Sequence[tuple[int, str, dict[str, Any]]]) -> None:
        """Record a batch and every task's (index, run id, task) in one transaction."""
        now = datetime.now(UTC).isoformat(timespec="microseconds")
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO batches(batch_id, created_at, tasks_file, engine, settings)"
                " VALUES (?,?,?,?,?)", (batch_id, now, tasks_file, engine, dumps(settings)))
            conn.executemany(
                "INSERT INTO batch_tasks(batch_id, task_index, run_id, task, state, updated_at)"
                " VALUES (?,?,?,?,'pending',?)",
                [(batch_id, index, run_id, dumps(task), now) for index, run_id, task in tasks])

    def batch(self, batch_id: str) -> BatchRecord:
        """The batch whose id is `batch_id` (or uniquely starts with it).

        Raises:
            UsageError: No such batch.
        """
        escaped = batch_id.replace("!", "!!").replace("%", "!%").replace("_", "!_")
        rows = self._read(
            "SELECT batch_id, created_at, tasks_file, engine, settings FROM batches"
            " WHERE batch_id = ? OR batch_id LIKE ? ESCAPE '!' ORDER BY batch_id = ? DESC"
            " LIMIT 2", (batch_id, escaped + "%", batch_id))
        if not rows or (len(rows) > 1 and rows[0][0] != batch_id) or not batch_id:
            raise UsageError(f"no batch {batch_id!r} in the store",
                             hint="io batch --resume takes the id `io batch` printed")
        r = rows[0]
        return BatchRecord(r[0], r[1], r[2], r[3], loads(r[4]))

    def batch_tasks(self, batch_id: str) -> list[BatchTaskRecord]:
        """The batch's tasks in order, each with its run's status, steps and tokens."""
        rows = self._read(
            "SELECT t.batch_id, t.task_index, t.run_id, t.task, t.state, t.attempts,"
            " t.exit_code, t.host, r.status, r.steps_used, r.tokens_used FROM batch_tasks t"
            " LEFT JOIN runs r ON r.run_id = t.run_id WHERE t.batch_id = ?"
            " ORDER BY t.task_index", (batch_id,))
        return [BatchTaskRecord(r[0], int(r[1]), r[2], loads(r[3]), r[4], int(r[5]), r[6], r[7],
                                r[8], int(r[9] or 0), int(r[10] or 0)) for r in rows]

    def mark_batch_task(self, batch_id: str, index: int, state: str, *,
                        exit_code: int | None = None, host: str | None = None) -> None:
        """Move a task to `state`; ``launched`` counts an attempt."""
        now = datetime.now(UTC).isoformat(timespec="microseconds")
        with self._tx() as conn:
            conn.execute(
                "UPDATE batch_tasks SET state = ?, exit_code = COALESCE(?, exit_code),"
                " host = COALESCE(?, host), updated_at = ?,"
                " attempts = attempts + CASE WHEN ? = 'launched' THEN 1 ELSE 0 END"
                " WHERE batch_id = ? AND task_index = ?",
                (state, exit_code, host, now, state, batch_id, index))

    def _read(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn.execute(sql, tuple(params)).fetchall())
        except sqlite3.Error as exc:
            raise StateError(f"store failed while reading a batch: {exc}") from exc
