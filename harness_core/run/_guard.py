"""The run's one policy guard: the policy, then the approver, every decision recorded.

"Guard" is the policy's run-time checker; "gate" in `run/` means only a verification
gate (`_verify`, `_gate_command`, `_inputs`).

Every act of every path (a model's tool call, a shell stage, a redirect, a handle, a
gate command) reaches `Guard.check`. A refusal and an approver's decision land in
`policy_events` with the rule and layer that decided; a silent allow writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from harness_core._record import record
from harness_core.events import Event, EventKind
from harness_core.hooks import recorded_act
from harness_core.policy import (
    BUILTIN_LAYER,
    TIER_LAYER,
    Act,
    ApprovalDecision,
    Approver,
    Decision,
    Policy,
    Verdict,
)
from harness_core.store import Store
from harness_core.tools import PauseRequested

__all__ = ["ApprovalPending", "Gate", "Guard"]


class ApprovalPending(PauseRequested):
    """Raised through a tool when an `ask` cannot be answered now: the run pauses.

    Not a `HarnessError`: the loop catches it, records the pause and exits 4.
    """

    def __init__(self, act: Act, decision: Decision) -> None:
        super().__init__("approval", {
            "act": recorded_act(act), "target": act.describe(), "reason": decision.reason,
            "rule": decision.rule, "layer": decision.layer,
        })
        self.act = act
        self.decision = decision


@record(frozen=False)
class _Preset:
    act_key: str
    approve: bool
    by: str


class Guard:
    """Implements `tools.ActGate` for one run: the policy's run-time checker."""

    def __init__(
        self,
        policy: Policy,
        *,
        store: Store | None,
        run_id: str,
        approver: Approver | None,
        emit: Callable[[Event], None],
    ) -> None:
        self.policy = policy
        self._store = store
        self._run_id = run_id
        self._approver = approver
        self._emit = emit
        self.step: int | None = None
        self._preset: _Preset | None = None

    def preset(self, act_key: str, *, approve: bool, by: str) -> None:
        """Answer the next `ask` for this act (an operator's `--approve`/`--deny`)."""
        self._preset = _Preset(act_key, approve, by)

    def _record(self, act: Act, decision: Decision, by: str, store: Store | None = None) -> None:
        store = store or self._store
        if store is not None and self._run_id:
            store.record_policy_event(
                self._run_id, self.step, act=recorded_act(act), target=act.describe(),
                verdict=decision.verdict.value, reason=decision.reason, rule=decision.rule,
                layer=decision.layer, decided_by=by,
            )
        kind = EventKind.REFUSAL if decision.verdict is Verdict.DENY else EventKind.APPROVAL
        self._emit(Event(kind, self._run_id, {
            "act": recorded_act(act), "target": act.describe(), "verdict": decision.verdict.value,
            "reason": decision.reason, "rule": decision.rule, "layer": decision.layer,
            "decided_by": by,
        }))

    def _named(self, decision: Decision) -> Decision:
        """`decision` with a rule: a tier's default is named `tier:<tier>`, so every
        refusal, approval and pause says which rule and layer decided."""
        if decision.rule is not None or decision.layer != TIER_LAYER:
            return decision
        return replace(decision, rule=f"tier:{self.policy.tier.value}")

    def refuse(self, act: Act, reason: str, *, rule: str = "workspace-boundary") -> Decision:
        decision = Decision(Verdict.DENY, reason, rule, BUILTIN_LAYER)
        self._record(act, decision, "policy")
        return decision

    def decide_unattended(self, act: Act, *, by: str, store: Store | None = None) -> Decision:
        """Decide `act` where nobody can be asked (the egress proxy): an ask is a refusal.

        A refusal is recorded like any other, with its rule and layer; `store` replaces
        the gate's own (a connection of the calling thread).
        """
        decision = self._named(self.policy.check(act))
        if decision.verdict is Verdict.ALLOW:
            return decision
        if decision.verdict is Verdict.ASK:
            decision = Decision(Verdict.DENY, f"{decision.reason}, and {by} cannot ask",
                                decision.rule, decision.layer)
        self._record(act, decision, by, store)
        return decision

    def record_unattended(
        self, act: Act, decision: Decision, *, by: str, store: Store | None = None
    ) -> None:
        """Record a refusal taken where nobody can be asked, outside `decide_unattended`
        (the egress proxy's check of the addresses a name resolves to)."""
        self._record(act, decision, by, store)

    def check(self, act: Act) -> Decision:
        decision = self._named(self.policy.check(act))
        if decision.verdict is Verdict.ALLOW:
            return decision
        if decision.verdict is Verdict.DENY:
            self._record(act, decision, "policy")
            return decision
        return self._ask(act, decision)

    def ask(self, act: Act, decision: Decision) -> Decision:
        """Put `act` to the approval flow although the policy did not ask (a hook did):
        an operator's preset answer, else the approver, else a pause."""
        return self._ask(act, decision)

    def _ask(self, act: Act, decision: Decision) -> Decision:
        preset = self._preset
        if preset is not None and preset.act_key == act.describe():
            self._preset = None
            return self._decided(act, decision, preset.approve, preset.by)
        answer = self._approver.decide(act, decision) if self._approver is not None else None
        if answer is None:
            raise ApprovalPending(act, decision)
        return self._decided(act, decision, answer is ApprovalDecision.APPROVE, "approver")

    def _decided(self, act: Act, asked: Decision, approve: bool, by: str) -> Decision:
        if approve:
            final = Decision(Verdict.ALLOW, f"approved by {by}", asked.rule, asked.layer)
        else:
            final = Decision(Verdict.DENY, f"denied by {by}", asked.rule, asked.layer)
        self._record(act, final, by)
        return final


Gate = Guard
"""Deprecated name of `Guard` (kept so callers keep working)."""
