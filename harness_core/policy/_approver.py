"""Approvers: who answers when `Policy.check` says ``ask``.

The run's gate calls an `Approver` only for an ``ask`` verdict; a ``deny`` is never
put to anyone and an ``allow`` needs no one. An approver can only answer for the act
in front of it, so its answer narrows or permits that one act and changes no rule.
This module does no I/O: the interactive prompt lives with the CLI.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

from harness_core.policy._act import Act
from harness_core.policy._rules import Decision

__all__ = ["ApprovalDecision", "ApproveAll", "Approver", "DenyAll"]


class ApprovalDecision(Enum):
    """An approver's answer about one act. A closed set."""

    APPROVE = "approve"
    """Let this one act go ahead; the next identical act is asked about again."""
    DENY = "deny"
    """Refuse this one act; the refusal reaches the model as an observation."""


class Approver(Protocol):
    """Decides acts the policy left to a person (or to a program standing in for one)."""

    def decide(self, act: Act, decision: Decision) -> ApprovalDecision | None:
        """Answer for `act`, which the policy sent to approval with `decision`.

        Args:
            act: The act awaiting approval.
            decision: The policy's ``ask`` decision, with its reason.

        Returns:
            The answer, or None when no answer can be given now (no TTY): the run
            then pauses and `io resume --approve/--deny` answers later.
        """
        ...


class DenyAll:
    """Refuses every act put to it: the safe choice for unattended library use."""

    def decide(self, act: Act, decision: Decision) -> ApprovalDecision | None:
        """Always `ApprovalDecision.DENY`."""
        return ApprovalDecision.DENY


class ApproveAll:
    """Approves every act put to it. For tests and callers who already vetted the policy.

    It never sees an act the policy denies: rules and the built-in layer still hold.
    """

    def decide(self, act: Act, decision: Decision) -> ApprovalDecision | None:
        """Always `ApprovalDecision.APPROVE`."""
        return ApprovalDecision.APPROVE
