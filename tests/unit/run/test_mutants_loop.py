"""The run loop pinned to exact values (mutation testing's survivors in `run/_loop.py`):
real runs of the shipped scripted provider over a real SQLite store with an injected
clock. What each step records and emits, where a resumed run picks up and that it never
runs a recorded call again (at most once), the gates' verdict and what the model is told
when one fails, the operator's interrupt and steer, and the resume arguments' checks."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    Budget,
    CheckpointState,
    CompletionRequest,
    CompletionResponse,
    Event,
    EventKind,
    Message,
    Pause,
    ProviderError,
    Runner,
    RunStatus,
    Store,
    TaskContract,
    ToolCall,
    Usage,
    UsageError,
)
from harness_core.run._act import INTERRUPTED_OBSERVATION
from harness_core.run._ask import _continued
from harness_core.run._drive_help import _check_resume_args
from harness_core.verification import VerifyCriterion
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import scripted as _scripted
from tests.unit.run.loop_support import workspace as _ws
from tests.unit.run.loop_support import write as _write
from tests.unit.session.support import Events, spec_for


def _line(text: str, *calls: dict[str, Any], prompt: int = 10, completion: int = 2
          ) -> dict[str, Any]:
    line: dict[str, Any] = {"text": text, "usage": {
        "prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": prompt + completion}}
    if calls:
        line["tool_calls"] = list(calls)
    return line


def _kinds(events: Events) -> list[tuple[EventKind, Any]]:
    return [(e.kind, e.data.get("step")) for e in events.seen]


def test_a_two_step_run_emits_every_event_with_its_fields(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    provider = _scripted(tmp_path, [_line("writing", _write("a.txt", "one\n")),
                                    _line("done", prompt=20, completion=3)])
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider, clock=ManualClock(), on_event=events).start(
            spec_for(ws, "go"))
    run_id = outcome.run_id
    assert (outcome.status, outcome.reason, outcome.steps, outcome.pause, outcome.verified,
            outcome.gates) == (RunStatus.FINISHED, "done; no gates configured", 2, None, None,
                               ())
    assert all(e.run_id == run_id for e in events.seen)
    started = events.seen[0]
    assert started.kind is EventKind.RUN_STARTED
    assert {k: v for k, v in started.data.items() if k != "sandbox"} == {
        "goal": "go", "resumed": False, "workspace": str(ws), "parent_run_id": None,
        "depth": 0}
    assert started.data["sandbox"]["backend"] == "off"
    assert started.data["sandbox"]["commands_sandboxed"] is True

    def usage(prompt: int, completion: int) -> dict[str, Any]:
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion, "cache_read_tokens": None,
                "cache_write_tokens": None, "reasoning_tokens": None,
                "server_tool_requests": None, "estimated": False}

    assert [(e.kind, e.data) for e in events.seen[1:]] == [
        (EventKind.STEP_STARTED, {"step": 0}),
        (EventKind.TOKEN, {"text": "writing", "step": 0}),
        (EventKind.COMPLETION, {
            "step": 0, "text": "writing", "model": "scripted-replay", "provider": "scripted",
            "request_model": "recorded", "usage": usage(10, 2), "latency_ms": 0.0,
            "ttft_ms": None, "tool_calls": 1}),
        (EventKind.TOOL_CALL, {"step": 0, "call_id": "call_0_0", "name": "write_file",
                               "arguments": {"path": "a.txt", "content": "one\n"}}),
        (EventKind.TOOL_RESULT, {"step": 0, "call_id": "call_0_0", "name": "write_file",
                                 "output": "wrote 4 bytes to a.txt", "is_error": False,
                                 "refused": None}),
        (EventKind.CHECKPOINT, {"step": 0}),
        (EventKind.STEP_STARTED, {"step": 1}),
        (EventKind.TOKEN, {"text": "done", "step": 1}),
        (EventKind.COMPLETION, {
            "step": 1, "text": "done", "model": "scripted-replay", "provider": "scripted",
            "request_model": "recorded", "usage": usage(20, 3), "latency_ms": 0.0,
            "ttft_ms": None, "tool_calls": 0}),
        (EventKind.CHECKPOINT, {"step": 1}),
        (EventKind.RUN_FINISHED, {"status": "finished", "reason": "done; no gates configured",
                                  "steps": 2}),
    ]


def test_each_step_records_its_completion_ledger_checkpoint_and_draw(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    provider = _scripted(tmp_path, [
        _line("two calls", _write("a.txt", "1"), _write("b.txt", "22")),
        _line("done", prompt=20, completion=3)])
    clock = ManualClock()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider, clock=clock).start(spec_for(ws, "go"))
        run = store.run(outcome.run_id)
        assert (run.status, run.reason, run.steps_used, run.tokens_used, run.wall_used) == (
            RunStatus.FINISHED, "done; no gates configured", 2, 35, 0.0)
        assert run.owner_pid is None  # released at the end
        steps = store.steps(outcome.run_id)
        assert [(s.step_index, s.text, s.provider, s.model_served) for s in steps] == [
            (0, "two calls", "scripted", "scripted-replay"),
            (1, "done", "scripted", "scripted-replay")]
        assert [(e.step_index, e.call_index, e.name, e.observation, e.is_error)
                for e in store.ledger(outcome.run_id)] == [
            (0, 0, "write_file", "wrote 1 bytes to a.txt", False),
            (0, 1, "write_file", "wrote 2 bytes to b.txt", False)]
        last = store.last_checkpoint(outcome.run_id)
        assert last is not None
        assert last.state == CheckpointState(1, done=True, verified=True)
        assert [e.edit.path for e in store.edits(outcome.run_id)] == ["a.txt", "b.txt"]
        roles = [m.role.value for m in store.messages(outcome.run_id)]
        assert roles == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert (ws / "a.txt").read_text() == "1" and (ws / "b.txt").read_text() == "22"


def test_wall_time_is_drawn_per_step_from_the_clock(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    clock = ManualClock()

    def tick(event: Event) -> None:
        if event.kind is EventKind.STEP_STARTED:
            clock.advance(1.5)

    provider = _scripted(tmp_path, [_line("w", _write("a.txt", "1")), _line("done")])
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider, clock=clock, on_event=tick).start(spec_for(ws, "go"))
        assert store.run(outcome.run_id).wall_used == 3.0


def _crash_after_intent(path: Path, run_id: str, step: int) -> None:
    """Leave the store as a `kill -9` between a call's intent and its observation would:
    the intent, no observation, no checkpoint for the step, the run still `running`."""
    conn = sqlite3.connect(path)
    conn.execute("UPDATE ledger SET observation = NULL, is_error = 0, data = NULL,"
                 " observed_at = NULL WHERE run_id = ? AND step_index = ?", (run_id, step))
    conn.execute("DELETE FROM messages WHERE run_id = ? AND step_index = ? AND role = 'tool'",
                 (run_id, step))
    conn.execute("DELETE FROM edits WHERE run_id = ? AND step_index = ?", (run_id, step))
    conn.execute("DELETE FROM checkpoints WHERE run_id = ? AND step_index >= ?", (run_id, step))
    conn.execute("DELETE FROM budget_draws WHERE run_id = ? AND step_index >= ?",
                 (run_id, step))
    conn.execute("UPDATE runs SET status = 'running', reason = NULL, steps_used = ?,"
                 " tokens_used = 12 * ?, owner_pid = 999999999 WHERE run_id = ?",
                 (step, step, run_id))
    conn.commit()
    conn.close()


def test_a_call_cut_off_by_a_crash_is_never_run_again(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("first", _write("a.txt", "1")), _line("second", _write("b.txt", "2")),
             _line("third", _write("c.txt", "3")), _line("done")]
    spec = spec_for(ws, "go", budget=Budget(max_steps=2, max_tokens=None, wall_seconds=None))
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).start(spec)
    assert (first.status, first.steps) == (RunStatus.STOPPED, 2)
    _crash_after_intent(tmp_path / "state.db", first.run_id, 1)
    (ws / "b.txt").write_text("changed by hand")  # would be overwritten by a rerun
    events = Events()
    with Store(tmp_path / "state.db") as store:
        second = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                        on_event=events).resume(first.run_id, spec_for(ws, "go"))
        assert (second.status, second.steps) == (RunStatus.FINISHED, 4)
        ledger = store.ledger(first.run_id)
        assert [(e.step_index, e.name, e.observation, e.is_error) for e in ledger] == [
            (0, "write_file", "wrote 1 bytes to a.txt", False),
            (1, "write_file", INTERRUPTED_OBSERVATION, True),
            (2, "write_file", "wrote 1 bytes to c.txt", False)]
        run = store.run(first.run_id)
        assert (run.steps_used, run.tokens_used) == (4, 48)
        assert [s.step_index for s in store.steps(first.run_id)] == [0, 1, 2, 3]
    assert (ws / "b.txt").read_text() == "changed by hand"
    # the recorded step 1 was replayed from the store: the provider was asked for 2 and 3
    assert [e.data["step"] for e in events.seen if e.kind is EventKind.STEP_STARTED] == [2, 3]
    assert [(e.data["step"], e.data["is_error"]) for e in events.seen
            if e.kind is EventKind.TOOL_RESULT] == [(1, True), (2, False)]
    assert events.seen[0].data["resumed"] is True


def test_a_resume_replays_observed_calls_from_the_store(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("first", _write("a.txt", "1"), _write("b.txt", "2")), _line("done")]
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go"))
        conn = sqlite3.connect(tmp_path / "state.db")
        # a crash after both observations of step 0, before its checkpoint
        conn.execute("DELETE FROM checkpoints WHERE run_id = ?", (first.run_id,))
        for table in ("steps", "completions", "messages"):
            conn.execute(f"DELETE FROM {table} WHERE run_id = ? AND step_index = 1",  # noqa: S608
                         (first.run_id,))
        conn.execute("UPDATE runs SET status = 'running' WHERE run_id = ?", (first.run_id,))
        conn.commit()
        conn.close()
        (ws / "a.txt").write_text("kept")
        events = Events()
        second = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                        on_event=events).resume(first.run_id, spec_for(ws, "go"))
        assert second.status is RunStatus.FINISHED
        assert [e.kind for e in events.seen if e.kind in (
            EventKind.TOOL_CALL, EventKind.TOOL_RESULT)] == []  # nothing ran again
        assert [e.observation for e in store.ledger(first.run_id)] == [
            "wrote 1 bytes to a.txt", "wrote 1 bytes to b.txt"]
        assert [e.data["step"] for e in events.seen if e.kind is EventKind.CHECKPOINT] == [
            0, 1]
    assert (ws / "a.txt").read_text() == "kept"


def test_resuming_a_finished_run_asks_nothing_and_reports_its_record(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    gate = VerifyCriterion(command="true")
    spec = spec_for(ws, "go", contract=TaskContract(goal="go", verify=(gate,)))
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, [_line("done")]), clock=ManualClock()).start(
            spec)
        events = Events()
        again = Runner(store, _scripted(tmp_path, []), clock=ManualClock(),
                       on_event=events).resume(first.run_id, spec)
    assert (again.run_id, again.status, again.reason, again.steps, again.verified) == (
        first.run_id, RunStatus.FINISHED, "done; every gate passed", 1, True)
    assert [(g.criterion, g.passed, g.step_index) for g in again.gates] == [("true", True, 0)]
    assert events.seen == []


def test_a_failed_gate_is_the_next_thing_the_model_reads(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    gate = VerifyCriterion(command="test -f b.txt")
    spec = spec_for(ws, "go", contract=TaskContract(goal="go", verify=(gate,)))
    lines = [_line("done already"), _line("fixing", _write("b.txt", "x")), _line("done now")]
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=events).start(spec)
        assert (outcome.status, outcome.steps, outcome.verified) == (
            RunStatus.FINISHED, 3, True)
        assert [(g.criterion, g.passed, g.exit_status, g.step_index) for g in outcome.gates] \
            == [("test -f b.txt", True, 0, 2)]
        verdicts = store.verifications(outcome.run_id)
        assert [(v.step_index, v.passed, v.exit_status) for v in verdicts] == [
            (0, False, 1), (2, True, 0)]
        told = store.messages(outcome.run_id)[3]
        assert told == Message.user("Verification failed; the task is not done yet.\n\n"
                                    "$ test -f b.txt\n(exit 1)\n")
        checkpoints = sqlite3.connect(tmp_path / "state.db").execute(
            "SELECT step_index, state FROM checkpoints ORDER BY step_index").fetchall()
        assert [(s, json.loads(state)) for s, state in checkpoints] == [
            (0, {"step": 0, "done": True, "verified": False}),
            (1, {"step": 1, "done": False, "verified": None}),
            (2, {"step": 2, "done": True, "verified": True})]
    gates = [e.data for e in events.seen if e.kind is EventKind.VERIFICATION]
    assert [(g["step"], g["command"], g["passed"], g["exit_status"], g["sandbox"])
            for g in gates] == [(0, "test -f b.txt", False, 1, "off"),
                                (2, "test -f b.txt", True, 0, "off")]


def test_a_run_that_says_done_with_gates_unrun_runs_them_on_resume(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    gate = VerifyCriterion(command="true")
    spec = spec_for(ws, "go", contract=TaskContract(goal="go", verify=(gate,)))
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, [_line("done")]), clock=ManualClock()).start(
            spec)
        conn = sqlite3.connect(tmp_path / "state.db")
        conn.execute("DELETE FROM verifications")
        conn.execute("UPDATE checkpoints SET state = ?",
                     (json.dumps({"step": 0, "done": True, "verified": None}),))
        conn.execute("UPDATE runs SET status = 'running'")
        conn.commit()
        conn.close()
        events = Events()
        again = Runner(store, _scripted(tmp_path, []), clock=ManualClock(),
                       on_event=events).resume(first.run_id, spec)
        assert (again.status, again.steps, again.verified) == (RunStatus.FINISHED, 1, True)
        assert [e.kind for e in events.seen if e.kind is EventKind.STEP_STARTED] == []
        assert [v.step_index for v in store.verifications(first.run_id)] == [0]


def test_a_replay_that_runs_out_errors_with_the_providers_words(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, [_line("w", _write("a.txt", "1"))]),
                         clock=ManualClock()).start(spec_for(ws, "go"))
        assert (outcome.status, outcome.steps) == (RunStatus.ERRORED, 1)
        assert outcome.reason == ("provider: the scripted replay script.jsonl has 1"
                                  " completions; step 2 asked for one more")
        assert store.run(outcome.run_id).reason == outcome.reason


class _Failing:
    """A provider whose every completion fails after two attempts (a vendor outage)."""

    name = "failing"

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        from harness_core import ProviderAttempt

        raise ProviderError("both down", attempts=(
            ProviderAttempt("a", "m1", False, "503", 503),
            ProviderAttempt("b", "m2", False, "timeout", None)))

    def close(self) -> None:
        return None


def test_a_provider_outage_records_each_attempt_and_errors(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _Failing(), clock=ManualClock()).start(spec_for(ws, "go"))
        assert (outcome.status, outcome.reason, outcome.steps) == (
            RunStatus.ERRORED, "provider: both down", 0)
        assert [(a.step_index, a.seq, a.attempt.provider, a.attempt.error, a.attempt.status)
                for a in store.provider_attempts(outcome.run_id)] == [
            (0, 0, "a", "503", 503), (0, 1, "b", "timeout", None)]


class _PausedTurns:
    """Answers `pause_turn` twice (a long server-tool turn) before the final text; step 1
    is done. Plays the vendor's part the scripted replay has no field for."""

    name = "pausing"

    def __init__(self) -> None:
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        self.requests.append(request)
        if step == 1:
            return CompletionResponse(text="done", usage=Usage(1, 1, 2), model="m")
        part = len(self.requests)  # step 0's first, second, third request
        if part < 3:
            return CompletionResponse(text=f"part{part} ", usage=Usage(10, 5, 15, 4),
                                      model="m", stop_reason="pause_turn", latency_ms=2.0,
                                      ttft_ms=1.0 if part == 2 else None)
        return CompletionResponse(text="end", tool_calls=(ToolCall("c", "list_dir", {}),),
                                  usage=Usage(1, None, 1), model="m", stop_reason="tool_use",
                                  latency_ms=3.0)

    def close(self) -> None:
        return None


