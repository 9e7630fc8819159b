"""Acting on a completion: each tool call's intent recorded before it runs, the
operator's decision on a paused call applied, spawns handed to `_spawn`, and each
observation recorded (the step's last one with its checkpoint)."""

from __future__ import annotations

from typing import Any

from harness_core.errors import ToolError
from harness_core.events import Event, EventKind
from harness_core.messages import Message, ToolCall, ToolResult, escape_surrogates
from harness_core.run._drive_state import _Drive, _Stop
from harness_core.run._runner_base import _RunnerBase
from harness_core.run._spawn import run_spawns
from harness_core.store import CheckpointState, Pause, RunStatus
from harness_core.tool_data import AnswerData, FileWritten, PlanData
from harness_core.tools import PauseRequested, ToolOutcome

__all__ = ["INTERRUPTED_OBSERVATION", "_ActPhase"]

INTERRUPTED_OBSERVATION = (
    "interrupted: the harness stopped while this call was running, so its outcome is"
    " unknown. It was not run again. Check the workspace before deciding whether to repeat it."
)


class _ActPhase(_RunnerBase):
    """Running a step's tool calls."""

    def _run_calls_kept(self, drive: _Drive, step: int, calls: tuple[ToolCall, ...],
                        **resume: Any) -> None:
        """`_run_calls` between the workspace snapshots of `io rewind` and `io undo`."""
        keeper = drive.snapshots if calls else None
        if keeper is None:
            self._run_calls(drive, step, calls, **resume)
            return
        keeper.before(step)
        try:
            self._run_calls(drive, step, calls, **resume)
        finally:
            keeper.after(step)

    def _run_calls(
        self,
        drive: _Drive,
        step: int,
        calls: tuple[ToolCall, ...],
        *,
        pause: Pause | None,
        approve: bool | None,
        answer: str | None,
    ) -> None:
        entries = ({e.call_index: e for e in self.store.ledger(drive.run_id, step)}
                   if step <= drive.recorded_upto else {})
        index = 0
        while index < len(calls):
            if calls[index].name == "spawn_agent":
                end = index
                while end < len(calls) and calls[end].name == "spawn_agent":
                    end += 1
                if pause is not None and pause.step == step and index <= pause.call_index < end:
                    drive.pending_pause = None  # the decision goes to the child that waits
                held = run_spawns(self, drive, step, list(enumerate(calls))[index:end],
                                  pause=pause, approve=approve, answer=answer)
                if held is not None:
                    if held.status is RunStatus.INTERRUPTED and self._tree is None:
                        self.store.consume_interrupt(drive.run_id, step)
                    raise _Stop(held.status, held.reason, held.pause)
                index = end
                continue
            if index == len(calls) - 1 and drive.step_end is not None:
                drive.step_end.armed = True
            self._run_call(drive, step, index, calls[index], entries.get(index),
                           pause=pause, approve=approve, answer=answer)
            index += 1

    def _run_call(
        self,
        drive: _Drive,
        step: int,
        index: int,
        call: ToolCall,
        entry: Any,
        *,
        pause: Pause | None,
        approve: bool | None,
        answer: str | None,
    ) -> None:
        if entry is not None and entry.has_observation:
            return
        if entry is not None:
            paused_here = (pause is not None and pause.step == step
                           and pause.call_index == index)
            if not paused_here:
                if drive.toolbox.can_resume(call.name):  # a durable marker decides
                    self._execute(drive, step, index, call, resumed=True)
                else:
                    self._observe(drive, step, index, call,
                                  ToolOutcome(INTERRUPTED_OBSERVATION, is_error=True))
                return
            assert pause is not None
            self._apply_decision(drive, pause, call, approve=approve, answer=answer)
            if pause.kind == "question":
                self._answered(drive, step, index, call, answer or "")
                return
            drive.guard.preset(pause.target or "", approve=bool(approve),
                              by="operator")
        else:
            self.store.record_intent(drive.run_id, step, index, call)
        self._execute(drive, step, index, call)

    def _apply_decision(self, drive: _Drive, pause: Pause, call: ToolCall, *,
                        approve: bool | None, answer: str | None) -> None:
        """Record the operator's decision on the paused call as it applies; from here
        the call runs (or is answered), so a stop is no longer a pause lost."""
        drive.pending_pause = None
        content: dict[str, Any]
        if pause.kind == "question":
            kind, content = "answer", {"question": str(call.arguments.get("question", "")),
                                       "answer": answer or ""}
        else:
            kind = "approve" if approve else "deny"
            content = {"act": pause.act, "target": pause.target or "",
                       "call_id": pause.call_id}
        self.store.record_operator_input(drive.run_id, kind, content, pause.step)

    def _answered(self, drive: _Drive, step: int, index: int, call: ToolCall, text: str) -> None:
        self.store.answer_question(drive.run_id, step, index, text, "person")
        self._emit(Event(EventKind.QUESTION, drive.run_id, {
            "step": step, "question": call.arguments.get("question"), "answer": text,
            "answered_by": "person",
        }))
        self._observe(drive, step, index, call, ToolOutcome(
            f"The operator answered: {text}", data=AnswerData(text, "person")))

    def _execute(self, drive: _Drive, step: int, index: int, call: ToolCall, *,
                 resumed: bool = False) -> None:
        self._emit(Event(EventKind.TOOL_CALL, drive.run_id, {
            "step": step, "call_id": call.id, "name": call.name, "arguments": call.arguments,
        }))
        drive.ctx.call_ref = f"{drive.run_id}/{step}/{index}"
        try:
            outcome = (drive.hooks.pre_tool(step, index, call)
                       or drive.hooks.post_tool(step, index, call, drive.toolbox.call(
                           call, drive.ctx, resumed=resumed)))
        except PauseRequested as pause:
            if pause.kind == "question":
                self.store.record_question(drive.run_id, step, index, call.id,
                                           str(pause.payload.get("question", "")))
            payload = Pause.from_json({**pause.payload, "kind": pause.kind, "step": step,
                                       "call_index": index, "call_id": call.id,
                                       "tool": call.name})
            raise _Stop(RunStatus.PAUSED, f"paused for {pause.kind}", payload) from None
        except ToolError as exc:
            outcome = ToolOutcome(f"error: {exc}", is_error=True)
        self._report_plan_tool(drive, step, index, call, outcome)
        stalled = drive.progress.observe(call.key())
        if stalled is not None and drive.step_end is not None:
            drive.step_end.armed = False  # the run stops in this step: no checkpoint for it
        self._observe(drive, step, index, call, outcome, progress=drive.progress.last_mark)
        if stalled is not None:
            self._emit(Event(EventKind.STALL, drive.run_id, {"call": call.key(), "reason": stalled}))
            raise _Stop(RunStatus.STOPPED, stalled)

    def _report_plan_tool(
        self, drive: _Drive, step: int, index: int, call: ToolCall, outcome: ToolOutcome
    ) -> None:
        data = outcome.data
        if outcome.is_error:
            return
        if call.name == "todo_write" and isinstance(data, PlanData):
            self._emit(Event(EventKind.PLAN, drive.run_id, {
                "step": step, "items": [t.to_json() for t in data.todos],
                "revision": data.revision}))
        elif call.name == "ask_question" and isinstance(data, AnswerData):
            question = data.question or ""
            self.store.record_question(drive.run_id, step, index, call.id, question,
                                       answer=data.answer, answered_by=data.answered_by)
            self._emit(Event(EventKind.QUESTION, drive.run_id, {
                "step": step, "question": question, "answer": data.answer,
                "answered_by": data.answered_by}))

    def _observe(
        self, drive: _Drive, step: int, index: int, call: ToolCall, outcome: ToolOutcome,
        *, progress: str | None = None,
    ) -> None:
        # What the model and the trace see is valid UTF-8 whatever a tool returned; the
        # exact names stay in `data`, which the store keeps losslessly.
        output = escape_surrogates(outcome.output)
        result = ToolResult(call.id, call.name, self._redact(output) if self._redact else output,
                            outcome.is_error, outcome.media)
        edits = outcome.data.edits if isinstance(outcome.data, FileWritten) else ()
        for edit in edits:
            drive.changed.add(edit.path)
        end = drive.step_end
        if end is not None and end.armed and end.step == step:
            # The step's last call: its observation and the step's checkpoint commit
            # together (one transaction where there were two, the same order of effects).
            end.armed, end.at = False, self.clock.monotonic()
            self.store.record_observation(
                drive.run_id, step, index, result, data=outcome.data, refused=outcome.refused,
                edits=edits, checkpoint=CheckpointState(step, done=False), tokens=end.tokens,
                wall_seconds=end.at - drive.started, progress=progress)
        else:
            self.store.record_observation(drive.run_id, step, index, result, data=outcome.data,
                                          refused=outcome.refused, edits=edits,
                                          progress=progress)
        drive.context.append(Message.tool(result))
        self._emit(Event(EventKind.TOOL_RESULT, drive.run_id, {
            "step": step, "call_id": call.id, "name": call.name, "output": result.output,
            "is_error": outcome.is_error,
            "refused": outcome.refused.to_json() if outcome.refused else None,
        }))
