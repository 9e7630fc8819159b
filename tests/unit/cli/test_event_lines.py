"""The human trace lines of operator-facing events say what happened in words, never a
raw JSON object or `None` (#23, item 9)."""

from __future__ import annotations

from typing import Any

import pytest

from harness_core import Event, EventKind
from io_harness_cli.render.lines import lines_for


def _text(kind: EventKind, data: dict[str, Any]) -> str:
    return "\n".join(text for text, _ in lines_for(Event(kind, "r1", data)))


def test_a_pending_question_shows_the_question() -> None:
    text = _text(EventKind.QUESTION, {"pending": True, "kind": "question", "step": 0,
                                      "call_index": 0, "call_id": "c", "tool": "ask_question",
                                      "question": "which colour?", "target": None})
    assert text == "  ⏸ question: which colour?"


def test_an_answered_question_shows_who_answered_what() -> None:
    text = _text(EventKind.QUESTION, {"step": 0, "question": "which colour?",
                                      "answer": "blue", "answered_by": "person"})
    assert text == "  question: which colour? → blue (answered by person)"


def test_a_steer_shows_its_text() -> None:
    assert _text(EventKind.STEER, {"text": "keep it small", "step": 2}) == (
        "  steer (operator): keep it small")


@pytest.mark.parametrize(("kind", "data"), [
    (EventKind.QUESTION, {"step": 0}),
    (EventKind.STEER, {}),
    (EventKind.APPROVAL, {"target": "exec ls", "verdict": "allow"}),
    (EventKind.HOOK, {"hook": "h", "event": "pre_tool", "verdict": "allow"}),
])
def test_no_line_shows_none_or_a_json_object(kind: EventKind, data: dict[str, Any]) -> None:
    text = _text(kind, data)
    assert "None" not in text and "{" not in text, text