def test_a_paused_turn_is_continued_and_kept_as_one_step(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    provider = _PausedTurns()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider, clock=ManualClock()).start(spec_for(ws, "go"))
        assert (outcome.status, outcome.steps) == (RunStatus.FINISHED, 2)
        step = store.step(outcome.run_id, 0)
        assert step is not None
        assert step.text == "part1 part2 end"
        assert step.usage == Usage(21, 10, 31, 8)
        assert (step.latency_ms, step.ttft_ms) == (7.0, 1.0)
        assert [c.name for c in step.tool_calls] == ["list_dir"]
    # each continuation carried what was said so far as the assistant's prefix
    assert [m.content for m in provider.requests[1].messages[-1:]] == ["part1"]
    assert [m.content for m in provider.requests[2].messages[-1:]] == ["part1 part2"]
    assert len(provider.requests) == 4


def test_continued_usage_adds_what_either_part_reported() -> None:
    first = CompletionResponse(text="a", usage=Usage(1, None, None, 2), latency_ms=1.5,
                               ttft_ms=None)
    more = CompletionResponse(text="b", usage=Usage(3, None, 4, None), latency_ms=2.0,
                              ttft_ms=9.0, model="m2")
    merged = _continued(first, more)
    assert (merged.text, merged.usage, merged.latency_ms, merged.ttft_ms, merged.model) == (
        "ab", Usage(4, None, 4, 2), 3.5, 9.0, "m2")


