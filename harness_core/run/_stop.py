"""How a drive ends: the outcome it returns, the status and queue it leaves in the
store, and what a finished run reports (its last answer, its last round of gates)."""

from __future__ import annotations

from collections.abc import Mapping

from harness_core.events import Event, EventKind
from harness_core.run._answer import check_answer
from harness_core.run._drive_state import _Drive, _Stop
from harness_core.run._parts import RunParts
from harness_core.run._spec import RunOutcome
from harness_core.store import RunStatus, VerificationRecord

__all__ = ["CHILD_GATE_FAILED", "Ender", "_verdict", "has_final_answer"]

CHILD_GATE_FAILED = "done, but a gate failed (the parent decides what next)"
"""The reason of a child that gave its final answer and failed a gate."""


def has_final_answer(status: RunStatus, reason: str | None) -> bool:
    """Whether a run that ended with `status` and `reason` ended on the model's final
    answer: finished, or a child's answer that failed a gate. A stopped, paused,
    interrupted or errored run, or one whose answer the schema refused, has none."""
    return status is RunStatus.FINISHED or (
        status is RunStatus.FAILED and reason == CHILD_GATE_FAILED)


class Ender:
    """Ending a drive, and what an ended run reports."""

    def __init__(self, parts: RunParts) -> None:
        self.parts = parts

    def last_text(self, run_id: str) -> str:
        """The text of the run's last committed completion ("" when it has none)."""
        last = self.parts.store.last_checkpoint(run_id)
        record = self.parts.store.step(run_id, last.step_index) if last is not None else None
        return record.text if record is not None else ""

    def answer(self, run_id: str, schema: Mapping[str, object] | None) -> str:
        """The run's final answer: its last text, or under an output schema the JSON
        document that text validated as ("" when it no longer validates)."""
        text = self.last_text(run_id)
        if schema is None or self.parts.tree is not None:
            return text
        return check_answer(text, schema).document

    def last_gates(self, run_id: str) -> tuple[VerificationRecord, ...]:
        """The last round of gates the run recorded (its gates report)."""
        records = self.parts.store.verifications(run_id)
        if not records:
            return ()
        last = records[-1].step_index
        return tuple(r for r in records if r.step_index == last)

    def end(self, drive: _Drive, stop: _Stop) -> RunOutcome:
        waiting = drive.pending_pause
        if waiting is not None and stop.status is not RunStatus.PAUSED:
            # The drive stopped before the paused call took the operator's decision: the
            # run still waits for it (nothing ran, so nothing is "outcome unknown").
            stop = _Stop(RunStatus.PAUSED, f"paused for {waiting.kind} (the resume stopped"
                         f" before it was applied: {stop.reason})", waiting)
        self.void_queue(drive.run_id, stop.status)
        now = self.parts.clock.monotonic()
        self.parts.store.add_wall(drive.run_id, now - drive.started)
        drive.started = now
        gates = self.last_gates(drive.run_id)
        steps = self.steps_taken(drive.run_id)
        outcome = RunOutcome(drive.run_id, stop.status, stop.reason, steps, stop.pause,
                             _verdict(gates), gates,
                             self.answer(drive.run_id, drive.spec.answer_schema)
                             if stop.answered else "")
        self.parts.store.set_status(drive.run_id, stop.status, reason=stop.reason, pause=stop.pause,
                              exit_code=outcome.exit_code, steps=steps)
        if stop.status is RunStatus.PAUSED and stop.pause is not None:
            kind = EventKind.QUESTION if stop.pause.kind == "question" else EventKind.APPROVAL
            self.parts.emit(Event(kind, drive.run_id, {"pending": True, **stop.pause.to_json()}))
        self.parts.emit(Event(EventKind.RUN_FINISHED, drive.run_id, {
            "status": stop.status.value, "reason": stop.reason, "steps": steps}))
        return outcome

    def steps_taken(self, run_id: str) -> int:
        """How many steps the run took: its checkpointed steps, and the step it stopped
        in (a stall, a pause or an interrupt inside a step records its completion but no
        checkpoint). Every view of the run (`io runs`, `io trace`, `--json`, the HTML
        page) counts the same steps."""
        steps = self.parts.store.run(run_id).steps_used
        while self.parts.store.step(run_id, steps) is not None:
            steps += 1
        return steps

    def void_queue(self, run_id: str, status: RunStatus) -> None:
        """Messages that can no longer land where they were aimed: an interrupt for a run
        that stopped anyway, and, once it has ended, a steer it will never read."""
        if status is RunStatus.RUNNING:
            return
        self.parts.store.void_inbox(run_id, ["interrupt"],
                              f"the run {status.value} before its next step boundary")
        if status.is_terminal:
            self.parts.store.void_inbox(run_id, ["steer"],
                                  f"the run {status.value} before its next step boundary")


def _verdict(gates: tuple[VerificationRecord, ...]) -> bool | None:
    """Whether the last gate round passed (None: no round ran)."""
    return all(g.passed for g in gates) if gates else None
