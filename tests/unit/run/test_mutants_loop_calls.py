"""The run loop's calls pinned to exact values (mutation testing's survivors in
`run/_loop.py`): a resumable tool given its interrupted call back (with the call's
durable name), a question's pause and its answer's record, the plan event, the token
budget across a resume, the run's owner while it runs, a resume's checks of its
arguments, and handles an earlier process left marked orphaned. Real runs of the
shipped scripted provider over a real SQLite store, injected clock."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    Budget,
    Event,
    EventKind,
    Pause,
    PauseRequested,
    PlanData,
    Runner,
    RunStatus,
    Store,
    ToolContext,
    ToolOutcome,
    ToolSpec,
    UsageError,
)
from harness_core.documents import default_toolbox
from harness_core.run._drive_help import _own_start_time
from harness_core.tool_data import AnswerData
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import call as _call
from tests.unit.run.loop_support import line as _line
from tests.unit.run.loop_support import scripted as _scripted
from tests.unit.run.loop_support import workspace as _ws
from tests.unit.session.support import Events, spec_for


class _Marked:
    """A tool that leaves a durable marker, so it can tell after a crash whether its
    call took effect (as `git_commit` does with its trailer)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("mark", "leave a marker")

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.seen.append(("run", ctx.call_ref))
        return ToolOutcome(f"marked {ctx.call_ref}")

    def resume(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.seen.append(("resume", ctx.call_ref))
        return ToolOutcome(f"found the marker of {ctx.call_ref}; not run again")


def _crash_in_step_0(path: Path, run_id: str) -> None:
    """The store as a `kill -9` during step 0's call leaves it: the intent, no
    observation, no checkpoint, the run still `running` under a dead owner."""
    conn = sqlite3.connect(path)
    conn.execute("UPDATE ledger SET observation = NULL, is_error = 0, data = NULL,"
                 " observed_at = NULL WHERE run_id = ?", (run_id,))
    conn.execute("DELETE FROM messages WHERE run_id = ? AND role = 'tool'", (run_id,))
    for table in ("checkpoints", "budget_draws", "verifications"):
        conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))  # noqa: S608
    conn.execute("DELETE FROM steps WHERE run_id = ? AND step_index > 0", (run_id,))
    conn.execute("DELETE FROM completions WHERE run_id = ? AND step_index > 0", (run_id,))
    conn.execute("DELETE FROM messages WHERE run_id = ? AND step_index > 0", (run_id,))
    conn.execute("UPDATE runs SET status = 'running', reason = NULL, steps_used = 0,"
                 " tokens_used = 0, owner_pid = 999999999 WHERE run_id = ?", (run_id,))
    conn.commit()
    conn.close()


def test_a_resumable_tool_is_given_its_interrupted_call_back(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("m", _call("mark")), _line("done")]
    tool = _Marked()
    toolbox = default_toolbox().with_tools([tool])
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                       toolbox=toolbox).start(spec_for(ws, "go"))
        assert first.status is RunStatus.FINISHED
        ref = f"{first.run_id}/0/0"
        assert tool.seen == [("run", ref)]
        _crash_in_step_0(tmp_path / "state.db", first.run_id)
        events = Events()
        again = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                       toolbox=toolbox, on_event=events).resume(first.run_id,
                                                                spec_for(ws, "go"))
        assert (again.status, again.steps) == (RunStatus.FINISHED, 2)
        (entry,) = store.ledger(first.run_id)
        assert (entry.observation, entry.is_error) == (
            f"found the marker of {ref}; not run again", False)
    assert tool.seen == [("run", ref), ("resume", ref)]
    assert [(e.data["step"], e.data["name"]) for e in events.seen
            if e.kind is EventKind.TOOL_CALL] == [(0, "mark")]


