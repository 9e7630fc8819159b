"""Trees of runs: a spawned child is a run of its own, placed under its parent.

Migration `0008_agent_trees` adds to `runs` the child's `depth` (the root is 0), the
`root_run_id` of its tree, the parent's step and call index that spawned it (the key
that makes a spawn at-most-once: a resumed parent finds the child it already started
instead of starting another) and the agent definition it runs as. A run that is not a
child (a plain run, a session turn) is its own root at depth 0.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from harness_core._record import record
from harness_core.errors import StateError
from harness_core.store._codec import loads
from harness_core.store._documents import resolved
from harness_core.store._parts import StoreParts
from harness_core.store._records import Pause, RunRecord, RunStatus

__all__ = ["RUN_COLUMNS", "TREE_SCHEMA_SQL", "TreePlace", "TreeQueries", "run_record"]

TREE_SCHEMA_SQL = """
ALTER TABLE runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN root_run_id TEXT;
ALTER TABLE runs ADD COLUMN spawn_step INTEGER;
ALTER TABLE runs ADD COLUMN spawn_call INTEGER;
ALTER TABLE runs ADD COLUMN agent TEXT;
CREATE INDEX IF NOT EXISTS runs_spawn ON runs(parent_run_id, spawn_step, spawn_call);
CREATE INDEX IF NOT EXISTS runs_root ON runs(root_run_id)
"""

RUN_COLUMNS = (
    "SELECT run_id, created_at, updated_at, status, goal, workspace, model, session_i"
    f"d, parent_run_id, {resolved('settings')}, {resolved('policy')},"
    f" {resolved('sandbox')}, exit_code, reason, pause, owner_pid"
    ", steps_used, tokens_used, wall_used, depth, root_run_id, agent"
)
"""The columns `run_record` reads, in its order (the documents through their
references, `harness_core.store._documents`); used as ``RUN_COLUMNS + " FROM runs"``."""


def run_record(r: tuple[Any, ...]) -> RunRecord:
    """A `RunRecord` from a row selected with `RUN_COLUMNS`."""
    return RunRecord(
        run_id=r[0], created_at=r[1], updated_at=r[2], status=RunStatus(r[3]), goal=r[4],
        workspace=r[5], model=r[6], session_id=r[7], parent_run_id=r[8], settings=loads(r[9]),
        policy=loads(r[10]), sandbox=loads(r[11]), exit_code=r[12], reason=r[13],
        pause=None if r[14] is None else Pause.from_json(loads(r[14])), owner_pid=r[15], steps_used=r[16], tokens_used=r[17],
        wall_used=r[18], depth=r[19], root_run_id=r[20] or r[0], agent=r[21],
    )


@record
class TreePlace:
    """Where a spawned child sits in its tree.

    Attributes:
        root_run_id: The tree's root run.
        depth: The child's depth (the root is 0).
        spawn_step: The parent's step whose call spawned it.
        spawn_call: That call's index in the step.
        agent: The agent definition it runs as, or None for a plain child.
    """

    root_run_id: str
    depth: int
    spawn_step: int
    spawn_call: int
    agent: str | None = None

    def row(self) -> tuple[int, str, int, int, str | None]:
        """The values of the `runs` columns the migration added, in order."""
        return (self.depth, self.root_run_id, self.spawn_step, self.spawn_call, self.agent)


class TreeQueries(StoreParts):
    """Reading a tree of runs."""

    def _tree_read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn.execute(sql, params).fetchall())
        except sqlite3.Error as exc:
            raise StateError(f"store failed while reading a tree of runs: {exc}") from exc

    def child_run(self, parent_run_id: str, step: int, call_index: int) -> RunRecord | None:
        """The child the parent's call (`step`, `call_index`) spawned, if it started."""
        rows = self._tree_read(
            RUN_COLUMNS + " FROM runs WHERE parent_run_id = ? AND spawn_step = ?"
            " AND spawn_call = ?", (parent_run_id, step, call_index))
        return run_record(rows[0]) if rows else None

    def count_children(self, run_id: str) -> int:
        """How many children `run_id` has spawned."""
        row = self._tree_read(
            "SELECT COUNT(*) FROM runs WHERE parent_run_id = ? AND spawn_step IS NOT NULL",
            (run_id,))[0]
        return int(row[0])

    def tree_runs(self, root_run_id: str) -> list[RunRecord]:
        """Every run of the tree rooted at `root_run_id` (the root first), by creation."""
        rows = self._tree_read(
            RUN_COLUMNS + " FROM runs WHERE run_id = ? OR root_run_id = ?"
            " ORDER BY CASE WHEN depth = 0 THEN 0 ELSE 1 END, created_at, run_id", (root_run_id, root_run_id))
        return [run_record(r) for r in rows]

    def interrupt_pending(self, run_id: str) -> bool:
        """Whether an `io interrupt` for `run_id` waits, unconsumed (read, not taken: a
        tree's children stop on their root's interrupt, which the root takes itself)."""
        return bool(self._tree_read(
            "SELECT 1 FROM run_inbox WHERE run_id = ? AND consumed_step IS NULL"
            " AND kind = 'interrupt' LIMIT 1", (run_id,)))

    def consume_interrupt(self, run_id: str, step: int) -> None:
        """Mark `run_id`'s pending interrupts taken at `step` (the root, once its tree
        stopped on one), leaving any steer for the next step."""
        try:
            with self._tx() as conn:
                conn.execute("UPDATE run_inbox SET consumed_step = ? WHERE run_id = ?"
                             " AND consumed_step IS NULL AND kind = 'interrupt'", (step, run_id))
        except sqlite3.Error as exc:
            raise StateError(f"store failed while writing the inbox: {exc}") from exc

    def tree_usage(self, root_run_id: str) -> tuple[int, int]:
        """(steps, billed tokens) recorded so far by every run of the tree.

        The steps are the checkpointed ones (their budget draws): a step a run stopped or
        paused in counts in its `steps_used` but is drawn again when a resume replays it.
        """
        row = self._tree_read(
            "SELECT (SELECT COALESCE(SUM(d.steps), 0) FROM budget_draws d JOIN runs r"
            " ON r.run_id = d.run_id WHERE r.run_id = ? OR r.root_run_id = ?),"
            " COALESCE(SUM(tokens_used), 0) FROM runs"
            " WHERE run_id = ? OR root_run_id = ?",
            (root_run_id, root_run_id, root_run_id, root_run_id))[0]
        return int(row[0]), int(row[1])