def test_an_interrupt_from_the_operator_stops_at_a_step_boundary(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("a", _write("a.txt", "1")), _line("b", _write("b.txt", "2")),
             _line("done")]
    with Store(tmp_path / "state.db") as store:

        def interrupt(event: Event) -> None:
            if event.kind is EventKind.CHECKPOINT and event.data["step"] == 0:
                store.post_inbox(event.run_id, "interrupt", {})

        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=interrupt).start(spec_for(ws, "go"))
        assert (outcome.status, outcome.reason, outcome.steps) == (
            RunStatus.INTERRUPTED, "interrupted by the operator (io interrupt)", 1)
        resumed = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).resume(
            outcome.run_id, spec_for(ws, "go"))
        assert (resumed.status, resumed.steps) == (RunStatus.FINISHED, 3)


def test_a_steer_reaches_the_model_before_the_next_step(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("a", _write("a.txt", "1")), _line("done")]
    events = Events()
    with Store(tmp_path / "state.db") as store:

        def steer(event: Event) -> None:
            events(event)
            if event.kind is EventKind.CHECKPOINT and event.data["step"] == 0:
                store.post_inbox(event.run_id, "steer", {"text": "use tabs"})

        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=steer).start(spec_for(ws, "go"))
        assert outcome.status is RunStatus.FINISHED
        messages = store.messages(outcome.run_id)
        assert messages[4] == Message.user("[operator steer] use tabs")
        assert [m.role.value for m in messages] == [
            "system", "user", "assistant", "tool", "user", "assistant"]
    assert [e.data for e in events.seen if e.kind is EventKind.STEER] == [
        {"text": "use tabs", "step": 1}]


