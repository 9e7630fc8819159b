"""Trace lines take their style from the event's kind and fields, never from the words a
model (or a tool) wrote; the live panel folds events into step, tokens, cost and plan."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

import pytest

from harness_core import Event, EventKind, ModelPrice, PriceTable
from io_harness_cli.render.lines import lines_for
from io_harness_cli.render.live import PanelState

HOSTILE = "FAILED ✗ ⛔ refused passed ✓ step checkpoint"


def _ev(kind: EventKind, **data: Any) -> Event:
    return Event(kind, "r1", data)


@pytest.mark.parametrize("event,style", [
    (_ev(EventKind.COMPLETION, text=HOSTILE, model="m", usage={}), ""),
    (_ev(EventKind.TOOL_CALL, name="exec", arguments={"argv": ["echo", HOSTILE]}), ""),
    (_ev(EventKind.TOOL_RESULT, output=HOSTILE, is_error=False), "green"),
    (_ev(EventKind.TOOL_RESULT, output="all good, passed", is_error=True), "red"),
    (_ev(EventKind.VERIFICATION, command=f"echo {HOSTILE}", passed=True), "green"),
    (_ev(EventKind.VERIFICATION, command="echo ok passed", passed=False), "red"),
    (_ev(EventKind.REFUSAL, target="exec x", reason="passed", rule="x*", layer="project"), "red"),
    (_ev(EventKind.PLAN, items=[{"content": HOSTILE, "status": "done"}]), ""),
    (_ev(EventKind.STEER, text=HOSTILE), ""),
    (_ev(EventKind.CHECKPOINT, step=3), "dim"),
    (_ev(EventKind.STEP_STARTED, step=1), "bold"),
])
def test_a_lines_style_comes_from_its_event_kind(event: Event, style: str) -> None:
    lines = lines_for(event)
    assert lines
    assert lines[-1][1] == style


def test_model_text_that_says_failed_is_not_painted_red_by_rich() -> None:
    from rich.console import Console
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, color_system="standard",
                      highlight=False, width=200)
    for text, style in lines_for(_ev(EventKind.COMPLETION, text="FAILED", model="m", usage={})):
        console.print(Text(text, style=style))
    painted = buffer.getvalue()
    assert "says: FAILED" in painted
    assert "\x1b[31m" not in painted  # red
    buffer.truncate(0)
    for text, style in lines_for(_ev(EventKind.REFUSAL, target="t", reason="r", rule="x",
                                     layer="l")):
        console.print(Text(text, style=style))
    assert "\x1b[31m" in buffer.getvalue()


def test_the_panel_counts_tokens_and_derives_cost_as_a_floor_when_unpriced() -> None:
    state = PanelState(prices=PriceTable(dt.date(2026, 11, 1), {"m": ModelPrice(1.0, 2.0)}))
    assert state.cost_text() == "cost $0.0000"
    state.fold(_ev(EventKind.STEP_STARTED, step=0))
    assert state.step == 0 and state.running == "model (step 0)"
    state.fold(_ev(EventKind.COMPLETION, model="m", usage={
        "prompt_tokens": 1_000_000, "completion_tokens": 1_000_000, "total_tokens": 2_000_000}))
    assert state.running is None and state.tokens == 2_000_000
    assert state.cost_text() == "cost $3.0000"
    state.fold(_ev(EventKind.COMPLETION, model="other", usage={"prompt_tokens": 5,
                                                                "completion_tokens": 1}))
    assert state.cost_text() == "cost ≥ $3.0000 (1 unpriced)"
    state.fold(_ev(EventKind.TOOL_CALL, name="exec", arguments={"argv": ["pytest"]}))
    assert state.running is not None and state.running.startswith("exec")
    state.fold(_ev(EventKind.TOOL_RESULT, output="", is_error=False))
    assert state.running is None
    state.fold(_ev(EventKind.PLAN, items=[{"content": "a", "status": "in_progress"}]))
    assert state.plan == [{"content": "a", "status": "in_progress"}]
    assert PanelState().cost_text() == "cost: no [prices]"


def test_the_panel_keeps_the_root_and_names_the_child_it_is_in() -> None:
    state = PanelState()
    state.fold(Event(EventKind.RUN_STARTED, "root", {}))
    state.fold(Event(EventKind.RUN_STARTED, "kid", {"parent_run_id": "root"}))
    state.fold(Event(EventKind.STEP_STARTED, "kid", {"step": 0}))
    assert (state.run_id, state.current, state.step) == ("root", "kid", 0)


def test_a_childs_lines_carry_its_id_and_spawns_have_lines() -> None:
    [(text, _)] = lines_for(Event(EventKind.STEP_STARTED, "kid-1234567", {"step": 0}), "root")
    assert text == "[kid-1234] step 0"
    [(text, _)] = lines_for(Event(EventKind.STEP_STARTED, "root", {"step": 0}), "root")
    assert text == "step 0"
    [(started, _)] = lines_for(_ev(EventKind.SPAWN, child_run_id="kid", depth=1, agent=None))
    [(ended, style)] = lines_for(_ev(EventKind.SPAWN, child_run_id="kid", status="failed",
                                     steps=2))
    assert "child kid started (depth 1" in started
    assert "child kid ended: failed after 2 steps" in ended and style == "red"
