"""The run loop's steps pinned to exact values (mutation testing's survivors in
`run/_loop.py`): a step's checkpoint committed with its last observation (never with an
earlier one), what each observation records (data, refusal, media, the tool's name),
the stall event, the unpriced-model warning and the cost drawn from each completion's
usage, and what a fresh run records about itself while it runs. Real runs of the
shipped scripted provider over a real SQLite store, injected clock."""

from __future__ import annotations

import io
import os
import sqlite3
from pathlib import Path
from typing import Any

from harness_core import (
    Budget,
    Event,
    EventKind,
    Policy,
    Runner,
    RunStatus,
    Store,
    Usage,
)
from harness_core.run._drive_help import _own_start_time
from harness_core.tool_data import FileWritten
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import USAGE as _USAGE
from tests.unit.run.loop_support import call as _call
from tests.unit.run.loop_support import scripted as _scripted
from tests.unit.run.loop_support import workspace as _ws
from tests.unit.session.support import Events, spec_for


def _line(text: str, *calls: dict[str, Any], usage: dict[str, int] = _USAGE
          ) -> dict[str, Any]:
    line: dict[str, Any] = {"text": text, "usage": usage}
    if calls:
        line["tool_calls"] = list(calls)
    return line


def test_a_steps_checkpoint_commits_with_its_last_observation(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("three", _call("write_file", path="a.txt", content="1"),
                   _call("list_dir", path="."), _call("write_file", path="b.txt", content="2")),
             _line("one", _call("list_dir", path=".")), _line("done")]
    seen: list[tuple[int, str, Any]] = []
    with Store(tmp_path / "state.db") as store:

        def look(event: Event) -> None:
            # what a crash right after this observation would leave behind
            if event.kind is EventKind.TOOL_RESULT:
                last = store.last_checkpoint(event.run_id)
                seen.append((event.data["step"], event.data["call_id"],
                             None if last is None else last.step_index))

        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=look).start(spec_for(ws, "go"))
        assert (outcome.status, outcome.steps) == (RunStatus.FINISHED, 3)
        run = store.run(outcome.run_id)
        assert (run.steps_used, run.tokens_used) == (3, 36)
    assert seen == [(0, "call_0_0", None), (0, "call_0_1", None), (0, "call_0_2", 0),
                    (1, "call_1_0", 1)]


def test_each_observation_records_its_data_refusal_and_tool(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    deny = _call("write_file", path="no.txt", content="x")
    lines = [_line("first", deny, _call("write_file", path="a.txt", content="1")),
             _line("second", _call("write_file", path="b.txt", content="22"), deny),
             _line("done")]
    events = Events()
    policy = Policy.from_lists(tier="full", deny_write=["no.txt"])
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=events).start(spec_for(ws, "go", policy=policy))
        ledger = store.ledger(outcome.run_id)
        assert [(e.step_index, e.call_index, e.is_error) for e in ledger] == [
            (0, 0, True), (0, 1, False), (1, 0, False), (1, 1, True)]
        refusals = [e.refused for e in ledger]
        assert [r is not None and (r.act, r.target, r.layer) for r in refusals] == [
            ("write", "write no.txt", "project"), False, False,
            ("write", "write no.txt", "project")]
        assert [type(e.data).__name__ if e.data else None for e in ledger] == [
            None, "FileWritten", "FileWritten", None]
        assert isinstance(ledger[2].data, FileWritten)
        assert [e.path for e in ledger[2].data.edits] == ["b.txt"]
        tools = [m for m in store.messages(outcome.run_id) if m.role.value == "tool"]
        assert [(m.name, m.tool_call_id, m.is_error) for m in tools] == [
            ("write_file", "call_0_0", True), ("write_file", "call_0_1", False),
            ("write_file", "call_1_0", False), ("write_file", "call_1_1", True)]
    results = [e.data for e in events.seen if e.kind is EventKind.TOOL_RESULT]
    assert [r["refused"] and r["refused"]["target"] for r in results] == [
        "write no.txt", None, None, "write no.txt"]


def test_an_image_observation_keeps_its_media(tmp_path: Path) -> None:
    from PIL import Image

    ws = _ws(tmp_path)
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 10, 10)).save(buffer, "PNG")
    (ws / "dot.png").write_bytes(buffer.getvalue())
    lines = [_line("look", _call("view_image", path="dot.png")), _line("done")]
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go"))
        (tool,) = [m for m in store.messages(outcome.run_id) if m.role.value == "tool"]
        assert (tool.name, tool.is_error) == ("view_image", False)
        assert [(m.media_type, m.path, m.width, m.height) for m in tool.media] == [
            ("image/png", "dot.png", 4, 3)]