def test_a_question_pauses_with_the_asking_call_named(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("w", _call("write_file", path="a.txt", content="1"),
                   _call("ask_question", question="which colour?")), _line("done")]
    events = Events()
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                        on_event=events).start(spec_for(ws, "go"))
        expected = Pause("question", step=0, call_index=1, call_id="call_0_1",
                         tool="ask_question", question="which colour?")
        assert (paused.status, paused.pause) == (RunStatus.PAUSED, expected)
        assert store.run(paused.run_id).pause == expected
        (question,) = store.questions(paused.run_id)
        assert (question.step_index, question.call_index, question.question,
                question.answer) == (0, 1, "which colour?", None)
        pending = [e for e in events.seen if e.kind is EventKind.QUESTION]
        assert [(e.run_id, e.data) for e in pending] == [
            (paused.run_id, {"pending": True, **expected.to_json()})]
        answered = Events()
        done = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                      on_event=answered).resume(paused.run_id, spec_for(ws, "go"),
                                                answer="blue")
        assert (done.status, done.steps) == (RunStatus.FINISHED, 2)
        entry = store.ledger(paused.run_id)[1]
        assert (entry.observation, entry.data) == (
            "The operator answered: blue", AnswerData("blue", "person"))
    assert all(e.run_id == paused.run_id for e in answered.seen)


def test_a_plan_event_names_its_step_and_run(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    todo = _call("todo_write", todos=[{"content": "write it", "status": "in_progress"}])
    lines = [_line("read", _call("list_dir", path=".")), _line("plan", todo),
             _line("done")]
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=events).start(spec_for(ws, "go"))
    plans = [e for e in events.seen if e.kind is EventKind.PLAN]
    assert [(e.run_id, e.data["step"], e.data["revision"]) for e in plans] == [
        (outcome.run_id, 1, 1)]
    assert [item["content"] for item in plans[0].data["items"]] == ["write it"]


def _interrupt_at(store: Store, step: int) -> Any:
    def interrupt(event: Event) -> None:
        if event.kind is EventKind.CHECKPOINT and event.data["step"] == step:
            store.post_inbox(event.run_id, "interrupt", {})
    return interrupt


def test_the_token_budget_spans_a_resume(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line(f"s{i}", _call("write_file", path=f"f{i}.txt", content="x"))
             for i in range(8)]
    spec = spec_for(ws, "go", budget=Budget(max_steps=None, max_tokens=30, wall_seconds=None))
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                       on_event=_interrupt_at(store, 0)).start(spec)
        assert (first.status, first.steps) == (RunStatus.INTERRUPTED, 1)
        second = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).resume(
            first.run_id, spec)
        # 12 before the resume and 12 a step: the run's own budget is spent before step 3
        assert (second.status, second.steps, second.reason) == (
            RunStatus.STOPPED, 3, "budget: the token budget of 30 is spent (36 used)")
        assert store.run(first.run_id).tokens_used == 36


def test_a_run_is_owned_by_this_very_process_while_it_runs(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("a", _call("write_file", path="a.txt", content="1")), _line("done")]
    owners: list[tuple[Any, Any]] = []
    with Store(tmp_path / "state.db") as store:

        def look(event: Event) -> None:
            if event.kind is EventKind.STEP_STARTED:
                conn = sqlite3.connect(tmp_path / "state.db")
                owners.extend(conn.execute("SELECT owner_pid, owner_started FROM runs"
                                           " WHERE run_id = ?", (event.run_id,)).fetchall())
                conn.close()

        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                       on_event=_interrupt_at(store, 0)).start(spec_for(ws, "go"))
        Runner(store, _scripted(tmp_path, lines), clock=ManualClock(), on_event=look).resume(
            first.run_id, spec_for(ws, "go"))
        assert store.run(first.run_id).owner_pid is None
    assert owners == [(os.getpid(), pytest.approx(_own_start_time(), abs=0.001))]


