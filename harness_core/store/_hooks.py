"""Hook queries: each hook invocation a run made, recorded before and after it ran.

`HookQueries` is a mixin of `Store`. A row is written when a hook is about to run
(`begin_hook`) and completed with its answer when it has run (`finish_hook`), like the
ledger's intent and observation. A resumed run reads the row back: a finished hook's
answer is replayed instead of running the hook again, and a hook that was started but
never finished (the process died while it ran) is not run a second time. Nothing here
decides anything.
"""

from __future__ import annotations

from typing import Any

from harness_core._record import record
from harness_core.messages import Message
from harness_core.store._codec import dumps, loads
from harness_core.store._parts import StoreParts
from harness_core.store._parts import now as _now
from harness_core.store._records import CheckpointState

__all__ = ["HOOK_SCHEMA_SQL", "HookQueries", "HookRecord"]

HOOK_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS hook_runs (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    call_index INTEGER NOT NULL,
    event TEXT NOT NULL,
    hook TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    answer TEXT,
    PRIMARY KEY (run_id, step_index, call_index, event, hook)
)
"""
"""The hook_runs table (migration 0016_hooks). `call_index` is -1 for an event that
belongs to no tool call (`stop`); `answer` is NULL until the hook finished."""


@record
class HookRecord:
    """One recorded hook invocation.

    Attributes:
        event: The hook event (``pre_tool``, ``post_tool``, ``stop``, ``child_stop``).
        hook: The hook's name.
        step_index: The step it ran in.
        call_index: The tool call it ran for (-1: none).
        started_at: When it was started.
        finished_at: When its answer was recorded (None: it never finished).
        answer: Its answer as JSON (None: it never finished).
    """

    event: str
    hook: str
    step_index: int
    call_index: int
    started_at: str
    finished_at: str | None
    answer: dict[str, Any] | None

    @property
    def is_finished(self) -> bool:
        """Whether the hook's answer was recorded."""
        return self.answer is not None


class HookQueries(StoreParts):
    """The hook invocations of each run."""

    def hook_run(
        self, run_id: str, step: int, call_index: int, event: str, hook: str
    ) -> HookRecord | None:
        """The recorded invocation of `hook` for (`step`, `call_index`, `event`), if any."""
        rows = self._query(
            "SELECT event, hook, step_index, call_index, started_at, finished_at, answer"
            " FROM hook_runs WHERE run_id = ? AND step_index = ? AND call_index = ?"
            " AND event = ? AND hook = ?",
            (run_id, step, call_index, event, hook),
        )
        return _record(rows[0]) if rows else None

    def hook_runs(self, run_id: str) -> list[HookRecord]:
        """Every recorded hook invocation of the run, in the order they started."""
        rows = self._query(
            "SELECT event, hook, step_index, call_index, started_at, finished_at, answer"
            " FROM hook_runs WHERE run_id = ? ORDER BY started_at, step_index, call_index",
            (run_id,),
        )
        return [_record(r) for r in rows]

    def begin_hook(self, run_id: str, step: int, call_index: int, event: str, hook: str) -> None:
        """Record that `hook` is about to run (before it starts); a row of an earlier,
        unfinished start of the same hook is replaced."""
        key = (run_id, step, call_index, event, hook)
        with self._tx() as conn:
            conn.execute(
                "DELETE FROM hook_runs WHERE run_id = ? AND step_index = ? AND call_index = ?"
                " AND event = ? AND hook = ? AND answer IS NULL", key)
            conn.execute(
                "INSERT INTO hook_runs(run_id, step_index, call_index, event, hook, started_at)"
                " VALUES (?,?,?,?,?,?)", (*key, _now()))

    def finish_hook(
        self, run_id: str, step: int, call_index: int, event: str, hook: str,
        answer: dict[str, Any],
    ) -> None:
        """Record the answer of a hook `begin_hook` recorded."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE hook_runs SET finished_at = ?, answer = ? WHERE run_id = ?"
                " AND step_index = ? AND call_index = ? AND event = ? AND hook = ?",
                (_now(), dumps(answer), run_id, step, call_index, event, hook),
            )

    def refuse_stop(self, run_id: str, step: int, message: Message) -> None:
        """A stop hook refused the run's end at `step`: append `message` (why the run
        goes on) and mark the step not done, in one transaction, so a resumed run
        neither loses the message nor adds it twice."""
        state = CheckpointState(step, done=False)
        with self._tx() as conn:
            self._insert_messages(conn, run_id, step, [message])
            conn.execute(
                "UPDATE checkpoints SET state = ? WHERE run_id = ? AND step_index = ?",
                (dumps(state.to_json()), run_id, step),
            )


def _record(row: tuple[Any, ...]) -> HookRecord:
    answer = loads(row[6]) if row[6] is not None else None
    return HookRecord(str(row[0]), str(row[1]), int(row[2]), int(row[3]), str(row[4]),
                      row[5], answer if isinstance(answer, dict) else None)
