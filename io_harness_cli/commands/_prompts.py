"""Asking the operator on the terminal: approvals and the agent's questions.

A prompt goes to stderr and the answer comes from stdin; without a terminal on both,
no prompter is made and the run pauses instead (exit 4, `io resume` continues).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_core import Answer, Approver, Responder

__all__ = ["Hold", "TtyApprover", "TtyResponder", "make_approver", "make_responder"]

Hold = Callable[[], AbstractContextManager[None]]
"""Keeps the terminal still (the live panel down) while the operator is prompted."""


class TtyApprover:
    """Asks the operator on the terminal (stderr prompt, stdin answer)."""

    def __init__(self, hold: Hold | None = None) -> None:
        self._hold = hold or nullcontext

    def decide(self, act: Any, decision: Any) -> Any:
        with self._hold():
            return self._ask(act, decision)

    def _ask(self, act: Any, decision: Any) -> Any:
        from harness_core import ApprovalDecision

        sys.stderr.write(
            f"\nio: approval needed: {act.describe()}\n    {decision.reason}\n"
            "    allow it? [y/N] "
        )
        sys.stderr.flush()
        try:
            line = sys.stdin.readline()
        except (OSError, ValueError):
            return None
        if not line:
            return None
        return ApprovalDecision.APPROVE if line.strip().lower() in ("y", "yes") \
            else ApprovalDecision.DENY


def make_approver(interactive: bool, hold: Hold | None = None) -> Approver | None:
    """A terminal approver when stdin and stderr are TTYs; None pauses the run instead."""
    if interactive and sys.stdin.isatty() and sys.stderr.isatty():
        return TtyApprover(hold)
    return None


class TtyResponder:
    """Puts the agent's question to the operator on the terminal (stderr prompt, stdin
    answer). An empty line or end of input leaves it unanswered: the run pauses."""

    def __init__(self, hold: Hold | None = None) -> None:
        self._hold = hold or nullcontext

    def answer(self, question: str) -> Answer | None:
        with self._hold():
            return self._ask(question)

    def _ask(self, question: str) -> Answer | None:
        from harness_core import Answer, AnsweredBy

        sys.stderr.write(f"\nio: the agent asks: {question}\n"
                         "    your answer (an empty line pauses the run): ")
        sys.stderr.flush()
        try:
            line = sys.stdin.readline()
        except (OSError, ValueError):
            return None
        text = line.strip()
        return Answer(text, AnsweredBy.PERSON) if text else None


def make_responder(interactive: bool, hold: Hold | None = None) -> Responder | None:
    """A terminal responder when stdin and stderr are TTYs; None pauses the run instead."""
    if interactive and sys.stdin.isatty() and sys.stderr.isatty():
        return TtyResponder(hold)
    return None