def test_a_resume_with_an_answer_or_a_decision_nothing_waits_for_is_refused(
        tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("a", _call("write_file", path="a.txt", content="1")), _line("done")]
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                       on_event=_interrupt_at(store, 0)).start(spec_for(ws, "go"))
        for kwargs, message in (
                ({"approve": True}, "--approve/--deny given, but the run is not waiting for"
                                    " an approval"),
                ({"answer": "x"}, "--answer given, but the run is not waiting for an answer")):
            with pytest.raises(UsageError) as info:
                Runner(store, _scripted(tmp_path, lines)).resume(
                    first.run_id, spec_for(ws, "go"), **kwargs)
            assert str(info.value) == message
        run = store.run(first.run_id)
        assert (run.status, run.owner_pid, len(store.drives(first.run_id))) == (
            RunStatus.INTERRUPTED, None, 1)  # nothing taken up, nothing recorded


def test_handles_an_earlier_process_left_are_marked_orphaned_on_resume(
        tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("a", _call("write_file", path="a.txt", content="1")), _line("done")]
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                       on_event=_interrupt_at(store, 0)).start(spec_for(ws, "go"))
        store.record_handle_start(first.run_id, "h1", "sleep 100", [999999999],
                                  "2026-01-01T00:00:00Z", 999999999)
        Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).resume(
            first.run_id, spec_for(ws, "go"))
        (handle,) = store.handles(first.run_id)
        assert handle.end_reason == "orphaned"


def test_an_empty_answer_is_given_to_the_model_as_it_is(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("asking", _call("ask_question", question="anything to add?")),
             _line("done")]
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go"))
        done = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).resume(
            paused.run_id, spec_for(ws, "go"), answer="")
        assert done.status is RunStatus.FINISHED
        (entry,) = store.ledger(paused.run_id)
        assert entry.observation == "The operator answered: "
        (question,) = store.questions(paused.run_id)
        assert (question.answer, question.answered_by) == ("", "person")


class _Impostor:
    """A caller's tool that returns a plan's and an answer's data, or pauses for a
    question it does not word: none of it is the built-ins' plan or question."""

    def __init__(self, name: str, behaviour: str) -> None:
        self.name, self.behaviour = name, behaviour

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, "a caller's tool")

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        if self.behaviour == "plan":
            return ToolOutcome("planned", data=PlanData((), 1))
        if self.behaviour == "answer":
            return ToolOutcome("answered", data=AnswerData("yes", "person", question="q?"))
        raise PauseRequested("question", {})


def test_only_the_built_ins_plan_and_question_are_reported_as_such(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    tools = [_Impostor("my_plan", "plan"), _Impostor("my_answer", "answer"),
             _Impostor("my_pause", "pause")]
    lines = [_line("look", _call("list_dir", path=".")),
             _line("x", _call("my_plan"), _call("my_answer"), _call("my_pause")),
             _line("done")]
    events = Events()
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                        on_event=events, toolbox=default_toolbox().with_tools(tools)).start(
            spec_for(ws, "go"))
        assert paused.status is RunStatus.PAUSED and paused.pause is not None
        assert (paused.pause.step, paused.pause.call_index, paused.pause.call_id,
                paused.pause.tool) == (1, 2, "call_1_2", "my_pause")
        (question,) = store.questions(paused.run_id)  # only the pause's, unworded
        assert (question.step_index, question.call_index, question.question) == (1, 2, "")
    assert [e.kind for e in events.seen if e.kind is EventKind.PLAN] == []
    assert [e.data.get("pending") for e in events.seen if e.kind is EventKind.QUESTION] == [
        True]


def test_a_responders_answer_is_announced_for_the_run(tmp_path: Path) -> None:
    from harness_core.tools._plan_tools import Answer

    class Oracle:
        def answer(self, question: str) -> Answer | None:
            return Answer("use tabs")

    lines = [_line("ask", _call("ask_question", question="tabs?")), _line("done")]
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=events, responder=Oracle()).start(
            spec_for(_ws(tmp_path), "go"))
    (answered,) = [e for e in events.seen if e.kind is EventKind.QUESTION]
    assert (answered.run_id, answered.data["answer"]) == (outcome.run_id, "use tabs")
