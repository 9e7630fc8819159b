"""Operator input as part of the run: steer, interrupt, resume, approve, deny, answer,
budget.

Every input an operator gives a run is one row of `run_inbox`, with when it was given,
what it said, and where it landed. A steer or an interrupt waits there (`consumed_step`
NULL) until the run's next step boundary takes it (`OversightQueries.take_inbox`); a
resume, an approval, a denial or an answer is written as it applies, already landed,
so the boundary never takes it. A budget (`io resume RUN --max-steps N`) is written
with the run's new limits in the same transaction (`give_room`). An input that will never land (an interrupt queued
just before the run paused, a steer left when the run ended) is marked void with the
reason, never deleted: the trace shows what the operator said and what became of it.

`OperatorQueries` is a mixin of `Store`; it records, it decides nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness_core._record import record
from harness_core.errors import UsageError
from harness_core.store._codec import dumps, loads
from harness_core.store._documents import document_ref, resolved
from harness_core.store._parts import StoreParts
from harness_core.store._parts import now as _now

__all__ = ["OPERATOR_KINDS", "OPERATOR_SCHEMA_SQL", "OperatorInputRecord", "OperatorQueries"]

OPERATOR_KINDS: tuple[str, ...] = ("steer", "interrupt", "resume", "approve", "deny", "answer",
                                   "budget")
"""Every kind of operator input a run records. May grow."""

OPERATOR_SCHEMA_SQL = "ALTER TABLE run_inbox ADD COLUMN void_reason TEXT"
"""Why a queued input never landed (NULL: it landed, or still waits)."""


@record(slots=True)
class OperatorInputRecord:
    """One thing the operator told a run.

    Attributes:
        kind: One of `OPERATOR_KINDS`.
        created_at: When the operator gave it (ISO 8601, UTC).
        content: What it said: ``text`` for a steer; ``target`` (and ``act``) for an
            approval or a denial; ``question`` and ``answer`` for an answer; ``drive`` and
            ``stored_policy`` for a resume; the new limits (``max_steps``, ``max_tokens``,
            ``max_cost_usd``, ``wall_seconds``) and ``was`` (the status it had) for a budget.
        step: The step at which it landed (a steer or an interrupt: the boundary that
            took it; the others: the step they applied to); None while it waits or when void.
        void_reason: Why it never landed; None when it landed or still waits.
    """

    kind: str
    created_at: str
    content: dict[str, Any]
    step: int | None
    void_reason: str | None = None

    @property
    def state(self) -> str:
        """``landed``, ``pending`` or ``void``."""
        if self.void_reason is not None:
            return "void"
        return "pending" if self.step is None else "landed"

    def describe(self) -> str:
        """One line for a reader: what was said (never a secret: the operator's words)."""
        c = self.content
        if self.kind == "steer":
            return f"steer: {c.get('text', '')}"
        if self.kind in ("approve", "deny"):
            verb = "approved" if self.kind == "approve" else "denied"
            return f"{verb}: {c.get('target', '')}"
        if self.kind == "answer":
            return f"answered: {c.get('answer', '')}"
        if self.kind == "budget":
            limits = ", ".join(f"{k} {v}" for k, v in c.items() if k != "was")
            return f"more room: {limits}"
        if self.kind == "resume":
            flags = " under the stored policy" if c.get("stored_policy") else ""
            return f"resumed (drive {c.get('drive', '?')}){flags}"
        return self.kind

    def to_json(self) -> dict[str, Any]:
        """The record as `io trace --json` writes it."""
        return {"kind": self.kind, "created_at": self.created_at, "content": self.content,
                "step": self.step, "state": self.state, "void_reason": self.void_reason}


class OperatorQueries(StoreParts):
    """The operator's inputs to each run, queued or applied."""

    def record_operator_input(self, run_id: str, kind: str, content: dict[str, Any],
                              step: int) -> None:
        """Record an input that applies now, at `step` (a resume, approval, denial or
        answer): landed as it is written, so no step boundary takes it."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO run_inbox(run_id, kind, body, created_at, consumed_step)"
                " VALUES (?,?,?,?,?)", (run_id, kind, dumps(content), _now(), step))

    def give_room(self, run_id: str, limits: dict[str, int | float]) -> None:
        """Raise the run's budget to `limits` (``max_steps``, ``max_tokens``,
        ``max_cost_usd``, ``wall_seconds``): recorded as a ``budget`` input, kept in the
        run's settings (`run_overrides`, so every later resume applies it too), and a run a
        budget or the stall detector stopped is made resumable again.

        Raises:
            UsageError: The run finished or failed (there is nothing to give room to).
        """
        with self._tx() as conn:
            row = conn.execute(  # settings: a document reference, or JSON on old rows
                f"SELECT status, {resolved('settings')}, steps_used FROM runs"  # noqa: S608
                " WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise UsageError(f"no run {run_id}")
            status, settings_json, steps = str(row[0]), loads(row[1]), int(row[2])
            if status in ("finished", "failed"):
                raise UsageError(f"run {run_id} has {status}: a budget flag gives room only to"
                                 " a run that can go on", hint=f"`io trace {run_id}`")
            settings = settings_json if isinstance(settings_json, dict) else {}
            overrides = settings.get("run_overrides")
            overrides = dict(overrides) if isinstance(overrides, dict) else {}
            overrides.pop("max_steps", None)  # `--max-steps` of `io run`: superseded
            overrides["budget"] = {**(overrides.get("budget") or {}), **limits}
            settings["run_overrides"] = overrides
            conn.execute(
                "INSERT INTO run_inbox(run_id, kind, body, created_at, consumed_step)"
                " VALUES (?,?,?,?,?)",
                (run_id, "budget", dumps({**limits, "was": status}), _now(), steps))
            # A stopped run goes on as one that was interrupted: the resume drives it.
            conn.execute(
                "UPDATE runs SET settings = ?, updated_at = ?,"
                " status = CASE status WHEN 'stopped' THEN 'interrupted' ELSE status END"
                " WHERE run_id = ?",
                (document_ref(conn, settings, getattr(self, "_redact", None)), _now(), run_id))

    def void_inbox(self, run_id: str, kinds: Iterable[str], reason: str) -> None:
        """Mark `run_id`'s waiting inputs of `kinds` as never to land, with `reason`."""
        wanted = tuple(kinds)
        if not wanted:
            return
        marks = ",".join("?" * len(wanted))
        sql = ("UPDATE run_inbox SET void_reason = ?, consumed_step = -1 WHERE run_id = ?"  # noqa: S608
               f" AND consumed_step IS NULL AND kind IN ({marks})")  # only '?' marks
        with self._tx() as conn:
            conn.execute(sql, (reason, run_id, *wanted))

    def operator_inputs(self, run_id: str) -> list[OperatorInputRecord]:
        """Every input the operator gave `run_id`, in the order given."""
        rows = self._query(
            "SELECT kind, created_at, body, consumed_step, void_reason FROM run_inbox"
            " WHERE run_id = ? ORDER BY id", (run_id,))
        out: list[OperatorInputRecord] = []
        for kind, created_at, body, step, void in rows:
            content = loads(body)
            out.append(OperatorInputRecord(
                str(kind), str(created_at), content if isinstance(content, dict) else {},
                None if void is not None or step is None else int(step),
                None if void is None else str(void)))
        return out
