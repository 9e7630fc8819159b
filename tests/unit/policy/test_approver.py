"""The simple approvers and the closed set of approval decisions."""

from __future__ import annotations

from harness_core.policy import (
    Act,
    ApprovalDecision,
    ApproveAll,
    Approver,
    DenyAll,
    Policy,
    Tier,
    Verdict,
)


def test_simple_approvers_answer_as_named() -> None:
    act = Act.exec(["make"])
    decision = Policy(tier=Tier.READ_ONLY).check(act)
    assert decision.verdict is Verdict.ASK
    approvers: list[Approver] = [DenyAll(), ApproveAll()]
    answers = [approver.decide(act, decision) for approver in approvers]
    assert answers == [ApprovalDecision.DENY, ApprovalDecision.APPROVE]


def test_approval_decisions_are_a_closed_set() -> None:
    assert {d.value for d in ApprovalDecision} == {"approve", "deny"}
