"""The run loop's resume paths pinned to exact values (mutation testing's survivors in
`run/_loop.py`): a run paused for an approval and resumed with the operator's decision,
a resume under the policy the run recorded, what a resumed drive records and emits, a
terminal run resumed, and the cost budget across a resume that replays a recorded step.
Real runs of the shipped scripted provider over a real SQLite store, injected clock."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from harness_core import (
    Budget,
    Event,
    EventKind,
    Pause,
    Policy,
    Runner,
    RunStatus,
    Store,
    Usage,
)
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import crash_in_step_1 as _crash_in_step_1
from tests.unit.run.loop_support import line as _line
from tests.unit.run.loop_support import scripted as _scripted
from tests.unit.run.loop_support import workspace as _ws
from tests.unit.run.loop_support import write as _write
from tests.unit.session.support import Events, spec_for

_ASKS = Policy.from_lists(tier="read-only")  # a write needs approval; nobody to ask here
_PAUSE = Pause("approval", step=0, call_index=0, call_id="call_0_0", tool="write_file",
               act="write", target="write a.txt",
               reason="the read-only tier needs approval for write", rule="tier:read-only",
               layer="tier")


def _paused(tmp_path: Path, store: Store) -> str:
    ws = _ws(tmp_path)
    lines = [_line("w", _write("a.txt", "1")), _line("done")]
    events = Events()
    outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                     on_event=events).start(spec_for(ws, "go", policy=_ASKS))
    assert (outcome.status, outcome.reason, outcome.steps, outcome.pause, outcome.verified,
            outcome.gates) == (RunStatus.PAUSED, "paused for approval", 1, _PAUSE, None, ())
    # the step it paused in counts (its completion is recorded; every view lists it)
    assert [(e.kind, e.data) for e in events.seen[-2:]] == [
        (EventKind.APPROVAL, {"pending": True, **_PAUSE.to_json()}),
        (EventKind.RUN_FINISHED, {"status": "paused", "reason": "paused for approval",
                                  "steps": 1})]
    run = store.run(outcome.run_id)
    assert (run.status, run.reason, run.pause, run.owner_pid) == (
        RunStatus.PAUSED, "paused for approval", _PAUSE, None)
    (entry,) = store.ledger(outcome.run_id)
    assert (entry.name, entry.observation) == ("write_file", None)  # the intent only
    assert store.last_checkpoint(outcome.run_id) is None
    return outcome.run_id


def _resume(tmp_path: Path, store: Store, run_id: str, approve: bool) -> tuple[Any, Events]:
    lines = [_line("w", _write("a.txt", "1")), _line("done")]
    events = Events()
    outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                     on_event=events).resume(run_id, spec_for(_ws(tmp_path), "go",
                                                              policy=_ASKS), approve=approve)
    return outcome, events


def test_an_approval_given_on_resume_runs_the_paused_call(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        run_id = _paused(tmp_path, store)
        outcome, events = _resume(tmp_path, store, run_id, approve=True)
        assert (outcome.status, outcome.steps, outcome.pause) == (RunStatus.FINISHED, 2, None)
        (entry,) = store.ledger(run_id)
        assert (entry.observation, entry.is_error) == ("wrote 1 bytes to a.txt", False)
        assert [(p.act, p.target, p.verdict, p.reason, p.layer, p.decided_by, p.step_index)
                for p in store.policy_events(run_id)] == [
            ("write", "write a.txt", "allow", "approved by operator", "tier", "operator", 0)]
        run = store.run(run_id)
        assert (run.status, run.pause) == (RunStatus.FINISHED, None)
    assert (tmp_path / "ws" / "a.txt").read_text() == "1"
    # the recorded step 0 is replayed (never asked of the provider again); step 1 is new
    assert [e.data["step"] for e in events.seen if e.kind is EventKind.STEP_STARTED] == [1]
    assert [e.data["name"] for e in events.seen if e.kind is EventKind.TOOL_CALL] == [
        "write_file"]


def test_a_denial_given_on_resume_is_the_paused_calls_refusal(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        run_id = _paused(tmp_path, store)
        outcome, events = _resume(tmp_path, store, run_id, approve=False)
        assert (outcome.status, outcome.steps) == (RunStatus.FINISHED, 2)
        (entry,) = store.ledger(run_id)
        assert (entry.observation, entry.is_error) == (
            "refused: write a.txt: denied by operator (rule 'tier:read-only', layer tier)", True)
        assert [(p.verdict, p.reason, p.decided_by) for p in store.policy_events(run_id)] == [
            ("deny", "denied by operator", "operator")]
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert [e.data["decided_by"] for e in events.seen if e.kind is EventKind.REFUSAL] == [
        "operator"]


def test_a_resumed_drive_is_announced_and_recorded(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        run_id = _paused(tmp_path, store)
        _, events = _resume(tmp_path, store, run_id, approve=True)
        started = events.seen[0]
        assert (started.kind, started.run_id) == (EventKind.RUN_STARTED, run_id)
        assert {k: v for k, v in started.data.items() if k != "sandbox"} == {
            "goal": "go", "resumed": True, "workspace": str(tmp_path / "ws"),
            "parent_run_id": None}
        assert (started.data["sandbox"]["backend"],
                started.data["sandbox"]["commands_sandboxed"]) == ("off", True)
        drives = store.drives(run_id)
        assert [d.seq for d in drives] == [0, 1]
        assert drives[1].policy == _ASKS.to_json()
        assert drives[1].sandbox == started.data["sandbox"]
        assert store.run(run_id).owner_pid is None  # released again at the end


def _interrupted_after_step_0(tmp_path: Path, store: Store, policy: Policy) -> str:
    lines = [_line("a", _write("a.txt", "1")), _line("b", _write("b.txt", "2")),
             _line("done")]

    def interrupt(event: Event) -> None:
        if event.kind is EventKind.CHECKPOINT and event.data["step"] == 0:
            store.post_inbox(event.run_id, "interrupt", {})

    outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                     on_event=interrupt).start(spec_for(_ws(tmp_path), "go", policy=policy))
    assert (outcome.status, outcome.steps) == (RunStatus.INTERRUPTED, 1)
    return outcome.run_id


def _resume_b(tmp_path: Path, store: Store, run_id: str, *, stored: bool) -> str | None:
    lines = [_line("a", _write("a.txt", "1")), _line("b", _write("b.txt", "2")),
             _line("done")]
    outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).resume(
        run_id, spec_for(_ws(tmp_path), "go", policy=Policy.from_lists(tier="full")),
        stored_policy=stored)
    assert (outcome.status, outcome.steps) == (RunStatus.FINISHED, 3)
    (entry,) = store.ledger(run_id, 1)
    return entry.observation


def test_a_resume_under_the_stored_policy_keeps_what_the_run_started_with(
        tmp_path: Path) -> None:
    recorded = Policy.from_lists(tier="full", deny_write=["b.txt"])
    with Store(tmp_path / "state.db") as store:
        run_id = _interrupted_after_step_0(tmp_path, store, recorded)
        observation = _resume_b(tmp_path, store, run_id, stored=True)
        assert observation == ("refused: write b.txt: denied by deny_write 'b.txt' (project)"
                               " (rule 'b.txt', layer project)")
        assert store.drives(run_id)[1].policy == recorded.to_json()
    assert not (tmp_path / "ws" / "b.txt").exists()


def test_a_resume_without_the_stored_policy_runs_under_the_new_one(tmp_path: Path) -> None:
    recorded = Policy.from_lists(tier="full", deny_write=["b.txt"])
    with Store(tmp_path / "state.db") as store:
        run_id = _interrupted_after_step_0(tmp_path, store, recorded)
        assert _resume_b(tmp_path, store, run_id, stored=False) == "wrote 1 bytes to b.txt"
        assert store.drives(run_id)[1].policy == Policy.from_lists(tier="full").to_json()
        assert store.run(run_id).policy == Policy.from_lists(tier="full").to_json()


def test_a_stopped_run_resumed_asks_nothing_and_reports_its_stop(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("a", _write("a.txt", "1")), _line("done")]
    spec = spec_for(ws, "go", budget=Budget(max_steps=1, max_tokens=None, wall_seconds=None))
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).start(spec)
        assert (first.status, first.steps) == (RunStatus.STOPPED, 1)
        events = Events()
        again = Runner(store, _scripted(tmp_path, []), clock=ManualClock(),
                       on_event=events).resume(first.run_id, spec_for(ws, "go"))
        assert (again.status, again.reason, again.steps, again.verified, again.gates) == (
            RunStatus.STOPPED, "budget: the step budget of 1 is spent", 1, None, ())
        assert events.seen == []
        conn = sqlite3.connect(tmp_path / "state.db")
        conn.execute("UPDATE runs SET reason = NULL")
        conn.commit()
        conn.close()
        bare = Runner(store, _scripted(tmp_path, [])).resume(first.run_id, spec_for(ws, "go"))
        assert (bare.status, bare.reason) == (RunStatus.STOPPED, "stopped")


def test_a_replayed_step_is_priced_once_across_a_resume(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line(f"s{i}", _write(f"f{i}.txt", str(i))) for i in range(6)]
    priced: list[str] = []

    def cost_of(model: str, usage: Usage) -> float:
        priced.append(model)
        return 0.5

    spec = spec_for(ws, "go", budget=Budget(max_steps=2, max_tokens=None,
                                            wall_seconds=None, max_cost_usd=1.2),
                    cost_of=cost_of)
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).start(spec)
        assert (first.status, first.steps) == (RunStatus.STOPPED, 2)
        _crash_in_step_1(tmp_path / "state.db", first.run_id)
        spec = spec_for(ws, "go", budget=Budget(max_steps=None, max_tokens=None,
                                                wall_seconds=None, max_cost_usd=1.2),
                        cost_of=cost_of)
        second = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).resume(
            first.run_id, spec)
    # steps 0 and 1 drew $1.00 (step 1 once, though it is replayed): step 2 is asked for
    # ($1.50), and the budget is spent before step 3
    assert (second.status, second.steps) == (RunStatus.STOPPED, 3)
    assert second.reason == ("budget: the cost budget of $1.2 is spent"
                             " ($1.5000 derived from [prices])")
