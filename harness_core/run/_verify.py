"""Checking the gates when the model says it is done: the stop hooks, the answer's
schema, the gates (with what became of their inputs), and the verdict recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness_core.events import Event, EventKind
from harness_core.messages import Message
from harness_core.run._answer import ANSWER_RETRIES, SCHEMA_REFUSED, check_answer
from harness_core.run._drive_state import _Drive, _Stop
from harness_core.run._hooks import refused_stop
from harness_core.run._inputs import inputs_changed
from harness_core.run._parts import RunParts
from harness_core.run._spec import RunOutcome
from harness_core.run._stop import CHILD_GATE_FAILED, Ender
from harness_core.store import CheckpointState, InputsFate, RunStatus

if TYPE_CHECKING:
    from harness_core.clock import Clock
    from harness_core.verification import GateResult

__all__ = ["Verifier"]


class Verifier:
    """Deciding whether a run that says it is done is done; `ender` ends the drive when
    the checks decide it ends."""

    def __init__(self, parts: RunParts, ender: Ender) -> None:
        self.parts = parts
        self.ender = ender

    def done(self, drive: _Drive, step: int) -> RunOutcome | None:
        """The model says it is done: run the gates. A root that fails one goes on (the
        failure is its next observation); a child ends, and its parent sees the verdict.
        A stop hook that refuses the end sends the run on before the answer and the gates
        are checked."""
        going_on = refused_stop(drive.hooks, self.parts.store, drive.run_id, step)
        if going_on is not None:
            drive.context.append(going_on)
            return None
        schema = drive.spec.answer_schema
        if schema is not None and self.parts.tree is None:
            problem = check_answer(self.ender.last_text(drive.run_id), schema).problem
            if problem is not None:
                return self._bad_answer(drive, step, problem)
        return self._gates_decided(drive, passed=self._verify(drive, step))

    def resumed_done(self, drive: _Drive, step: int, verified: bool | None) -> RunOutcome | None:
        """A run stopped after its final answer: end it as that answer's checks decided.

        `verified` None: the gates never ran (stopped before them), so they run now. True:
        they ran and passed (or there were none) and only the run's end was not recorded:
        it ends finished, without a new step. False: they failed; a root goes on (the
        failure is its next message), a child ends and its parent sees the verdict."""
        if verified is None:
            return self.done(drive, step)
        if verified:
            drive.verified = True if drive.spec.contract.verify else None
        return self._gates_decided(drive, passed=verified)

    def _gates_decided(self, drive: _Drive, *, passed: bool) -> RunOutcome | None:
        """The end a final answer's checks decide: passed, the run finishes; failed, a
        root goes on (None: the failure is its next message) and a child ends failed."""
        if passed:
            said = "every gate passed" if drive.verified else "no gates configured"
            return self.ender.end(drive, _Stop(RunStatus.FINISHED, f"done; {said}", answered=True))
        if self.parts.tree is None:
            return None
        return self.ender.end(drive, _Stop(RunStatus.FAILED, CHILD_GATE_FAILED, answered=True))

    def _bad_answer(self, drive: _Drive, step: int, problem: str) -> RunOutcome | None:
        """A final answer that does not match `--output-schema`: back to the model while
        retries last, then the run fails (exit 1) with the reason."""
        drive.answer_retries += 1
        self.parts.emit(Event(EventKind.ANSWER_REJECTED, drive.run_id, {
            "step": step, "problem": problem, "attempt": drive.answer_retries,
            "retries_left": max(ANSWER_RETRIES + 1 - drive.answer_retries, 0)}))
        if drive.answer_retries > ANSWER_RETRIES:
            return self.ender.end(drive, _Stop(
                RunStatus.FAILED, f"{SCHEMA_REFUSED} after {ANSWER_RETRIES} retries: {problem}"))
        message = Message.user(f"Your final answer does not match the required JSON Schema:"
                               f" {problem}\nReply with only the corrected JSON value.")
        self.parts.store.append_messages(drive.run_id, step, [message])
        drive.context.append(message)
        return None

    def _verify(self, drive: _Drive, step: int) -> bool:
        contract = drive.spec.contract
        changed = sorted(drive.changed | {e.edit.path for e in self.parts.store.edits(drive.run_id)})
        baseline = self.parts.store.run(drive.run_id).settings.get("gate_inputs")
        handles = drive.ctx.services.handles  # nothing of the agent's runs past here
        if handles is not None and handles.end_running():
            self.parts.emit(Event(EventKind.WARNING, drive.run_id, {
                "text": "background handles still running were ended before the gates"}))
        # Before any gate runs: a gate's own writes (caches, reports) are not the agent's.
        fates = [self._gate_inputs_fate(drive, baseline, index, c.command or c.kind.value)
                 for index, c in enumerate(contract.verify)]
        results = _run_gates(drive, changed, self.parts.clock) if contract.verify else []
        sandbox = drive.launchers.selected.backend.value
        failures: list[str] = []
        for result, inputs in zip(results, fates, strict=True):
            self.parts.store.record_verification(
                drive.run_id, step, result.criterion, result.passed, result.exit_status,
                result.output, duration_seconds=result.duration_seconds, sandbox=sandbox,
                inputs=inputs)
            self.parts.emit(Event(EventKind.VERIFICATION, drive.run_id, {
                "step": step, "command": result.criterion, "passed": result.passed,
                "exit_status": result.exit_status, "output": result.output[-2000:],
                "sandbox": sandbox, "duration_seconds": round(result.duration_seconds, 3),
                "inputs_untouched": inputs.untouched if inputs else None,
                "modified_inputs": list(inputs.modified) if inputs else [],
            }))
            if not result.passed:
                failures.append(f"$ {result.criterion}\n(exit {result.exit_status})\n"
                                f"{result.output[-4000:]}")
        passed = not failures
        drive.verified = passed if results else None
        self.parts.store.update_checkpoint_state(
            drive.run_id, step, CheckpointState(step, done=True, verified=passed))
        if not passed:
            message = Message.user("Verification failed; the task is not done yet.\n\n"
                                   + "\n\n".join(failures))
            self.parts.store.append_messages(drive.run_id, step, [message])
            drive.context.append(message)
        return passed

    def _gate_inputs_fate(
        self, drive: _Drive, baseline: object, index: int, criterion: str
    ) -> InputsFate | None:
        """What became of gate `index`'s inputs since the run started (warned when changed)."""
        entries = baseline if isinstance(baseline, list) else None
        change = inputs_changed(drive.spec.workspace, entries, index)
        if change is None or entries is None:
            return None
        if change.modified:
            self.parts.emit(Event(EventKind.WARNING, drive.run_id, {
                "text": f"gate inputs were modified by the agent ({criterion}): "
                        + ", ".join(change.modified),
                "gate": criterion, "modified_inputs": list(change.modified),
                "editable": change.editable}))
        patterns = entries[index].get("inputs", [])
        return InputsFate(None if patterns is None else tuple(patterns), change.editable,
                          change.untouched, tuple(change.modified))


def _run_gates(drive: _Drive, changed: list[str], clock: Clock) -> list[GateResult]:
    """The contract's gates, run; the gate runner is imported only by a run that has one."""
    from harness_core.verification import run_gates

    return run_gates(drive.spec.contract, drive.spec.workspace, drive.launchers.gates,
                     changed=changed, clock=clock, documents=drive.spec.documents)
