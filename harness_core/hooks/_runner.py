"""`HookRunner`: the hooks of one run, called at the loop's call sites, every answer recorded.

A hook can only narrow. A `pre_tool` hook runs before the call, and the call's own
policy checks still run after it: its "allow" grants nothing, and an act the policy
refuses stays refused. Its "deny", an error or unreadable output refuses the call (fail
closed); its "ask" goes to the run's approval flow (the approver, or a pause that
`io resume --approve/--deny` answers). Each hook that runs for a call is recorded before
and after it runs (`hook_runs`): a resumed run replays a finished hook's answer instead
of asking again, and never runs a `post_tool` or `child_stop` hook twice for one call.
Every answer other than a silent allow is a policy event with layer ``hook`` and the
hook's name as its rule, so `io trace` shows it beside the policy's own decisions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from harness_core._record import record
from harness_core.events import Event, EventKind
from harness_core.hooks._answer import HookAnswer, HookDecision
from harness_core.hooks._config import HOOK_LAYER, HookConfig, HookEvent
from harness_core.hooks._invoke import HOOK_SCHEMA, HookProcesses
from harness_core.messages import ToolCall
from harness_core.policy import Act, ActKind, Decision, Verdict
from harness_core.store import Store
from harness_core.tool_data import FileWritten, Refusal
from harness_core.tools import ToolOutcome

__all__ = ["CallAct", "CompactVerdict", "HookRunner", "StartVerdict"]

_TARGET_CHARS = 300
"""Characters of a call's arguments kept in its recorded target (the ledger keeps all)."""
_NO_CALL = -1
"""`call_index` of a hook event that belongs to no tool call."""
_FAIL_CLOSED = frozenset({HookEvent.RUN_START, HookEvent.PRE_TOOL, HookEvent.PRE_COMPACT})
"""Events where a hook's error refuses (the others report it and go on)."""


@record
class CallAct(Act):
    """A whole tool call put to approval because a `pre_tool` hook asked.

    The policy has no act kind for a call (its kind is nominally EXEC); the approval
    flow only reads `describe`, and the recorded act is ``tool``.
    """

    def describe(self) -> str:
        return f"tool {self.target}"

    @staticmethod
    def of(call: ToolCall) -> CallAct:
        """The act of `call`: its name and its arguments as compact JSON, cut to a line a
        person can read (a `write_file`'s content is not a target)."""
        args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True,
                          separators=(",", ":"), default=str)
        if len(args) > _TARGET_CHARS:
            args = args[:_TARGET_CHARS] + f"… ({len(args):,} characters)"
        return CallAct(ActKind.EXEC, f"{call.name} {args}")


def recorded_act(act: Act) -> str:
    """The act name a decision about `act` is recorded under (``tool`` for a call)."""
    return "tool" if isinstance(act, CallAct) else act.kind.value


@record
class StartVerdict:
    """What the `run_start` hooks said.

    Attributes:
        refused: Why the run must not go on (None: it may).
        context: Text for the model, from every hook that gave some ("" when none).
    """

    refused: str | None = None
    context: str = ""


@record
class CompactVerdict:
    """What the `pre_compact` hooks said.

    Attributes:
        proceed: Whether the compaction may go ahead (False: a hook refused it).
        reason: Why it was refused ("" when it was not).
        instructions: Extra instructions for the summary, from every hook that gave some.
    """

    proceed: bool = True
    reason: str = ""
    instructions: str = ""


Ask = Callable[[Act, Decision], Decision]
"""The run's approval flow (`Gate.ask`): a final allow or deny, or a pause raised."""


