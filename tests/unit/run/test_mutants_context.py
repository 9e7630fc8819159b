"""The context budget pinned where mutation testing found it loose (`run/_context.py`):
an observation no bigger than its elision marker is never replaced by it."""

from __future__ import annotations

from harness_core import Message, ToolResult
from harness_core.run._context import ContextBudget, _marker, estimate_tokens


def _observation(chars: int) -> Message:
    return Message.tool(ToolResult("c1", "read_file", "x" * chars))


def test_an_observation_the_size_of_its_marker_is_kept_whole() -> None:
    # the first size whose estimate equals its own marker's: eliding it would save nothing
    chars = next(n for n in range(1, 2000)
                 if estimate_tokens(_observation(n)) == estimate_tokens(_marker(_observation(n))))
    same = _observation(chars)
    budget = ContextBudget(max_tokens=1)
    budget.extend([Message.user("goal"), same, *(Message.user(f"m{i}") for i in range(4))])
    view = budget.view()
    assert view[1] is same
    assert budget.elided_count == 0
    bigger = _observation(chars + 40)
    budget = ContextBudget(max_tokens=1)
    budget.extend([Message.user("goal"), bigger, *(Message.user(f"m{i}") for i in range(4))])
    assert budget.view()[1] is not bigger and budget.elided_count == 1
