"""Acting on a completion: each tool call's intent recorded before it runs, the
operator's reply to a paused call applied, spawns handed to `_spawn`, and each
observation recorded (the step's last one with its checkpoint), all through the step's
`StepWrites`, which holds the ledger's order."""

from __future__ import annotations

from harness_core.errors import ToolError
from harness_core.events import Event, EventKind
from harness_core.messages import Message, ToolCall, ToolResult, escape_surrogates
from harness_core.run._drive_state import OperatorReply, _Drive, _Stop
from harness_core.run._ledger import StepWrites
from harness_core.run._parts import RunParts
from harness_core.run._spawn import ChildMaker, run_spawns
from harness_core.store import LedgerEntry, Pause, RunStatus
from harness_core.tool_data import AnswerData, FileWritten, PlanData
from harness_core.tools import PauseRequested, ToolOutcome

__all__ = ["INTERRUPTED_OBSERVATION", "Actor"]

INTERRUPTED_OBSERVATION = (
    "interrupted: the harness stopped while this call was running, so its outcome is"
    " unknown. It was not run again. Check the workspace before deciding whether to repeat it."
)


class Actor:
    """Running a step's tool calls. `children` makes the runner of a spawned child."""

    def __init__(self, parts: RunParts, children: ChildMaker) -> None:
        self.parts = parts
        self.children = children

    def run_step(self, drive: _Drive, writes: StepWrites, calls: tuple[ToolCall, ...],
                 reply: OperatorReply | None) -> None:
        """Run the step's calls in order, between the workspace snapshots of `io rewind`
        and `io undo`; a run of consecutive `spawn_agent` calls goes to `_spawn`.
        `reply` is the operator's decision on the call a resumed run paused at."""
        step = writes.step
        keeper = drive.snapshots if calls else None
        if keeper is not None:
            keeper.before(step)
        try:
            entries = ({e.call_index: e for e in self.parts.store.ledger(drive.run_id, step)}
                       if step <= drive.recorded_upto else {})
            index = 0
            while index < len(calls):
                if calls[index].name != "spawn_agent":
                    self.run_call(drive, writes, index, calls[index], entries.get(index),
                                  reply.for_call(step, index) if reply else None)
                    index += 1
                    continue
                end = index
                while end < len(calls) and calls[end].name == "spawn_agent":
                    end += 1
                pause = reply.pause if reply else None
                if pause is not None and pause.step == step and index <= pause.call_index < end:
                    drive.pending_pause = None  # the decision goes to the child that waits
                held = run_spawns(self.parts, self, drive, writes,
                                  list(enumerate(calls))[index:end], reply)
                if held is not None:
                    if held.status is RunStatus.INTERRUPTED and self.parts.tree is None:
                        self.parts.store.consume_interrupt(drive.run_id, step)
                    raise _Stop(held.status, held.reason, held.pause)
                index = end
        finally:
            if keeper is not None:
                keeper.after(step)

    def run_call(self, drive: _Drive, writes: StepWrites, index: int, call: ToolCall,
                 entry: LedgerEntry | None, reply: OperatorReply | None) -> None:
        """Run call `index` at most once: what its ledger `entry` holds decides.

        No entry: the intent commits, then the call runs. An observation: nothing runs.
        An intent alone: the call's outcome is unknown (the process died in it), so it is
        not run again, unless its tool can tell from a durable marker (`Toolbox.can_resume`)
        or the run paused at it, when `reply` is the operator's decision."""
        step = writes.step
        resumed = False
        if entry is None:
            writes.intent(index, call)
        elif entry.has_observation:
            return
        elif reply is None or reply.pause is None:
            if not drive.toolbox.can_resume(call.name):
                self.observe(drive, writes, index, call,
                             ToolOutcome(INTERRUPTED_OBSERVATION, is_error=True))
                return
            resumed = True
        else:
            self._apply_reply(drive, reply.pause, call, reply)
            if reply.pause.kind == "question":
                self._answered(drive, writes, index, call, reply.answer or "")
                return
            drive.guard.preset(reply.pause.target or "", approve=bool(reply.approve),
                               by="operator")
        self.parts.emit(Event(EventKind.TOOL_CALL, drive.run_id, {
            "step": step, "call_id": call.id, "name": call.name, "arguments": call.arguments,
        }))
        drive.ctx.call_ref = f"{drive.run_id}/{step}/{index}"
        try:
            outcome = (drive.hooks.pre_tool(step, index, call)
                       or drive.hooks.post_tool(step, index, call, drive.toolbox.call(
                           call, drive.ctx, resumed=resumed)))
        except PauseRequested as pause:
            raise self._paused(drive, step, index, call, pause) from None
        except ToolError as exc:
            outcome = ToolOutcome(f"error: {exc}", is_error=True)
        self._report_plan_tool(drive, step, index, call, outcome)
        stalled = drive.progress.observe(call.key())
        if stalled is not None:
            writes.hold()  # the run stops in this step: no checkpoint for it
        self.observe(drive, writes, index, call, outcome, progress=drive.progress.last_mark)
        if stalled is not None:
            self.parts.emit(Event(EventKind.STALL, drive.run_id,
                                  {"call": call.key(), "reason": stalled}))
            raise _Stop(RunStatus.STOPPED, stalled)

    def _paused(self, drive: _Drive, step: int, index: int, call: ToolCall,
                pause: PauseRequested) -> _Stop:
        """The stop for a call that asked to pause (an approval, a question)."""
        if pause.kind == "question":
            self.parts.store.record_question(drive.run_id, step, index, call.id,
                                             str(pause.payload.get("question", "")))
        payload = Pause.from_json({**pause.payload, "kind": pause.kind, "step": step,
                                   "call_index": index, "call_id": call.id, "tool": call.name})
        return _Stop(RunStatus.PAUSED, f"paused for {pause.kind}", payload)

    def _apply_reply(self, drive: _Drive, pause: Pause, call: ToolCall,
                     reply: OperatorReply) -> None:
        """Record the operator's decision on the paused call as it applies; from here
        the call runs (or is answered), so a stop is no longer a pause lost."""
        drive.pending_pause = None
        content: dict[str, object]
        if pause.kind == "question":
            kind, content = "answer", {"question": str(call.arguments.get("question", "")),
                                       "answer": reply.answer or ""}
        else:
            kind = "approve" if reply.approve else "deny"
            content = {"act": pause.act, "target": pause.target or "",
                       "call_id": pause.call_id}
        self.parts.store.record_operator_input(drive.run_id, kind, content, pause.step)

    def _answered(self, drive: _Drive, writes: StepWrites, index: int, call: ToolCall,
                  text: str) -> None:
        step = writes.step
        self.parts.store.answer_question(drive.run_id, step, index, text, "person")
        self.parts.emit(Event(EventKind.QUESTION, drive.run_id, {
            "step": step, "question": call.arguments.get("question"), "answer": text,
            "answered_by": "person",
        }))
        self.observe(drive, writes, index, call, ToolOutcome(
            f"The operator answered: {text}", data=AnswerData(text, "person")))

    def _report_plan_tool(
        self, drive: _Drive, step: int, index: int, call: ToolCall, outcome: ToolOutcome
    ) -> None:
        data = outcome.data
        if outcome.is_error:
            return
        if call.name == "todo_write" and isinstance(data, PlanData):
            self.parts.emit(Event(EventKind.PLAN, drive.run_id, {
                "step": step, "items": [t.to_json() for t in data.todos],
                "revision": data.revision}))
        elif call.name == "ask_question" and isinstance(data, AnswerData):
            question = data.question or ""
            self.parts.store.record_question(drive.run_id, step, index, call.id, question,
                                             answer=data.answer,
                                             answered_by=data.answered_by)
            self.parts.emit(Event(EventKind.QUESTION, drive.run_id, {
                "step": step, "question": question, "answer": data.answer,
                "answered_by": data.answered_by}))

    def observe(
        self, drive: _Drive, writes: StepWrites, index: int, call: ToolCall,
        outcome: ToolOutcome, *, progress: str | None = None,
    ) -> None:
        """Record call `index`'s observation (`StepWrites.observation`) and show it to
        the model and the trace."""
        # What the model and the trace see is valid UTF-8 whatever a tool returned; the
        # exact names stay in `data`, which the store keeps losslessly.
        output = escape_surrogates(outcome.output)
        redact = self.parts.redact
        result = ToolResult(call.id, call.name, redact(output) if redact else output,
                            outcome.is_error, outcome.media)
        edits = outcome.data.edits if isinstance(outcome.data, FileWritten) else ()
        for edit in edits:
            drive.changed.add(edit.path)
        writes.observation(index, result, data=outcome.data, refused=outcome.refused,
                           edits=edits, progress=progress)
        drive.context.append(Message.tool(result))
        self.parts.emit(Event(EventKind.TOOL_RESULT, drive.run_id, {
            "step": writes.step, "call_id": call.id, "name": call.name,
            "output": result.output, "is_error": outcome.is_error,
            "refused": outcome.refused.to_json() if outcome.refused else None,
        }))