class HookRunner:
    """Runs the configured hooks of one run at the loop's call sites.

    Args:
        hooks: Every configured hook (all scopes).
        processes: Starts them (sandboxed or on the host, by scope).
        store: Where their runs and decisions are recorded.
        run_id: The run.
        emit: Receives a ``hook`` event per answer worth reporting, ``refusal`` for a
            refused call.
        ask: The run's approval flow, for a `pre_tool` hook's ``ask`` (None: an ask is
            a refusal).
    """

    def __init__(self, hooks: tuple[HookConfig, ...], processes: HookProcesses, *,
                 store: Store, run_id: str, emit: Callable[[Event], None],
                 ask: Ask | None) -> None:
        self.hooks = hooks
        self._processes = processes
        self._store = store
        self._run_id = run_id
        self._emit = emit
        self._ask = ask

    def has(self, event: HookEvent) -> bool:
        """Whether any hook is configured for `event`."""
        return any(h.event is event for h in self.hooks)

    def close(self) -> None:
        """End what the hooks' host launcher keeps."""
        self._processes.close()

    # ---- the call sites ------------------------------------------------------------

    def run_start(self, step: int, *, goal: str, resumed: bool) -> StartVerdict:
        """Run the `run_start` hooks as a drive begins: a deny or an error refuses it."""
        contexts: list[str] = []
        for hook in self._of(HookEvent.RUN_START):
            answer = self._processes.run(hook, self._payload(hook, step, {
                "goal": goal, "resumed": resumed}))
            self._report(hook, step, "run", goal[:200], answer)
            if answer.decision in (HookDecision.DENY, HookDecision.ERROR, HookDecision.ASK):
                return StartVerdict(refused=_why(hook, answer))
            contexts += _labelled(hook, answer.context)
        return StartVerdict(context="\n\n".join(contexts))

    def pre_tool(self, step: int, index: int, call: ToolCall, *, can_ask: bool = True
                 ) -> ToolOutcome | None:
        """Run the `pre_tool` hooks that match `call`: None lets it run, an outcome
        refuses it. A hook's ``ask`` goes to the approval flow (which may pause), or is a
        refusal where the call cannot wait for one (`can_ask` False: `spawn_agent`)."""
        act = CallAct.of(call)
        for hook in self._matching(HookEvent.PRE_TOOL, call.name):
            answer = self._ledgered(hook, step, index, self._call_payload(hook, step, index, call),
                                    again=True)
            if answer is None or answer.decision is HookDecision.ALLOW:
                if answer is not None and answer.reason:
                    self._report(hook, step, "tool", act.target, answer)
                continue
            if answer.decision is HookDecision.ASK and self._ask is not None and can_ask:
                asked = Decision(Verdict.ASK, f"hook {hook.name} asks: "
                                 f"{answer.reason or 'approve this call?'}", hook.name, HOOK_LAYER)
                if self._ask(act, asked).verdict is Verdict.ALLOW:
                    continue
                return _refused(act, hook, f"hook {hook.name}: approval denied")
            self._report(hook, step, "tool", act.target, answer, verdict="deny")
            return _refused(act, hook, _why(hook, answer))
        return None

    def post_tool(self, step: int, index: int, call: ToolCall, outcome: ToolOutcome
                  ) -> ToolOutcome:
        """Run the `post_tool` hooks that match `call` (at most once each) and append
        their context to the observation the model sees."""
        contexts: list[str] = []
        for hook in self._matching(HookEvent.POST_TOOL, call.name):
            payload = self._call_payload(hook, step, index, call)
            payload["outcome"] = _outcome_json(outcome)
            answer = self._ledgered(hook, step, index, payload, again=False)
            if answer is None:
                contexts.append(f"[hook {hook.name}] did not finish (the harness stopped while"
                                " it ran); it was not run again")
                continue
            if answer.decision is HookDecision.DENY:  # exit 2: stderr is for the model; the
                # call already ran, so nothing is refused
                answer = replace(answer, decision=HookDecision.ALLOW,
                                 context=answer.context or answer.reason)
            self._report(hook, step, "tool", CallAct.of(call).target, answer)
            contexts += _labelled(hook, answer.context)
        return _with_context(outcome, contexts)

    def stop(self, step: int, *, text: str) -> str | None:
        """Run the `stop` hooks as the model says it is done: the reason to go on, or
        None to let the run end (an erroring stop hook lets it end, reported)."""
        reasons: list[str] = []
        for hook in self._of(HookEvent.STOP):
            answer = self._ledgered(hook, step, _NO_CALL,
                                    self._payload(hook, step, {"text": text}), again=True)
            if answer is None:
                continue
            goes_on = answer.decision is HookDecision.DENY or (
                answer.decision is HookDecision.ASK)
            self._report(hook, step, "stop", "the run's end", answer,
                         verdict="deny" if goes_on else None)
            if goes_on:
                reasons.append(f"[hook {hook.name}] {answer.reason or 'not done yet'}")
        return "\n".join(reasons) if reasons else None

    def child_stop(self, step: int, index: int, child: dict[str, Any],
                   observation: ToolOutcome) -> ToolOutcome:
        """Run the `child_stop` hooks for a child that ended (at most once each) and
        append their context to what the parent sees of it."""
        contexts: list[str] = []
        for hook in self._of(HookEvent.CHILD_STOP):
            answer = self._ledgered(hook, step, index,
                                    self._payload(hook, step, {"child": child}), again=False)
            if answer is None:
                continue
            self._report(hook, step, "child", str(child.get("run_id", "")), answer)
            contexts += _labelled(hook, answer.context)
        return _with_context(observation, contexts)

    def pre_compact(self, step: int, *, messages: int, tokens: int) -> CompactVerdict:
        """Run the `pre_compact` hooks before the context is compacted (the compaction's
        call site). A deny or an error refuses this compaction; context becomes extra
        instructions for the summary."""
        notes: list[str] = []
        for hook in self._of(HookEvent.PRE_COMPACT):
            answer = self._ledgered(hook, step, _NO_CALL, self._payload(hook, step, {
                "messages": messages, "tokens": tokens}), again=True)
            if answer is None:
                continue
            self._report(hook, step, "compact", f"{messages} messages", answer)
            if answer.decision is not HookDecision.ALLOW:
                return CompactVerdict(proceed=False, reason=_why(hook, answer))
            if answer.context:
                notes.append(answer.context)
        return CompactVerdict(instructions="\n\n".join(notes))

    # ---- machinery -------------------------------------------------------------------

    def _of(self, event: HookEvent) -> Iterator[HookConfig]:
        return (h for h in self.hooks if h.event is event)

    def _matching(self, event: HookEvent, tool: str) -> Iterator[HookConfig]:
        return (h for h in self._of(event) if h.matches(tool))

    def _payload(self, hook: HookConfig, step: int, extra: dict[str, Any]) -> dict[str, Any]:
        return {"schema": HOOK_SCHEMA, "event": hook.event.value, "hook": hook.name,
                "run_id": self._run_id, "step": step,
                "workspace": str(self._processes.workspace), **extra}

    def _call_payload(self, hook: HookConfig, step: int, index: int, call: ToolCall
                      ) -> dict[str, Any]:
        return self._payload(hook, step, {"tool": call.name, "call_id": call.id,
                                          "call_index": index, "arguments": call.arguments})

    def _ledgered(self, hook: HookConfig, step: int, index: int, payload: dict[str, Any], *,
                  again: bool) -> HookAnswer | None:
        """Run `hook` once for (step, index): a recorded answer is replayed; a hook that
        started and never finished runs `again` or not at all (None)."""
        event, store = hook.event.value, self._store
        record = store.hook_run(self._run_id, step, index, event, hook.name)
        if record is not None and record.answer is not None:
            return HookAnswer.from_json(record.answer)
        if record is not None and not again:
            return None
        store.begin_hook(self._run_id, step, index, event, hook.name)
        answer = self._processes.run(hook, payload)
        store.finish_hook(self._run_id, step, index, event, hook.name, answer.to_json())
        return answer

    def _report(self, hook: HookConfig, step: int, act: str, target: str, answer: HookAnswer,
                *, verdict: str | None = None) -> None:
        """Record and emit an answer (a silent allow is neither, like a policy allow)."""
        decision = answer.decision
        if decision is HookDecision.ALLOW and not answer.reason and not answer.context:
            return
        said = verdict or decision.value
        closed = hook.event in _FAIL_CLOSED
        reason = _why(hook, answer, closed=closed) if decision is not HookDecision.ALLOW else (
            f"hook {hook.name}: {answer.reason or 'added context'}")
        self._store.record_policy_event(
            self._run_id, step, act=act, target=target, verdict=said, reason=reason,
            rule=hook.name, layer=HOOK_LAYER, decided_by="hook")
        data = {"event": hook.event.value, "hook": hook.name, "step": step, "act": act,
                "target": target, "verdict": said, "reason": reason, "rule": hook.name,
                "layer": HOOK_LAYER, "decided_by": "hook", "context": answer.context}
        kind = EventKind.REFUSAL if act == "tool" and said == "deny" else EventKind.HOOK
        self._emit(Event(kind, self._run_id, data))