def test_cancel_interrupts_before_the_next_step(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("a", _write("a.txt", "1")), _line("done")]
    runners: list[Runner] = []

    def cancel(event: Event) -> None:
        if event.kind is EventKind.CHECKPOINT:
            runners[0].cancel()

    with Store(tmp_path / "state.db") as store:
        runners.append(Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                              on_event=cancel))
        outcome = runners[0].start(spec_for(ws, "go"))
        assert (outcome.status, outcome.reason, outcome.steps) == (
            RunStatus.INTERRUPTED, "interrupted by the operator", 1)
        assert store.run(outcome.run_id).status is RunStatus.INTERRUPTED


@pytest.mark.parametrize(("pause", "approve", "answer", "message", "hint"), [
    (Pause("approval", target="exec rm"), None, None,
     "the run is paused for an approval of exec rm", "resume it with --approve or --deny"),
    (Pause("question", question="which?"), None, None,
     "the run is paused for an answer to: which?", "resume it with --answer TEXT"),
    (None, True, None, "--approve/--deny given, but the run is not waiting for an approval",
     None),
    (Pause("question", question="q"), False, "a",
     "--approve/--deny given, but the run is not waiting for an approval", None),
    (None, None, "text", "--answer given, but the run is not waiting for an answer", None),
    (Pause("approval", target="t"), True, "x",
     "--answer given, but the run is not waiting for an answer", None),
])
def test_resume_arguments_that_do_not_fit_the_pause(pause: Pause | None, approve: bool | None,
                                                    answer: str | None, message: str,
                                                    hint: str | None) -> None:
    with pytest.raises(UsageError) as info:
        _check_resume_args(pause, approve, answer)
    assert (str(info.value), info.value.hint) == (message, hint)


