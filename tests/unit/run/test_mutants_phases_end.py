"""How a drive ends, pinned to exact values (mutation testing's survivors in `run/_stop.py`,
`Ender`, and `Runner.resume` of an ended run): the final answer a run returns (its last
text, or under an output schema the document it validated as; none for a run that did
not end on an answer), the same answer when an ended run is resumed, the schema a
resume gives of its own, the exit code recorded, the pause event a paused run emits,
the refused answer's event, and the operator messages voided at the end or landing at
the first step. Real runs of the shipped scripted provider over a real SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

from harness_core import Budget, Event, EventKind, Runner, RunStatus, Store
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import call, line, scripted, workspace
from tests.unit.session.support import Events, spec_for

_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
_FENCED = '```json\n{"n": 3}\n```'
_TOUCH = call("exec", argv=["touch", "approved.txt"])


def test_a_finished_runs_answer_is_its_last_text_and_a_resume_returns_it_again(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, [line("looking", call("list_dir")),
                                                 line("the answer is 42")]),
                      clock=ManualClock()).start(spec_for(ws, "go"))
        assert (done.status, done.steps, done.answer) == (
            RunStatus.FINISHED, 2, "the answer is 42")
        record = store.run(done.run_id)
        assert (record.exit_code, record.reason) == (0, "done; no gates configured")
        again = Runner(store, scripted(tmp_path, [line("never asked")]),
                       clock=ManualClock()).resume(done.run_id, spec_for(ws, "go"))
        assert (again.status, again.reason, again.answer, again.steps) == (
            RunStatus.FINISHED, "done; no gates configured", "the answer is 42", 2)


def test_a_run_stopped_by_its_budget_has_no_answer_even_when_resumed_ended(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    one = spec_for(ws, "go", budget=Budget(max_steps=1, max_tokens=None, wall_seconds=None))
    with Store(tmp_path / "state.db") as store:
        stopped = Runner(store, scripted(tmp_path, [line("still going", call("list_dir")),
                                                    line("done")]),
                         clock=ManualClock()).start(one)
        assert stopped.status is RunStatus.STOPPED
        assert stopped.answer == ""
        assert store.run(stopped.run_id).exit_code == stopped.exit_code == 3
        again = Runner(store, scripted(tmp_path, [line("x")]), clock=ManualClock()).resume(
            stopped.run_id, one)
        assert (again.status, again.answer) == (RunStatus.STOPPED, "")


def test_an_answer_under_a_schema_is_the_document_it_validated_as(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, [line(_FENCED)]), clock=ManualClock()).start(
            spec_for(ws, "go", answer_schema=_SCHEMA))
        assert done.status is RunStatus.FINISHED
        assert json.loads(done.answer) == {"n": 3} and done.answer != _FENCED
        # resumed ended, under the schema the run recorded: the same document
        again = Runner(store, scripted(tmp_path, [line("x")]), clock=ManualClock()).resume(
            done.run_id, spec_for(ws, "go"))
        assert again.answer == done.answer


def test_a_refused_answer_is_sent_back_then_the_run_fails_without_an_answer(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    events = Events()
    bad = [line("not json"), line('{"n": "three"}'), line("{}")]
    with Store(tmp_path / "state.db") as store:
        failed = Runner(store, scripted(tmp_path, bad), clock=ManualClock(),
                        on_event=events).start(spec_for(ws, "go", answer_schema=_SCHEMA))
        assert failed.status is RunStatus.FAILED and failed.steps == 3
        assert failed.reason.startswith(
            "the final answer does not match the output schema after 2 retries: at")
        assert failed.answer == ""
        rejected = [e.data for e in events.seen if e.kind is EventKind.ANSWER_REJECTED]
        assert [(r["step"], r["attempt"], r["retries_left"]) for r in rejected] == [
            (0, 1, 2), (1, 2, 1), (2, 3, 0)]
        assert rejected[0]["problem"].startswith("the answer is not JSON")
        sent_back = [m.content for m in store.messages(failed.run_id)
                     if m.role.value == "user"][1:]
        assert len(sent_back) == 2
        assert sent_back[0].startswith("Your final answer does not match the required JSON"
                                       " Schema: the answer is not JSON")
        assert sent_back[0].endswith("\nReply with only the corrected JSON value.")
        # an ended run that refused its answer still has none when resumed
        again = Runner(store, scripted(tmp_path, [line("x")]), clock=ManualClock()).resume(
            failed.run_id, spec_for(ws, "go"))
        assert (again.status, again.answer) == (RunStatus.FAILED, "")


def test_a_paused_run_emits_its_pending_approval_and_keeps_a_steer(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    events = Events()
    with Store(tmp_path / "state.db") as store:
        def on_event(event: Event) -> None:
            events(event)
            if event.kind is EventKind.STEP_STARTED and event.data.get("step") == 0:
                store.post_inbox(event.run_id, "steer", {"text": "later"})

        paused = Runner(store, scripted(tmp_path, [line("run it", _TOUCH), line("done")]),
                        clock=ManualClock(), on_event=on_event).start(spec_for(ws, "go"))
        assert paused.status is RunStatus.PAUSED and paused.pause is not None
        assert paused.answer == ""
        assert store.run(paused.run_id).exit_code == 4
        pending = [e for e in events.seen if e.kind is EventKind.APPROVAL
                   and e.data.get("pending")]
        assert [(e.run_id, e.data) for e in pending] == [
            (paused.run_id, {"pending": True, **paused.pause.to_json()})]
        assert not [e for e in events.seen if e.kind is EventKind.QUESTION]
        [steer] = store.operator_inputs(paused.run_id)
        assert (steer.kind, steer.state) == ("steer", "pending")  # a paused run reads it


def test_a_paused_question_emits_a_question_event(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    events = Events()
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, scripted(tmp_path, [
            line("asking", call("ask_question", question="which?")), line("done")]),
                        clock=ManualClock(), on_event=events).start(spec_for(ws, "go"))
        assert paused.status is RunStatus.PAUSED and paused.pause is not None
        questions = [e.data for e in events.seen if e.kind is EventKind.QUESTION
                     and e.data.get("pending")]
        assert questions == [{"pending": True, **paused.pause.to_json()}]
        assert not [e for e in events.seen if e.kind is EventKind.APPROVAL]


def test_an_interrupt_left_at_the_end_is_void_with_the_status_it_ended_with(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with Store(tmp_path / "state.db") as store:
        def on_event(event: Event) -> None:  # after the last step's boundary
            if event.kind is EventKind.STEP_STARTED:
                store.post_inbox(event.run_id, "interrupt", {})
                store.post_inbox(event.run_id, "steer", {"text": "too late"})

        done = Runner(store, scripted(tmp_path, [line("done")]), clock=ManualClock(),
                      on_event=on_event).start(spec_for(ws, "go"))
        assert done.status is RunStatus.FINISHED
        voided = [(o.kind, o.state, o.void_reason) for o in store.operator_inputs(done.run_id)]
        why = "the run finished before its next step boundary"
        assert voided == [("interrupt", "void", why), ("steer", "void", why)]


def test_a_resume_stopped_before_the_approval_applies_stays_paused_for_it(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    events = Events()
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, scripted(tmp_path, [line("run it", _TOUCH), line("done")]),
                        clock=ManualClock()).start(spec_for(ws, "go"))
        assert paused.pause is not None
        runner = Runner(store, scripted(tmp_path, [line("run it", _TOUCH), line("done")]),
                        clock=ManualClock(), on_event=events)
        runner.cancel()
        stopped = runner.resume(paused.run_id, spec_for(ws, "go"), approve=True)
        assert (stopped.status, stopped.pause) == (RunStatus.PAUSED, paused.pause)
        assert stopped.reason == ("paused for approval (the resume stopped before it was"
                                  " applied: interrupted by the operator)")
        record = store.run(paused.run_id)
        assert (record.status, record.reason, record.pause) == (
            RunStatus.PAUSED, stopped.reason, paused.pause)
        assert [e.data["pending"] for e in events.seen if e.kind is EventKind.APPROVAL] == [
            True]


def test_a_refused_answer_is_reported_as_an_event_of_its_run(tmp_path: Path) -> None:
    events = Events()
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, [line("not json"), line('{"n": 1}')]),
                      clock=ManualClock(), on_event=events).start(
            spec_for(workspace(tmp_path), "go", answer_schema=_SCHEMA))
        assert done.status is RunStatus.FINISHED
    assert [(e.run_id, e.data["step"]) for e in events.seen
            if e.kind is EventKind.ANSWER_REJECTED] == [(done.run_id, 0)]


def test_a_steer_left_as_a_run_starts_lands_at_its_first_step(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        def on_event(event: Event) -> None:
            if event.kind is EventKind.RUN_STARTED:
                store.post_inbox(event.run_id, "steer", {"text": "early"})

        done = Runner(store, scripted(tmp_path, [line("done")]), clock=ManualClock(),
                      on_event=on_event).start(spec_for(workspace(tmp_path), "go"))
        assert done.status is RunStatus.FINISHED
        assert [(o.kind, o.state, o.step) for o in store.operator_inputs(done.run_id)] == [
            ("steer", "landed", 0)]


def test_a_resume_with_a_schema_of_its_own_checks_the_answer_against_it(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    lines = [line("run it", _TOUCH), line('{"m": 1}')]
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go", answer_schema=_SCHEMA))
        assert paused.status is RunStatus.PAUSED
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).resume(
            paused.run_id, spec_for(ws, "go", answer_schema={"required": ["m"]}),
            approve=True)
        assert (done.status, json.loads(done.answer)) == (RunStatus.FINISHED, {"m": 1})


def test_a_run_that_failed_its_schema_has_no_answer_even_under_a_schema_it_fits(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    bad = [line('{"m": 1}')] * 3
    with Store(tmp_path / "state.db") as store:
        failed = Runner(store, scripted(tmp_path, bad), clock=ManualClock()).start(
            spec_for(ws, "go", answer_schema=_SCHEMA))
        assert failed.status is RunStatus.FAILED
        again = Runner(store, scripted(tmp_path, bad), clock=ManualClock()).resume(
            failed.run_id, spec_for(ws, "go", answer_schema={"required": ["m"]}))
        assert (again.status, again.answer) == (RunStatus.FAILED, "")
