"""The agent's two channels to the operator: `todo_write` (its plan) and `ask_question`.

Neither is gated: both write into the harness's own store, not the workspace, the
network or a program, so there is no act to check. Neither grants anything either: a
plan is never enforced, and an answer is text that reaches the model as an
observation, after which every tool call is checked against the same policy by the
same code. This module does no terminal I/O: a prompt on a terminal is a `Responder`
the CLI supplies.

Run-scoped services arrive typed, through `ToolContext.services`: ``todos`` (a `PlanStore`)
and ``responder`` (a `Responder`). The loop emits the plan and question events; the
tools emit nothing.
"""

from __future__ import annotations

from typing import Any

from harness_core.errors import InvalidToolArguments
from harness_core.messages import ToolSpec
from harness_core.tool_data import AnswerData, PlanData, TodoItem
from harness_core.tools._answers import Answer, AnsweredBy, PlanStore, Responder
from harness_core.tools._base import PauseRequested, ToolContext, ToolOutcome

__all__ = [
    "Answer",
    "AnsweredBy",
    "AskQuestion",
    "PlanStore",
    "Responder",
    "TodoWrite",
    "plan_tools",
]

_STATUSES = ("pending", "in_progress", "done")
_MAX_ITEMS = 100
_MAX_CONTENT = 2000
_MAX_QUESTION = 4000


def _items(raw: Any) -> list[TodoItem]:
    if not isinstance(raw, list):
        raise InvalidToolArguments("todo_write: `todos` must be an array of items")
    if len(raw) > _MAX_ITEMS:
        raise InvalidToolArguments(f"todo_write: at most {_MAX_ITEMS} items")
    items: list[TodoItem] = []
    for n, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise InvalidToolArguments(f"todo_write: item {n} must be an object")
        content, status = item.get("content"), item.get("status", "pending")
        if not isinstance(content, str) or not content.strip():
            raise InvalidToolArguments(f"todo_write: item {n} needs a non-empty `content`")
        if status not in _STATUSES:
            raise InvalidToolArguments(
                f"todo_write: item {n} has status {status!r}; use one of {', '.join(_STATUSES)}")
        unknown = set(item) - {"content", "status"}
        if unknown:
            raise InvalidToolArguments(
                f"todo_write: item {n} has unknown keys {', '.join(sorted(unknown))}")
        items.append(TodoItem(content.strip()[:_MAX_CONTENT], str(status)))
    return items


class TodoWrite:
    """Replace the agent's plan wholesale (never merged, never enforced)."""

    spec = ToolSpec(
        "todo_write",
        "Record your plan. Each call replaces the whole list: send every item. Shown to the"
        " operator, never enforced.",
        {
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string"},
                            "status": {"type": "string", "enum": list(_STATUSES)},
                        },
                        "required": ["content", "status"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["todos"],
            "additionalProperties": False,
        },
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Validate the items and replace the plan in one transaction.

        Raises:
            InvalidToolArguments: An item is malformed (the plan is left as it was).
        """
        items = _items(args.get("todos"))
        plan = ctx.services.todos
        if plan is None or not ctx.run_id:
            return ToolOutcome("error: there is no run here to hold a plan", is_error=True)
        revision = plan.replace_todos(ctx.run_id, items)
        counts = {s: sum(1 for i in items if i.status == s) for s in _STATUSES}
        summary = ", ".join(f"{counts[s]} {s.replace('_', ' ')}" for s in _STATUSES)
        return ToolOutcome(f"Plan recorded ({len(items)} items: {summary}).",
                           data=PlanData(tuple(items), revision))


class AskQuestion:
    """Ask the operator something; the answer comes back as this call's observation."""

    spec = ToolSpec(
        "ask_question",
        "Ask the operator when you cannot proceed without their intent. The answer is information,"
        " not permission.",
        {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
            "additionalProperties": False,
        },
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Answer through the run's responder, or pause the run for the operator.

        Raises:
            InvalidToolArguments: The question is empty.
            PauseRequested: No responder could answer now (kind ``question``).
        """
        question = str(args.get("question", "")).strip()
        if not question:
            raise InvalidToolArguments("ask_question: `question` must not be empty")
        question = question[:_MAX_QUESTION]
        responder = ctx.services.responder
        answer = responder.answer(question) if responder is not None else None
        if answer is None:
            if not ctx.run_id:
                return ToolOutcome("error: no one can answer here: there is no run to pause",
                                   is_error=True)
            raise PauseRequested("question", {"question": question})
        if answer.by is AnsweredBy.PERSON:
            text = f"The operator answered: {answer.text}"
        else:
            text = f"An automated responder answered for the operator: {answer.text}"
        return ToolOutcome(text, data=AnswerData(answer.text, answer.by.value,
                                                 question=question))


def plan_tools() -> list[TodoWrite | AskQuestion]:
    """The two built-ins of this module."""
    return [TodoWrite(), AskQuestion()]