@pytest.mark.parametrize(("pause", "approve", "answer"), [
    (None, None, None), (Pause("approval"), True, None), (Pause("approval"), False, None),
    (Pause("question"), None, "an answer"), (Pause("question"), None, "")])
def test_resume_arguments_that_fit(pause: Pause | None, approve: bool | None,
                                   answer: str | None) -> None:
    _check_resume_args(pause, approve, answer)


def test_a_run_owner_is_alive_only_as_the_very_process_it_was() -> None:
    import os

    from harness_core.run._drive_help import _own_start_time, _process_alive

    me, started = os.getpid(), _own_start_time()
    assert _process_alive(me, None) is True
    assert _process_alive(me, started) is True
    assert _process_alive(me, started + 0.5) is False  # the pid was reused by another
    assert _process_alive(me, started - 0.009) is True
    assert _process_alive(2**22 + 12345, None) is False  # no such process


def test_the_wall_clock_budget_spans_a_resume(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line(f"s{i}", _write(f"f{i}.txt", str(i))) for i in range(8)]
    spec = spec_for(ws, "go", budget=Budget(max_steps=None, max_tokens=None, wall_seconds=5))
    clock = ManualClock()
    with Store(tmp_path / "state.db") as store:

        def tick_and_interrupt(event: Event) -> None:
            if event.kind is EventKind.STEP_STARTED:
                clock.advance(2.0)
            if event.kind is EventKind.CHECKPOINT and event.data["step"] == 0:
                store.post_inbox(event.run_id, "interrupt", {})

        first = Runner(store, _scripted(tmp_path, lines), clock=clock,
                       on_event=tick_and_interrupt).start(spec)
        assert (first.status, first.steps, store.run(first.run_id).wall_used) == (
            RunStatus.INTERRUPTED, 1, 2.0)

        def tick(event: Event) -> None:
            if event.kind is EventKind.STEP_STARTED:
                clock.advance(2.0)

        second = Runner(store, _scripted(tmp_path, lines), clock=clock,
                        on_event=tick).resume(first.run_id, spec)
        # 2 s before the resume, then 2 s a step: the budget is spent before step 3
        assert (second.status, second.steps, second.reason) == (
            RunStatus.STOPPED, 3, "budget: the wall-clock budget of 5s is spent")
        assert store.run(first.run_id).wall_used == 6.0


