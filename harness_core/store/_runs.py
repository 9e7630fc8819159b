"""Run queries: a run's row, its lookup by id or prefix, who drives it, and its status.

`RunQueries` is a mixin of `Store` (it uses `self._query`, `self._tx()` and the
backend's drive locks). A run is driven by one process at a time: `acquire_run` records
the driver and refuses a second live one."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from harness_core.errors import AmbiguousId, RunInUse, RunNotFound
from harness_core.messages import Message, escape_surrogates
from harness_core.store._codec import dumps, loads
from harness_core.store._documents import document_ref, resolved
from harness_core.store._parts import HOST, AliveCheck, StoreParts
from harness_core.store._parts import now as _now
from harness_core.store._records import (
    DriveRecord,
    Pause,
    RunRecord,
    RunStatus,
)
from harness_core.store._tree import RUN_COLUMNS, TreePlace, run_record

__all__ = ["RunQueries"]

_RUN_BY_ID = (
    RUN_COLUMNS + " FROM runs WHERE run_id = ?"
)
_RUN_BY_PREFIX = (
    RUN_COLUMNS + " FROM runs WHERE run_id = ? OR run_id LIKE ?"
    " ESCAPE '!' ORDER BY run_id = ? DESC, created_at DESC LIMIT 11"
)
_RUN_BY_PREFIX_RANGE = (
    RUN_COLUMNS + " FROM runs WHERE run_id >= ? AND run_id < ? AND run_id LIKE ? ESCAPE '!'"
    " ORDER BY run_id = ? DESC, created_at DESC LIMIT 11"
)
"""SQLite's LIKE uses no index (it ignores case); the byte range before it does. Not on
PostgreSQL, whose collation may not order a prefix before its extensions."""
_RUNS_RECENT = (
    RUN_COLUMNS + " FROM runs ORDER BY created_at DESC LIMIT ?"
)
_STATUS_MARKS = ", ".join("?" * len(RunStatus))


def _runs_filtered(workspace: bool, statuses: bool) -> str:
    """Runs of one workspace and/or of some statuses, newest first: each combination is
    a statement of its own, so the planner uses `runs_workspace` for a workspace
    (a ``? = 0 OR`` switch in one statement made it read the table whole). The status
    list is padded to one placeholder per `RunStatus`."""
    where = " AND ".join(
        ([("workspace = ?")] if workspace else [])
        + ([f"status IN ({_STATUS_MARKS})"] if statuses else []))
    return RUN_COLUMNS + f" FROM runs WHERE {where} ORDER BY created_at DESC LIMIT ?"


_RUNS_OF_SESSION = (
    RUN_COLUMNS + " FROM runs WHERE session_id = ? ORDER BY cre"
    "ated_at DESC LIMIT ?"
)
_RUNS_OF_PARENT = (
    RUN_COLUMNS + " FROM runs WHERE parent_run_id = ? ORDER BY created_at, run_id"
)


class RunQueries(StoreParts):
    """The `runs` table and the drives of each run."""

    # ---- runs -------------------------------------------------------------------

    def create_run(
        self,
        run_id: str,
        *,
        goal: str,
        workspace: str,
        model: str | None,
        settings: dict[str, Any],
        policy: dict[str, Any],
        sandbox: dict[str, Any] | None,
        messages: Sequence[Message],
        session_id: str | None = None,
        parent_run_id: str | None = None,
        owner_pid: int | None = None,
        owner_started: float | None = None,
        tree: TreePlace | None = None,
    ) -> None:
        """Record a new run with its opening messages, owned by the calling process.

        `tree` places a spawned child in its tree (root, depth, the spawning call)."""
        now = _now()
        if owner_pid is not None:
            self._hold("run", run_id)
        redact = getattr(self, "_redact", None)
        with self._tx() as conn:
            policy_ref = document_ref(conn, policy, redact)
            sandbox_ref = document_ref(conn, sandbox, redact)
            conn.execute(
                "INSERT INTO runs(run_id, created_at, updated_at, status, goal, workspace, model,"
                " session_id, parent_run_id, settings, policy, sandbox, owner_pid, owner_started,"
                " depth, root_run_id, spawn_step, spawn_call, agent)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, now, now, RunStatus.RUNNING.value, escape_surrogates(goal), workspace,
                 model, session_id, parent_run_id, document_ref(conn, settings, redact),
                 policy_ref, sandbox_ref, owner_pid, owner_started,
                 *(tree.row() if tree is not None else (0, run_id, None, None, None))),
            )
            self._insert_messages(conn, run_id, -1, messages)
            conn.execute(
                "INSERT INTO drives(run_id, seq, started_at, pid, policy, sandbox, host)"
                " VALUES (?, 0, ?, ?, ?, ?, ?)",
                (run_id, now, owner_pid or os.getpid(), policy_ref, sandbox_ref, HOST),
            )

    def run(self, run_id: str) -> RunRecord:
        """The run's record.

        Raises:
            RunNotFound: No such run.
        """
        rows = self._query(_RUN_BY_ID, (run_id,))
        if not rows:
            raise RunNotFound(run_id)
        return run_record(rows[0])

    def find_run(self, prefix: str) -> RunRecord:
        """The run whose id is `prefix` or uniquely starts with it (an empty prefix names
        no run, however few the store holds)."""
        if not prefix.strip():
            raise RunNotFound(prefix)
        pattern = prefix.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%"
        if self.backend == "sqlite":
            rows = self._query(_RUN_BY_PREFIX_RANGE,
                               (prefix, prefix + "\U0010ffff", pattern, prefix))
        else:
            rows = self._query(_RUN_BY_PREFIX, (prefix, pattern, prefix))
        if not rows:
            raise RunNotFound(prefix)
        if len(rows) > 1 and rows[0][0] != prefix:
            raise AmbiguousId("run", prefix, [str(r[0]) for r in rows])
        return run_record(rows[0])

    def list_runs(self, limit: int = 20, *, session_id: str | None = None,
                  workspace: str | None = None,
                  statuses: Sequence[RunStatus] = ()) -> list[RunRecord]:
        """The most recent runs, newest first; only those in `workspace` (its resolved
        path, as recorded) and with one of `statuses`, when given."""
        if session_id is not None:
            rows = self._query(_RUNS_OF_SESSION, (session_id, limit))
        elif workspace is None and not statuses:
            rows = self._query(_RUNS_RECENT, (limit,))
        else:
            values = [s.value for s in statuses]
            padded = (values * len(RunStatus))[:len(RunStatus)] if values else []
            rows = self._query(_runs_filtered(workspace is not None, bool(values)),
                               ([workspace] if workspace is not None else []) + padded
                               + [limit])
        return [run_record(r) for r in rows]

    def child_runs(self, run_id: str) -> list[RunRecord]:
        """The runs whose parent is `run_id`, oldest first (one level of a tree)."""
        return [run_record(r) for r in self._query(_RUNS_OF_PARENT, (run_id,))]

    def acquire_run(self, run_id: str, pid: int, started: float, *, alive: AliveCheck) -> int:
        """Make the calling process the run's one driver; returns the drive number.

        A lock whose owner has died (or whose pid now belongs to another process) is
        reclaimed.

        Raises:
            RunInUse: A live process drives the run.
            RunNotFound: No such run.
        """
        with self._tx() as conn:
            row = conn.execute(
                "SELECT owner_pid, owner_started FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise RunNotFound(run_id)
            owner_pid, owner_started = row
            if owner_pid is not None and owner_pid != pid and self._held(
                    "run", run_id, owner_pid, owner_started, alive):
                raise RunInUse(run_id, int(owner_pid))
            if not self._hold("run", run_id):
                raise RunInUse(run_id, int(owner_pid or 0))
            conn.execute(
                "UPDATE runs SET owner_pid = ?, owner_started = ?, updated_at = ? WHERE run_id = ?",
                (pid, started, _now(), run_id),
            )
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM drives WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            return int(seq)

    def record_drive(
        self, run_id: str, seq: int, pid: int, policy: dict[str, Any], sandbox: dict[str, Any] | None
    ) -> None:
        """Record the policy and sandbox a resumed drive runs under (the audit of a resume)."""
        redact = getattr(self, "_redact", None)
        with self._tx() as conn:
            policy_ref = document_ref(conn, policy, redact)
            sandbox_ref = document_ref(conn, sandbox, redact)
            conn.execute(
                "INSERT OR REPLACE INTO drives(run_id, seq, started_at, pid, policy, sandbox, host)"
                " VALUES (?,?,?,?,?,?,?)",
                (run_id, seq, _now(), pid, policy_ref, sandbox_ref, HOST),
            )
            conn.execute(
                "UPDATE runs SET policy = ?, sandbox = ? WHERE run_id = ?",
                (policy_ref, sandbox_ref, run_id),
            )

    def drives(self, run_id: str) -> list[DriveRecord]:
        """Each drive of the run: when, which process, under which policy and sandbox."""
        rows = self._query(
            f"SELECT seq, started_at, pid, {resolved('policy')}, {resolved('sandbox')}"  # noqa: S608
            " FROM drives WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        return [DriveRecord(r[0], r[1], r[2], loads(r[3]), loads(r[4])) for r in rows]

    def release_run(self, run_id: str, pid: int) -> None:
        """Give up driving the run (only when the caller owns it)."""
        self._let_go("run", run_id)
        with self._tx() as conn:
            conn.execute(
                "UPDATE runs SET owner_pid = NULL, owner_started = NULL"
                " WHERE run_id = ? AND owner_pid = ?",
                (run_id, pid),
            )

    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        exit_code: int | None = None,
        reason: str | None = None,
        pause: Pause | None = None,
        steps: int | None = None,
    ) -> None:
        """Record where the run stands; `steps` (when given) is how many steps it took,
        counting a step it stopped in before that step's checkpoint."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE runs SET status = ?, exit_code = ?, reason = ?, pause = ?, updated_at = ?,"
                " steps_used = COALESCE(?, steps_used) WHERE run_id = ?",
                (status.value, exit_code, reason, dumps(pause.to_json()) if pause is not None else None,
                 _now(), steps, run_id),
            )
