"""Who answers the agent's questions and where its plan lives: the protocols the tool
context names (kept apart from the plan tools, so `_base` and `_plan_tools` import one
way only)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Protocol

from harness_core._record import record
from harness_core.tool_data import TodoItem

__all__ = ["Answer", "AnsweredBy", "PlanStore", "Responder"]


class AnsweredBy(Enum):
    """Who answered a question. A closed set."""

    MACHINE = "machine"
    """A program in the run's own process standing in for the operator."""
    PERSON = "person"
    """A human: at a terminal prompt, or through `io resume --answer`."""


@record
class Answer:
    """A responder's answer: text for the model, never a permission.

    Attributes:
        text: What the model will read.
        by: Who gave it (a machine unless a human typed it).
    """

    text: str
    by: AnsweredBy = AnsweredBy.MACHINE


class Responder(Protocol):
    """Answers the agent's questions in the run's own process."""

    def answer(self, question: str) -> Answer | None:
        """Answer `question`, or return None when no answer can be given now.

        None pauses the run (exit 4); `io resume RUN --answer TEXT` answers later.
        """
        ...


class PlanStore(Protocol):
    """Where a run's plan lives (the `Store` implements it)."""

    def replace_todos(
        self, run_id: str, items: Sequence[TodoItem], *, step: int | None = None
    ) -> int:
        """Replace the whole plan in one transaction; returns its new revision."""
        ...
