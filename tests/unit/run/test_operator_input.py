"""Operator input is part of the run: a paused run's approval is never dropped by an
interrupt, a steer never lands between a call and its result, and every input is
recorded with when it was given and where it landed (#23)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core import (
    INTERRUPTED_OBSERVATION,
    Event,
    EventKind,
    Runner,
    RunNotInFlight,
    RunStatus,
    Store,
    interrupt_run,
    load_trace,
    steer_run,
)
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import call, line, scripted, workspace
from tests.unit.session.support import spec_for

_TOUCH = call("exec", argv=["touch", "approved.txt"])


def _paused(tmp_path: Path, store: Store) -> str:
    """A run paused for the approval of `touch approved.txt` (step 0, call 0)."""
    provider = scripted(tmp_path, [line("run it", _TOUCH), line("done")])
    outcome = Runner(store, provider, clock=ManualClock()).start(
        spec_for(workspace(tmp_path), "go"))
    assert outcome.status is RunStatus.PAUSED and outcome.pause is not None
    assert outcome.pause.kind == "approval"
    return outcome.run_id


def _resume(tmp_path: Path, store: Store, run_id: str) -> Runner:
    provider = scripted(tmp_path, [line("run it", _TOUCH), line("done")])
    return Runner(store, provider, clock=ManualClock())


def test_an_interrupt_for_a_paused_run_is_refused_and_nothing_is_queued(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        run_id = _paused(tmp_path, store)
        with pytest.raises(RunNotInFlight) as refused:
            interrupt_run(store, run_id[:6])
        assert refused.value.status == "paused"
        assert "nothing to interrupt" in refused.value.message
        assert refused.value.hint is not None and "--approve" in refused.value.hint
        assert not store.has_inbox(run_id) and store.operator_inputs(run_id) == []


def test_an_interrupt_that_raced_the_pause_still_lets_the_approved_act_run(
        tmp_path: Path) -> None:
    """An interrupt queued after the status check (or by an older io) waits for the
    first real step boundary: the approved call runs first and its outcome is known."""
    ws = workspace(tmp_path)
    with Store(tmp_path / "state.db") as store:
        run_id = _paused(tmp_path, store)
        store.post_inbox(run_id, "interrupt", {})
        runner = _resume(tmp_path, store, run_id)
        first = runner.resume(run_id, spec_for(ws, "go"), approve=True)
        assert first.status is RunStatus.INTERRUPTED
        assert (ws / "approved.txt").exists()
        entry = store.ledger(run_id)[0]
        assert entry.observation is not None and INTERRUPTED_OBSERVATION not in entry.observation
        second = _resume(tmp_path, store, run_id).resume(run_id, spec_for(ws, "go"))
        assert second.status is RunStatus.FINISHED
        assert all(INTERRUPTED_OBSERVATION not in (e.observation or "")
                   for e in store.ledger(run_id))
        kinds = [(o.kind, o.step, o.state) for o in store.operator_inputs(run_id)]
        assert kinds == [("interrupt", 1, "landed"), ("resume", 0, "landed"),
                         ("approve", 0, "landed"), ("resume", 1, "landed")]


def test_an_interrupt_queued_while_running_is_void_once_the_run_pauses(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    provider = scripted(tmp_path, [line("run it", _TOUCH), line("done")])
    with Store(tmp_path / "state.db") as store:
        def on_event(event: Event) -> None:  # the operator interrupts as step 0 begins
            if event.kind is EventKind.STEP_STARTED and event.data.get("step") == 0:
                store.post_inbox(event.run_id, "interrupt", {})

        paused = Runner(store, provider, clock=ManualClock(), on_event=on_event).start(
            spec_for(ws, "go"))
        assert paused.status is RunStatus.PAUSED
        [queued] = store.operator_inputs(paused.run_id)
        assert queued.kind == "interrupt" and queued.state == "void"
        assert queued.void_reason == "the run paused before its next step boundary"
        done = _resume(tmp_path, store, paused.run_id).resume(
            paused.run_id, spec_for(ws, "go"), approve=True)
        assert done.status is RunStatus.FINISHED and (ws / "approved.txt").exists()


def test_a_resume_stopped_before_the_decision_applies_leaves_the_run_paused(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with Store(tmp_path / "state.db") as store:
        run_id = _paused(tmp_path, store)
        runner = _resume(tmp_path, store, run_id)
        runner.cancel()  # Ctrl-C before the approved call ran
        stopped = runner.resume(run_id, spec_for(ws, "go"), approve=True)
        assert stopped.status is RunStatus.PAUSED and stopped.pause is not None
        assert stopped.pause.target == "exec touch approved.txt"
        assert "before it was applied" in stopped.reason
        assert not (ws / "approved.txt").exists()
        assert store.ledger(run_id)[0].observation is None
        again = _resume(tmp_path, store, run_id).resume(run_id, spec_for(ws, "go"),
                                                        approve=True)
        assert again.status is RunStatus.FINISHED and (ws / "approved.txt").exists()
        assert "exit status 0" in (store.ledger(run_id)[0].observation or "")


def test_a_steer_for_a_paused_run_lands_after_the_paused_call_not_between(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with Store(tmp_path / "state.db") as store:
        run_id = _paused(tmp_path, store)
        queued = steer_run(store, run_id, "mind the tests")
        assert queued.status == "paused" and "next `io resume`" in queued.lands
        done = _resume(tmp_path, store, run_id).resume(run_id, spec_for(ws, "go"),
                                                       approve=True)
        assert done.status is RunStatus.FINISHED
        roles = [(m.role.value, m.content) for m in store.messages(run_id)][2:]
        assert roles == [("assistant", "run it"), ("tool", "exit status 0"),
                         ("user", "[operator steer] mind the tests"), ("assistant", "done")]
        trace = load_trace(store, run_id)
        assert [(o.kind, o.step) for o in trace.operator_inputs] == [
            ("steer", 1), ("resume", 0), ("approve", 0)]
        approve = trace.operator_inputs[2]
        assert approve.content["target"] == "exec touch approved.txt"
        assert approve.describe() == "approved: exec touch approved.txt"


def test_a_steer_or_interrupt_for_an_ended_run_is_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, [line("done")]), clock=ManualClock()).start(
            spec_for(ws, "go"))
        for send in (lambda: steer_run(store, done.run_id, "more"),
                     lambda: interrupt_run(store, done.run_id)):
            with pytest.raises(RunNotInFlight) as refused:
                send()
            assert refused.value.status == "finished" and "ended" in refused.value.message
        assert store.operator_inputs(done.run_id) == []


def test_a_steer_left_when_the_run_ends_is_void_not_pending(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    provider = scripted(tmp_path, [line("done")])
    with Store(tmp_path / "state.db") as store:
        def on_event(event: Event) -> None:  # arrives after the last step's boundary
            if event.kind is EventKind.STEP_STARTED:
                steer_run(store, event.run_id, "too late")

        done = Runner(store, provider, clock=ManualClock(), on_event=on_event).start(
            spec_for(ws, "go"))
        [steer] = store.operator_inputs(done.run_id)
        assert steer.state == "void" and "finished" in (steer.void_reason or "")