def test_an_answer_given_on_resume_is_the_asking_calls_observation(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    ask = {"name": "ask_question", "arguments": {"question": "which colour?"}}
    lines = [_line("asking", ask), _line("done")]
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go"))
        assert (paused.status, paused.reason) == (RunStatus.PAUSED, "paused for question")
        assert paused.pause is not None and paused.pause.question == "which colour?"
        events = Events()
        done = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                      on_event=events).resume(paused.run_id, spec_for(ws, "go"), answer="blue")
        assert done.status is RunStatus.FINISHED
        (entry,) = store.ledger(paused.run_id)
        assert (entry.observation, entry.is_error) == ("The operator answered: blue", False)
        (question,) = store.questions(paused.run_id)
        assert (question.question, question.answer, question.answered_by) == (
            "which colour?", "blue", "person")
    answered = [e.data for e in events.seen if e.kind is EventKind.QUESTION]
    assert answered == [{"step": 0, "question": "which colour?", "answer": "blue",
                         "answered_by": "person"}]
    assert [e.data["output"] for e in events.seen if e.kind is EventKind.TOOL_RESULT] == [
        "The operator answered: blue"]


def test_a_child_is_resumed_through_its_root(tmp_path: Path) -> None:
    from harness_core.store._tree import TreePlace

    with Store(tmp_path / "state.db") as store:
        for run_id, place in (("root", None), ("kid", TreePlace("root", 1, 0, 0))):
            store.create_run(run_id, goal="g", workspace=str(tmp_path), model="m",
                             settings={}, policy={}, sandbox=None, messages=[],
                             parent_run_id="root" if place else None, tree=place)
        with pytest.raises(UsageError) as info:
            Runner(store, _scripted(tmp_path, [])).resume("kid", spec_for(_ws(tmp_path), "g"))
    assert str(info.value) == ("run kid is a child in the tree of run root; a child is"
                               " resumed through its root")
    assert info.value.hint == "io resume root"


