"""Oversight queries: refusals and approvals with the rule and layer that decided,
verification results, and the steering inbox (`io steer`, `io interrupt`).

`OversightQueries` is a mixin of `Store`; nothing here decides anything, it records
and reads what the gate, the gates and the operator did."""

from __future__ import annotations

from typing import Any

from harness_core.messages import escape_surrogates
from harness_core.store._codec import dumps, loads
from harness_core.store._parts import StoreParts
from harness_core.store._parts import now as _now
from harness_core.store._records import (
    InputsFate,
    PolicyEventRecord,
    VerificationRecord,
)

INBOX_CHANNEL = "io_inbox"  # the PostgreSQL channel post_inbox notifies on

__all__ = ["OversightQueries"]

class OversightQueries(StoreParts):
    """Policy events, verifications and the inbox of each run."""

    # ---- policy, verification, inbox ----------------------------------------------

    def record_policy_event(
        self,
        run_id: str,
        step: int | None,
        *,
        act: str,
        target: str,
        verdict: str,
        reason: str,
        rule: str | None,
        layer: str | None,
        decided_by: str,
    ) -> None:
        """Record a refusal or an approver's decision (a silent allow records nothing)."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO policy_events(run_id, step_index, created_at, act, target, verdict,"
                " reason, rule, layer, decided_by) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, step, _now(), act, target, verdict, reason, rule, layer, decided_by),
            )

    def policy_events(self, run_id: str) -> list[PolicyEventRecord]:
        """Refusals and approver decisions of the run, in order."""
        rows = self._query(
            "SELECT step_index, created_at, act, target, verdict, reason, rule, layer, decided_by"
            " FROM policy_events WHERE run_id = ? ORDER BY id",
            (run_id,),
        )
        return [PolicyEventRecord(*r) for r in rows]

    def record_verification(
        self, run_id: str, step: int, criterion: str, passed: bool, exit_status: int | None,
        output: str, *, duration_seconds: float | None = None, sandbox: str | None = None,
        inputs: InputsFate | None = None,
    ) -> None:
        """Record one gate's result (with how long it ran, where, and its inputs' fate)."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO verifications(run_id, step_index, created_at, criterion, passed,"
                " exit_status, output, duration_seconds, sandbox, inputs)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, step, _now(), escape_surrogates(criterion), 1 if passed else 0,
                 exit_status, escape_surrogates(output), duration_seconds, sandbox,
                 None if inputs is None else dumps(inputs.to_json())),
            )

    def verifications(self, run_id: str) -> list[VerificationRecord]:
        """Every gate result of the run, in order."""
        rows = self._query(
            "SELECT step_index, criterion, passed, exit_status, output, duration_seconds,"
            " sandbox, inputs FROM verifications WHERE run_id = ? ORDER BY id",
            (run_id,),
        )
        return [VerificationRecord(r[0], r[1], bool(r[2]), r[3], r[4], r[5], r[6],
                                   _fate(loads(r[7]))) for r in rows]

    def post_inbox(self, run_id: str, kind: str, body: dict[str, Any]) -> None:
        """Leave an operator message (steer, interrupt) for the run's next step boundary."""
        self.run(run_id)
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO run_inbox(run_id, kind, body, created_at) VALUES (?,?,?,?)",
                (run_id, kind, dumps(body), _now()),
            )
            if self.backend == "postgresql":  # wakes the driver's has_inbox (at commit)
                conn.execute("SELECT pg_notify(?, ?)", (INBOX_CHANNEL, run_id))

    def take_inbox(self, run_id: str, step: int) -> list[tuple[str, dict[str, Any]]]:
        """Consume pending operator messages at a step boundary, oldest first."""
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT id, kind, body FROM run_inbox WHERE run_id = ? AND consumed_step IS NULL"
                " ORDER BY id",
                (run_id,),
            ).fetchall()
            if rows:
                conn.executemany(
                    "UPDATE run_inbox SET consumed_step = ? WHERE id = ?",
                    [(step, r[0]) for r in rows],
                )
        return [(str(r[1]), loads(r[2])) for r in rows]

    def has_inbox(self, run_id: str) -> bool:
        """Whether an operator message waits (a cheap read, no transaction).

        On PostgreSQL the driver's connection listens for `post_inbox`'s notification,
        so a step asks the server only after one came (or on the first call, which
        starts listening): no round trip a step for an inbox that is almost always empty.
        """
        if self.backend == "postgresql":
            conn: Any = self._conn
            if conn.listening(INBOX_CHANNEL):
                if not conn.take_notified(INBOX_CHANNEL, run_id):
                    return False
            else:
                conn.listen(INBOX_CHANNEL)
        rows = self._query(
            "SELECT 1 FROM run_inbox WHERE run_id = ? AND consumed_step IS NULL LIMIT 1", (run_id,)
        )
        return bool(rows)


def _fate(data: Any) -> InputsFate | None:
    return InputsFate.from_json(data) if isinstance(data, dict) else None
