"""Plan queries: the agent's todo list, one per run, replaced wholesale.

`PlanQueries` is a mixin of `Store` (it uses `self._conn` and `self._tx()`). A write
deletes the run's whole plan and inserts the new one in one transaction, so a reader on
another connection (another process: `io trace RUN --plan`) sees the previous plan or
the next one, never half of each. Nothing here judges a plan: an item marked ``done``
is the agent's claim, and no outcome or refusal consults this table.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime

from harness_core.errors import StateError
from harness_core.store._parts import StoreParts
from harness_core.tool_data import TodoItem

__all__ = ["PLAN_SCHEMA_SQL", "PLAN_STATUSES", "PlanQueries"]

PLAN_STATUSES: tuple[str, ...] = ("pending", "in_progress", "done")
"""The states an item may claim, in the order work moves through them."""

PLAN_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS todos (
    run_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'in_progress', 'done')),
    revision INTEGER NOT NULL,
    step_index INTEGER,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE TABLE IF NOT EXISTS todo_revisions (
    run_id TEXT PRIMARY KEY,
    revision INTEGER NOT NULL
)
"""
"""The plan tables. Statements are separated by ``;`` and contain none inside."""


class PlanQueries(StoreParts):
    """Mixin of `Store`: read and replace a run's plan."""

    _conn: sqlite3.Connection


    def replace_todos(
        self, run_id: str, items: Sequence[TodoItem], *, step: int | None = None
    ) -> int:
        """Replace the run's whole plan with `items` (their ``content`` and ``status``).

        Returns:
            The plan's new revision number (1 for the first write).
        """
        now = datetime.now(UTC).isoformat(timespec="microseconds")
        with self._tx() as conn:
            row = conn.execute(
                "SELECT revision FROM todo_revisions WHERE run_id = ?", (run_id,)
            ).fetchone()
            revision = (int(row[0]) if row is not None else 0) + 1
            conn.execute(
                "INSERT OR REPLACE INTO todo_revisions(run_id, revision) VALUES (?, ?)",
                (run_id, revision),
            )
            conn.execute("DELETE FROM todos WHERE run_id = ?", (run_id,))
            conn.executemany(
                "INSERT INTO todos(run_id, position, content, status, revision, step_index,"
                " updated_at) VALUES (?,?,?,?,?,?,?)",
                [(run_id, i, item.content, item.status, revision, step, now)
                 for i, item in enumerate(items)],
            )
        return revision

    def todos(self, run_id: str) -> list[TodoItem]:
        """The run's current plan, in order, each item with its ``revision``.

        Read in one statement, so it is one revision whole.
        """
        try:
            rows = self._conn.execute(
                "SELECT content, status, revision FROM todos WHERE run_id = ? ORDER BY position",
                (run_id,),
            ).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"store failed while reading the plan: {exc}") from exc
        return [TodoItem(r[0], r[1], r[2]) for r in rows]