def _why(hook: HookConfig, answer: HookAnswer, *, closed: bool = True) -> str:
    if answer.decision is HookDecision.ERROR:
        then = "; refused: a hook that cannot answer does not allow" if closed else ""
        return f"hook {hook.name} failed ({answer.reason}){then}"
    return f"hook {hook.name}: {answer.reason or 'refused'}"


def _refused(act: CallAct, hook: HookConfig, reason: str) -> ToolOutcome:
    refusal = Refusal(reason, act="tool", target=act.target, rule=hook.name, layer=HOOK_LAYER)
    return ToolOutcome(f"refused: {reason}", is_error=True, refused=refusal)


def _labelled(hook: HookConfig, context: str) -> list[str]:
    return [f"[hook {hook.name}] {context}"] if context else []


def _with_context(outcome: ToolOutcome, contexts: list[str]) -> ToolOutcome:
    if not contexts:
        return outcome
    return replace(outcome, output=outcome.output.rstrip("\n") + "\n\n" + "\n\n".join(contexts))


def _outcome_json(outcome: ToolOutcome) -> dict[str, Any]:
    data = outcome.data
    edits = [e.path for e in data.edits] if isinstance(data, FileWritten) else []
    return {"output": outcome.output, "is_error": outcome.is_error,
            "refused": outcome.refused.to_json() if outcome.refused else None,
            "changed_files": edits}
