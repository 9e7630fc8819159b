"""todo_write and ask_question through the real loop and a real store: the plan is
replaced whole and read whole from another connection; a responder answers in-process
and the store keeps who answered."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_core import EventKind, Runner, RunStatus, Store, TodoItem
from harness_core.tools._plan_tools import Answer, AnsweredBy
from tests.unit.session.support import Events, RecordingProvider, spec_for


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "state.db")
    yield s
    s.close()


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws


def test_each_todo_write_replaces_the_plan_and_emits_one_plan_event(
        tmp_path: Path, store: Store) -> None:
    events = Events()
    provider = RecordingProvider([
        ("plan", [("todo_write", {"todos": [{"content": "read", "status": "in_progress"},
                                            {"content": "fix", "status": "pending"},
                                            {"content": "test", "status": "pending"}]})]),
        ("replan", [("todo_write", {"todos": [{"content": "read", "status": "done"}]})]),
        ("done", []),
    ])
    outcome = Runner(store, provider, on_event=events).start(spec_for(_ws(tmp_path), "work"))
    assert outcome.status is RunStatus.FINISHED
    assert store.todos(outcome.run_id) == [TodoItem("read", "done", 2)]
    assert store.todos(outcome.run_id)[0].to_json() == {"content": "read", "status": "done",
                                                        "revision": 2}
    plans = [e.data for e in events.seen if e.kind is EventKind.PLAN]
    assert [len(p["items"]) for p in plans] == [3, 1]
    assert [p["revision"] for p in plans] == [1, 2]


@pytest.mark.parametrize("todos,needle", [
    ([{"content": "", "status": "pending"}], "non-empty"),
    ([{"content": "x", "status": "maybe"}], "status 'maybe'"),
    ([{"content": "x", "status": "done", "owner": "me"}], "unknown keys"),
    (["just text"], "must be an object"),
])
def test_a_malformed_plan_is_an_error_observation_and_keeps_the_old_plan(
        tmp_path: Path, store: Store, todos: list[object], needle: str) -> None:
    provider = RecordingProvider([
        ("plan", [("todo_write", {"todos": [{"content": "keep", "status": "pending"}]})]),
        ("bad", [("todo_write", {"todos": todos})]),
        ("done", []),
    ])
    outcome = Runner(store, provider).start(spec_for(_ws(tmp_path), "work"))
    bad = store.ledger(outcome.run_id, 1)[0]
    assert bad.is_error and needle in (bad.observation or "")
    assert [i.content for i in store.todos(outcome.run_id)] == ["keep"]


def test_a_reader_on_another_connection_never_sees_half_a_plan(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    writer, reader = Store(path), Store(path)
    stop = threading.Event()
    mixed: list[list[TodoItem]] = []

    def read() -> None:
        while not stop.is_set():
            items = reader.todos("run")
            if items and len({i.content.split(":")[0] for i in items}) != 1:
                mixed.append(items)
            if items and len(items) != int(items[0].content.split(":")[0]) % 7 + 1:
                mixed.append(items)

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for version in range(300):
            writer.replace_todos("run", [TodoItem(f"{version}:{i}", "pending")
                                         for i in range(version % 7 + 1)])
    finally:
        stop.set()
        thread.join()
        writer.close()
        reader.close()
    assert mixed == []


def test_a_responder_answers_in_process_and_is_recorded_as_a_machine(
        tmp_path: Path, store: Store) -> None:
    asked: list[str] = []

    class Oracle:
        def answer(self, question: str) -> Answer | None:
            asked.append(question)
            return Answer("use tabs")

    events = Events()
    provider = RecordingProvider([("ask", [("ask_question", {"question": "tabs or spaces?"})]),
                                  ("done", [])])
    outcome = Runner(store, provider, responder=Oracle(), on_event=events).start(
        spec_for(_ws(tmp_path), "format"))
    assert outcome.status is RunStatus.FINISHED and asked == ["tabs or spaces?"]
    [question] = store.questions(outcome.run_id)
    assert (question.answer, question.answered_by) == ("use tabs", "machine")
    assert store.answered_question(outcome.run_id, 0, 0) == question
    assert "use tabs" in (store.ledger(outcome.run_id, 0)[0].observation or "")
    answered = [e.data for e in events.seen if e.kind is EventKind.QUESTION]
    assert answered == [{"step": 0, "question": "tabs or spaces?", "answer": "use tabs",
                         "answered_by": "machine"}]


def test_a_responder_that_cannot_answer_pauses_and_resume_records_a_person(
        tmp_path: Path, store: Store) -> None:
    class Silent:
        def answer(self, question: str) -> Answer | None:
            return None

    lines: list[tuple[str, list[tuple[str, dict[str, object]]]]] = [
        ("ask", [("ask_question", {"question": "which file?"})]), ("done", [])]
    ws = _ws(tmp_path)
    paused = Runner(store, RecordingProvider(lines), responder=Silent()).start(
        spec_for(ws, "edit"))
    assert paused.status is RunStatus.PAUSED and paused.pause is not None
    assert paused.pause.kind == "question" and paused.pause.question == "which file?"
    [open_question] = store.questions(paused.run_id)
    assert not open_question.is_answered
    assert store.answered_question(paused.run_id, 0, 0) is None

    provider = RecordingProvider(lines)
    done = Runner(store, provider).resume(paused.run_id, spec_for(ws, "edit"), answer="b.txt")
    assert done.status is RunStatus.FINISHED
    [question] = store.questions(paused.run_id)
    assert (question.answer, question.answered_by) == ("b.txt", "person")
    # the asking call was not replayed: only step 1 asked the provider again
    assert len(provider.requests) == 1
    assert provider.requests[0].messages[-1].content == "The operator answered: b.txt"


def test_a_person_answer_through_a_responder_is_marked_person(tmp_path: Path, store: Store
                                                              ) -> None:
    class Typed:
        def answer(self, question: str) -> Answer | None:
            return Answer("yes", AnsweredBy.PERSON)

    provider = RecordingProvider([("ask", [("ask_question", {"question": "ok?"})]), ("done", [])])
    outcome = Runner(store, provider, responder=Typed()).start(spec_for(_ws(tmp_path), "go"))
    assert store.questions(outcome.run_id)[0].answered_by == "person"
    assert store.ledger(outcome.run_id, 0)[0].observation == "The operator answered: yes"