def test_a_stall_is_announced_with_the_call_and_its_reason(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line(f"s{i}", _call("list_dir", path=".")) for i in range(5)]
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=events).start(spec_for(ws, "go", stall_window=3))
        assert (outcome.status, outcome.steps) == (RunStatus.STOPPED, 3)  # steps 0-2
        # the stalling call's step has its observation but no checkpoint
        last = store.last_checkpoint(outcome.run_id)
        assert last is not None and last.step_index == 1
        assert [e.step_index for e in store.ledger(outcome.run_id)] == [0, 1, 2]
    (stall,) = [e for e in events.seen if e.kind is EventKind.STALL]
    assert (stall.run_id, stall.data) == (outcome.run_id, {
        "call": 'list_dir:{"path": "."}', "reason": outcome.reason})
    assert outcome.reason.startswith("stalled: the same call repeated 3 times in a row")


def _priced_run(tmp_path: Path, cost_of: Any, max_cost: float | None) -> tuple[Any, Events]:
    ws = _ws(tmp_path)
    lines = [_line("a", _call("write_file", path="a.txt", content="1"),
                   usage={"prompt_tokens": 1000, "completion_tokens": 0,
                          "total_tokens": 1000}),
             _line("b", _call("write_file", path="b.txt", content="1"),
                   usage={"prompt_tokens": 3000, "completion_tokens": 0,
                          "total_tokens": 3000}),
             _line("done")]
    events = Events()
    spec = spec_for(ws, "go", budget=Budget(max_steps=None, max_tokens=None, wall_seconds=None,
                                            max_cost_usd=max_cost), cost_of=cost_of)
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=events).start(spec)
    return outcome, events


def test_a_cost_budget_that_meets_an_unpriced_model_warns_once_and_stops(
    tmp_path: Path,
) -> None:
    """Fail closed: a cost that cannot be derived cannot be bounded."""
    outcome, events = _priced_run(tmp_path, lambda model, usage: None, 0.01)
    assert (outcome.status, outcome.steps) == (RunStatus.STOPPED, 1)
    assert outcome.reason == ("budget: the cost budget of $0.01 cannot be enforced:"
                              " model 'scripted-replay' has no price in [prices]")
    warnings = [e for e in events.seen if e.kind is EventKind.WARNING]
    assert [(e.run_id, e.data) for e in warnings] == [(outcome.run_id, {
        "text": "model 'scripted-replay' has no price in [prices]: max_cost_usd cannot be"
                " enforced, so the run stops before its next step"})]


def test_prices_without_a_cost_budget_draw_and_warn_nothing(tmp_path: Path) -> None:
    asked: list[str] = []

    def cost_of(model: str, usage: Usage) -> float | None:
        asked.append(model)
        return None

    outcome, events = _priced_run(tmp_path, cost_of, None)
    assert outcome.status is RunStatus.FINISHED
    assert asked == [] and [e for e in events.seen if e.kind is EventKind.WARNING] == []


def test_a_cost_budget_without_prices_never_stops_the_run(tmp_path: Path) -> None:
    outcome, events = _priced_run(tmp_path, None, 0.01)
    assert (outcome.status, outcome.steps) == (RunStatus.FINISHED, 3)
    assert [e for e in events.seen if e.kind is EventKind.WARNING] == []


def test_each_completion_is_priced_by_its_own_usage(tmp_path: Path) -> None:
    def cost_of(model: str, usage: Usage) -> float:
        return (usage.prompt_tokens or 0) / 1000  # $1 a thousand prompt tokens

    outcome, _ = _priced_run(tmp_path, cost_of, 3.5)
    # $1, then $3 more: the budget is spent before the third step
    assert (outcome.status, outcome.steps, outcome.reason) == (
        RunStatus.STOPPED, 2, "budget: the cost budget of $3.5 is spent"
                              " ($4.0000 derived from [prices])")


def test_a_fresh_run_records_what_it_runs_under_and_who_drives_it(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    policy = Policy.from_lists(tier="full", deny_write=["no.txt"])
    lines = [_line("a", _call("write_file", path="a.txt", content="1")), _line("done")]
    owners: list[Any] = []
    events = Events()
    with Store(tmp_path / "state.db") as store:

        def look(event: Event) -> None:
            events(event)
            if event.kind is EventKind.STEP_STARTED:
                conn = sqlite3.connect(tmp_path / "state.db")
                owners.extend(conn.execute("SELECT owner_pid, owner_started FROM runs"
                                           " WHERE run_id = ?", (event.run_id,)).fetchall())
                conn.close()

        store.create_session("s1", workspace=str(ws))
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=look).start(spec_for(ws, "go", policy=policy,
                                                       session_id="s1"))
        run = store.run(outcome.run_id)
        assert run.session_id == "s1"
        assert (run.goal, run.workspace, run.model, run.parent_run_id, run.depth) == (
            "go", str(ws), "recorded", None, 0)
        assert run.policy == policy.to_json()
        assert run.sandbox == events.seen[0].data["sandbox"]
        assert run.settings["gate_inputs"] == []
    assert [(pid, round(started, 2)) for pid, started in owners] == [
        (os.getpid(), round(_own_start_time(), 2))] * 2
