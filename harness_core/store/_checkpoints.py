"""Checkpoint queries: what each step committed, and the budget it drew.

`CheckpointQueries` is a mixin of `Store`. A step's checkpoint and its budget draw
commit in one transaction; a checkpoint of another `CHECKPOINT_FORMAT` is refused with
a typed error, never half-read."""

from __future__ import annotations

from typing import Any

from harness_core.errors import CheckpointFormatError
from harness_core.store._codec import dumps, loads
from harness_core.store._parts import StoreParts
from harness_core.store._parts import now as _now
from harness_core.store._records import (
    CheckpointRecord,
    CheckpointState,
)
from harness_core.store._schema import CHECKPOINT_FORMAT

__all__ = ["CheckpointQueries", "write_checkpoint"]


def write_checkpoint(conn: Any, run_id: str, step: int, state: CheckpointState, *,
                     tokens: int, wall_seconds: float) -> None:
    """The checkpoint and budget draw statements, inside the caller's transaction.

    On PostgreSQL the three writes are one statement (two data-modifying CTEs and the
    run's counters): the server runs one prepared statement where it ran three.
    """
    from harness_core.store._postgres import PgConnection

    checkpoint = (run_id, step, CHECKPOINT_FORMAT, _now(), dumps(state.to_json()))
    draw = (run_id, step, 1, tokens, wall_seconds)
    counters = (step + 1, tokens, wall_seconds, _now(), run_id)
    if isinstance(conn, PgConnection):
        conn.execute(_PG_CHECKPOINT, (*checkpoint, *draw, *counters))
        return
    conn.execute(
        "INSERT OR REPLACE INTO checkpoints(run_id, step_index, format, created_at, state)"
        " VALUES (?,?,?,?,?)", checkpoint)
    conn.execute(
        "INSERT OR REPLACE INTO budget_draws(run_id, step_index, steps, tokens,"
        " wall_seconds) VALUES (?,?,?,?,?)", draw)
    conn.execute(_COUNTERS, counters)


_COUNTERS = ("UPDATE runs SET steps_used = ?, tokens_used = tokens_used + ?,"
             " wall_used = wall_used + ?, updated_at = ? WHERE run_id = ?")
_PG_CHECKPOINT = (
    "WITH c AS (INSERT INTO checkpoints(run_id, step_index, format, created_at, state)"
    " VALUES (?,?,?,?,?) ON CONFLICT (run_id, step_index) DO UPDATE SET"
    " format = EXCLUDED.format, created_at = EXCLUDED.created_at, state = EXCLUDED.state),"
    " b AS (INSERT INTO budget_draws(run_id, step_index, steps, tokens, wall_seconds)"
    " VALUES (?,?,?,?,?) ON CONFLICT (run_id, step_index) DO UPDATE SET"
    " steps = EXCLUDED.steps, tokens = EXCLUDED.tokens, wall_seconds = EXCLUDED.wall_seconds)"
    " UPDATE runs SET steps_used = ?, tokens_used = tokens_used + ?,"
    " wall_used = wall_used + ?, updated_at = ? WHERE run_id = ?")


class CheckpointQueries(StoreParts):
    """Checkpoints and budget draws."""

    # ---- checkpoints and budgets --------------------------------------------------

    def record_checkpoint(
        self,
        run_id: str,
        step: int,
        state: CheckpointState,
        *,
        tokens: int,
        wall_seconds: float,
    ) -> None:
        """Commit the step's checkpoint and its budget draw in one transaction."""
        with self._tx() as conn:
            write_checkpoint(conn, run_id, step, state, tokens=tokens,
                             wall_seconds=wall_seconds)

    def update_checkpoint_state(self, run_id: str, step: int, state: CheckpointState) -> None:
        """Replace the state of an existing checkpoint (e.g. after the gates ran)."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE checkpoints SET state = ? WHERE run_id = ? AND step_index = ?",
                (dumps(state.to_json()), run_id, step),
            )

    def last_checkpoint(self, run_id: str) -> CheckpointRecord | None:
        """The newest checkpoint of the run.

        Raises:
            CheckpointFormatError: It was written in another format.
        """
        rows = self._query(
            "SELECT step_index, format, state FROM checkpoints WHERE run_id = ?"
            " ORDER BY step_index DESC LIMIT 1",
            (run_id,),
        )
        if not rows:
            return None
        step, fmt, state = rows[0]
        if int(fmt) != CHECKPOINT_FORMAT:
            raise CheckpointFormatError(int(fmt), CHECKPOINT_FORMAT)
        return CheckpointRecord(int(step), int(fmt), CheckpointState.from_json(loads(state)))

    def add_wall(self, run_id: str, seconds: float) -> None:
        """Draw wall-clock time spent outside a committed step (e.g. a final gate)."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE runs SET wall_used = wall_used + ? WHERE run_id = ?", (seconds, run_id)
            )