def test_a_continued_turn_keeps_both_parts_records() -> None:
    from harness_core import Citation, ProviderAttempt, ServerToolCall

    first = CompletionResponse(text="a", citations=(Citation("u1"),),
                               server_tool_calls=(ServerToolCall("web_search"),),
                               attempts=(ProviderAttempt("p", "m", True),))
    more = CompletionResponse(text="b", citations=(Citation("u2"),),
                              server_tool_calls=(ServerToolCall("web_fetch"),),
                              attempts=(ProviderAttempt("p", "m", False, "x"),))
    merged = _continued(first, more)
    assert [c.url for c in merged.citations] == ["u1", "u2"]
    assert [s.name for s in merged.server_tool_calls] == ["web_search", "web_fetch"]
    assert [a.ok for a in merged.attempts] == [True, False]


def _gated_run(tmp_path: Path, content: str) -> tuple[Any, Events]:
    ws = _ws(tmp_path)
    (ws / "b.txt").write_text("old\n")
    gate = VerifyCriterion(command="cat b.txt", inputs=("b.txt",), editable=True)
    spec = spec_for(ws, "go", contract=TaskContract(goal="go", verify=(gate,)))
    lines = [_line("w", _write("b.txt", content)), _line("done")]
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=events).start(spec)
        assert list(store.verifications(outcome.run_id)) == list(outcome.gates)
    return outcome, events


def test_a_gate_whose_inputs_the_agent_changed_says_so(tmp_path: Path) -> None:
    outcome, events = _gated_run(tmp_path, "new\n")
    (gate,) = outcome.gates
    assert (gate.step_index, gate.criterion, gate.passed, gate.exit_status, gate.output,
            gate.sandbox) == (1, "cat b.txt", True, 0, "new\n", "off")
    assert gate.inputs is not None
    assert (gate.inputs.inputs, gate.inputs.editable, gate.inputs.untouched,
            gate.inputs.modified) == (("b.txt",), True, False, ("b.txt",))
    assert [(e.kind, e.data) for e in events.seen if e.kind in (
        EventKind.WARNING, EventKind.VERIFICATION)] == [
        (EventKind.WARNING, {"text": "gate inputs were modified by the agent (cat b.txt):"
                                     " b.txt", "gate": "cat b.txt",
                             "modified_inputs": ["b.txt"], "editable": True}),
        (EventKind.VERIFICATION, {"step": 1, "command": "cat b.txt", "passed": True,
                                  "exit_status": 0, "output": "new\n", "sandbox": "off",
                                  "duration_seconds": 0.0, "inputs_untouched": False,
                                  "modified_inputs": ["b.txt"]})]


def test_a_gate_whose_inputs_were_left_alone_says_untouched(tmp_path: Path) -> None:
    outcome, events = _gated_run(tmp_path, "old\n")
    (gate,) = outcome.gates
    assert gate.inputs is not None
    assert (gate.inputs.inputs, gate.inputs.editable, gate.inputs.untouched,
            gate.inputs.modified) == (("b.txt",), True, True, ())
    assert [e.kind for e in events.seen].count(EventKind.WARNING) == 0
    (verdict,) = [e.data for e in events.seen if e.kind is EventKind.VERIFICATION]
    assert (verdict["inputs_untouched"], verdict["modified_inputs"]) == (True, [])


def test_the_cost_budget_counts_the_steps_before_a_resume(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line(f"s{i}", _write(f"f{i}.txt", str(i))) for i in range(6)]
    priced: list[str] = []

    def cost_of(model: str, usage: Usage) -> float:
        priced.append(model)
        return 0.5

    spec = spec_for(ws, "go", budget=Budget(max_steps=None, max_tokens=None,
                                            wall_seconds=None, max_cost_usd=1.2),
                    cost_of=cost_of)
    with Store(tmp_path / "state.db") as store:

        def interrupt(event: Event) -> None:
            if event.kind is EventKind.CHECKPOINT and event.data["step"] == 1:
                store.post_inbox(event.run_id, "interrupt", {})

        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                       on_event=interrupt).start(spec)
        assert (first.status, first.steps) == (RunStatus.INTERRUPTED, 2)
        priced.clear()
        second = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).resume(
            first.run_id, spec)
    # $1.00 drawn before the resume: one more step ($1.50) spends the $1.20 budget
    assert (second.status, second.steps) == (RunStatus.STOPPED, 3)
    assert second.reason == ("budget: the cost budget of $1.2 is spent"
                             " ($1.5000 derived from [prices])")
    assert set(priced) == {"scripted-replay"}  # priced as the model that served each step
