"""How a drive ends: the outcome it returns, the status and queue it leaves in the
store, and what a finished run reports (its last answer, its last round of gates)."""

from __future__ import annotations

from harness_core.events import Event, EventKind
from harness_core.run._drive_state import _Drive, _Stop
from harness_core.run._runner_base import _RunnerBase
from harness_core.run._spec import RunOutcome
from harness_core.store import RunStatus, VerificationRecord

__all__ = ["_StopPhase", "_verdict"]


class _StopPhase(_RunnerBase):
    """Ending a drive."""

    def _last_text(self, run_id: str) -> str:
        """The text of the run's last committed completion ("" when it has none)."""
        last = self.store.last_checkpoint(run_id)
        record = self.store.step(run_id, last.step_index) if last is not None else None
        return record.text if record is not None else ""

    def _last_gates(self, run_id: str) -> tuple[VerificationRecord, ...]:
        """The last round of gates the run recorded (its gates report)."""
        records = self.store.verifications(run_id)
        if not records:
            return ()
        last = records[-1].step_index
        return tuple(r for r in records if r.step_index == last)

    def _end(self, drive: _Drive, stop: _Stop) -> RunOutcome:
        waiting = drive.pending_pause
        if waiting is not None and stop.status is not RunStatus.PAUSED:
            # The drive stopped before the paused call took the operator's decision: the
            # run still waits for it (nothing ran, so nothing is "outcome unknown").
            stop = _Stop(RunStatus.PAUSED, f"paused for {waiting.kind} (the resume stopped"
                         f" before it was applied: {stop.reason})", waiting)
        self._void_queue(drive.run_id, stop.status)
        now = self.clock.monotonic()
        self.store.add_wall(drive.run_id, now - drive.started)
        drive.started = now
        gates = self._last_gates(drive.run_id)
        steps = self.store.run(drive.run_id).steps_used
        outcome = RunOutcome(drive.run_id, stop.status, stop.reason, steps, stop.pause,
                             _verdict(gates), gates,
                             self._last_text(drive.run_id) if stop.answered else "")
        self.store.set_status(drive.run_id, stop.status, reason=stop.reason, pause=stop.pause,
                              exit_code=outcome.exit_code)
        if stop.status is RunStatus.PAUSED and stop.pause is not None:
            kind = EventKind.QUESTION if stop.pause.kind == "question" else EventKind.APPROVAL
            self._emit(Event(kind, drive.run_id, {"pending": True, **stop.pause.to_json()}))
        self._emit(Event(EventKind.RUN_FINISHED, drive.run_id, {
            "status": stop.status.value, "reason": stop.reason, "steps": steps}))
        return outcome


    def _void_queue(self, run_id: str, status: RunStatus) -> None:
        """Messages that can no longer land where they were aimed: an interrupt for a run
        that stopped anyway, and, once it has ended, a steer it will never read."""
        if status is RunStatus.RUNNING:
            return
        self.store.void_inbox(run_id, ["interrupt"],
                              f"the run {status.value} before its next step boundary")
        if status.is_terminal:
            self.store.void_inbox(run_id, ["steer"],
                                  f"the run {status.value} before its next step boundary")


def _verdict(gates: tuple[VerificationRecord, ...]) -> bool | None:
    """Whether the last gate round passed (None: no round ran)."""
    return all(g.passed for g in gates) if gates else None
