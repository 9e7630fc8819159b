"""The store's session and question queries pinned to exact values on a real SQLite file
(mutation testing's survivors in `store/_sessions.py` and `store/_questions.py`): lookups
by prefix, turn numbers and order, a turn's own messages, the one-driver lock, and each
question's answer and who gave it."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    AmbiguousId,
    Message,
    RunStatus,
    SessionInUse,
    StateError,
    Store,
    UsageError,
)
from harness_core.store._questions import QuestionRecord
from harness_core.store._sessions import SessionRecord, TurnRecord


def _turn(store: Store, session_id: str, run_id: str, parent: str | None = None,
          **extra: Any) -> None:
    fields: dict[str, Any] = {
        "goal": f"say {run_id}", "workspace": "/w", "model": "m", "settings": {},
        "policy": {}, "sandbox": None, "session_id": session_id, "parent_run_id": parent,
        "messages": [Message.system("s"), Message.user(f"say {run_id}")]}
    fields.update(extra)
    store.create_run(run_id, **fields)


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_new_session_reads_back_as_created(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        made = store.create_session("sess-1", workspace="/w", title="demo")
        assert made == SessionRecord("sess-1", made.created_at, "demo", "/w", 0, None,
                                     made.created_at)
        assert store.session("sess-1") == made
        assert made.to_json() == {"session_id": "sess-1", "created_at": made.created_at,
                                  "title": "demo", "workspace": "/w", "turns": 0,
                                  "latest_run_id": None, "updated_at": made.created_at,
                                  "status": None}
        assert store.create_session("s2", workspace="/v").title == ""


def test_a_session_counts_its_turns_and_names_the_newest(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create_session("sess", workspace="/w")
        store.create_session("other", workspace="/w")
        _turn(store, "sess", "t1")
        _turn(store, "other", "o1")
        _turn(store, "sess", "t2", parent="t1")
        store.set_status("t1", RunStatus.FINISHED, reason="done")
        record = store.session("sess")
        assert (record.turns, record.latest_run_id) == (2, "t2")
        assert record.updated_at == store.run("t1").updated_at  # the latest touch of any turn
        assert store.session("other").turns == 1


def test_a_session_is_found_by_a_unique_prefix_or_its_exact_id(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        for session_id in ("abc", "abcd", "abx9", "a_c", "a%c", "a\\c"):
            store.create_session(session_id, workspace="/w")
        assert store.session("abx").session_id == "abx9"
        assert store.session("abc").session_id == "abc"
        assert store.session("a_").session_id == "a_c"
        assert store.session("a%").session_id == "a%c"
        assert store.session("a\\").session_id == "a\\c"
        for missing in ("zz", "b"):
            with pytest.raises(UsageError) as info:
                store.session(missing)
            assert str(info.value) == f"no session {missing!r} in the store"
            assert info.value.hint == "`io session list --all` lists recorded sessions"
        with pytest.raises(AmbiguousId) as ambiguous:  # a prefix of three: they are listed
            store.session("ab")
        assert sorted(ambiguous.value.matches) == ["abc", "abcd", "abx9"]
        with pytest.raises(UsageError) as empty:
            store.session("  ")
        assert str(empty.value) == "a session id must not be empty"
        assert empty.value.hint == "`io session list` lists recorded sessions"


def test_sessions_are_listed_newest_first_up_to_the_limit(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        for session_id in ("s1", "s2", "s3"):
            store.create_session(session_id, workspace="/w")
            time.sleep(0.002)
        assert [s.session_id for s in store.list_sessions()] == ["s3", "s2", "s1"]
        assert [s.session_id for s in store.list_sessions(2)] == ["s3", "s2"]


def test_fifty_sessions_are_listed_by_default(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        for index in range(51):
            store.create_session(f"s{index:02d}", workspace="/w")
        assert len(store.list_sessions()) == 50


def test_turns_are_numbered_from_one_in_the_order_taken(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create_session("sess", workspace="/w")
        store.create_session("other", workspace="/w")
        _turn(store, "sess", "zz")
        _turn(store, "other", "o1")
        _turn(store, "sess", "aa", parent="zz")
        store.record_checkpoint("aa", 0, _state(0), tokens=42, wall_seconds=0.5)
        store.set_status("aa", RunStatus.STOPPED, reason="budget")
        turns = store.session_turns("sess")
        assert [(t.number, t.run_id, t.parent_run_id, t.message) for t in turns] == [
            (1, "zz", None, "say zz"), (2, "aa", "zz", "say aa")]
        second = turns[1]
        assert (second.status, second.reason, second.steps, second.tokens) == (
            RunStatus.STOPPED, "budget", 1, 42)
        assert second.created_at == store.run("aa").created_at
        assert second.to_json() == {"number": 2, "run_id": "aa", "parent_run_id": "zz",
                                    "message": "say aa", "status": "stopped",
                                    "reason": "budget", "created_at": second.created_at,
                                    "steps": 1, "tokens": 42}
        assert store.latest_turn("sess") == second
        assert store.latest_turn("other") == TurnRecord(
            1, "o1", None, "say o1", RunStatus.RUNNING, None, store.run("o1").created_at, 0,
            0)
        assert store.latest_turn("none") is None
        assert store.session_turns("none") == []


def _state(step: int) -> Any:
    from harness_core import CheckpointState

    return CheckpointState(step)


def test_a_turn_is_found_by_number_or_run_id_prefix(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create_session("sess", workspace="/w")
        store.create_session("other", workspace="/w")
        _turn(store, "other", "o1")
        for run_id in ("run-a1", "run-a2", "run-b", "x_y", "x%y", "x\\y"):
            _turn(store, "sess", run_id)

        def found(ref: str) -> tuple[int, str] | None:
            turn = store.find_turn("sess", ref)
            return None if turn is None else (turn.number, turn.run_id)

        assert found("1") == (1, "run-a1")
        assert found("#3") == (3, "run-b")
        assert found(" 2 ") == (2, "run-a2")
        assert found("6") == (6, "x\\y")
        assert found("7") is None  # past the last turn, and no run id starts with "7"
        assert found("0") is None
        assert found("run-b") == (3, "run-b")
        assert found("run-a") is None  # two turns start with it
        assert found("run-a2") == (2, "run-a2")
        assert found("x_") == (4, "x_y")
        assert found("x%") == (5, "x%y")
        assert found("x\\") == (6, "x\\y")
        assert found("o1") is None  # another session's turn
        assert found("") is None
        assert found("#") is None


def test_a_turn_whose_run_id_is_a_number_is_found_past_the_last_number(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create_session("sess", workspace="/w")
        _turn(store, "sess", "42")
        assert (store.find_turn("sess", "1") or _none()).run_id == "42"
        turn = store.find_turn("sess", "42")
        assert turn is not None and (turn.number, turn.run_id) == (1, "42")


def _none() -> Any:
    raise AssertionError("expected a turn")


def test_the_ancestry_of_a_turn_walks_parents_to_the_first(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create_session("sess", workspace="/w")
        _turn(store, "sess", "t1")
        _turn(store, "sess", "t2", parent="t1")
        _turn(store, "sess", "t3", parent="t2")
        _turn(store, "sess", "side", parent="t1")
        assert list(store.turn_ancestry("t3")) == ["t3", "t2", "t1"]
        assert list(store.turn_ancestry("side")) == ["side", "t1"]
        assert list(store.turn_ancestry("t1")) == ["t1"]
        assert list(store.turn_ancestry("none")) == []
        walk = store.turn_ancestry("t3")
        assert next(walk) == "t3"
        del walk  # stopping early is fine
        assert store.run("t3").goal == "say t3"


def test_a_turn_gives_its_own_messages_from_its_goal_on(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create_session("sess", workspace="/w")
        history = [Message.system("s"), Message.user("earlier"), Message.assistant("reply"),
                   Message.user("now")]
        _turn(store, "sess", "t2", messages=history)
        store.append_messages("t2", 0, [Message.assistant("answer")])
        assert [m.content for m in store.turn_messages("t2")] == ["now", "answer"]
        assert store.turn_messages("none") == []


def test_one_process_drives_a_session_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        store.create_session("sess", workspace="/w")
        store.acquire_session("sess", 100, 1.5, alive=lambda pid, started: False)
        assert _rows(path, "SELECT driver_pid, driver_started FROM sessions") == [(100, 1.5)]
        asked: list[tuple[int, float | None]] = []

        def alive(pid: int, started: float | None) -> bool:
            asked.append((pid, started))
            return True

        with pytest.raises(SessionInUse) as info:
            store.acquire_session("sess", 200, 2.0, alive=alive)
        assert asked == [(100, 1.5)]
        assert str(info.value) == "session sess has a turn in flight (run not yet started)"
        assert (info.value.session_id, info.value.run_id) == ("sess", "not yet started")
        _turn(store, "sess", "t1", owner_pid=100, owner_started=1.5)
        with pytest.raises(SessionInUse) as named:
            store.acquire_session("sess", 200, 2.0, alive=alive)
        assert named.value.run_id == "t1"
        store.acquire_session("sess", 100, 1.5, alive=alive)  # the holder again: fine
        store.release_session("sess", 999)
        assert _rows(path, "SELECT driver_pid FROM sessions") == [(100,)]
        store.release_session("sess", 100)
        assert _rows(path, "SELECT driver_pid, driver_started FROM sessions") == [
            (None, None)]
        with pytest.raises(UsageError) as missing:
            store.acquire_session("none", 1, 0.0, alive=alive)
        assert str(missing.value) == "no session 'none' in the store"


def test_a_turn_driven_elsewhere_holds_the_session(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create_session("sess", workspace="/w")
        _turn(store, "sess", "done", owner_pid=300, owner_started=3.0)
        store.set_status("done", RunStatus.FINISHED)
        _turn(store, "sess", "live", owner_pid=300, owner_started=3.0)
        asked: list[tuple[int, float | None]] = []

        def alive(pid: int, started: float | None) -> bool:
            asked.append((pid, started))
            return True

        with pytest.raises(SessionInUse) as info:
            store.acquire_session("sess", 200, 2.0, alive=alive)
        assert info.value.run_id == "live"
        assert asked == [(300, 3.0)]  # the finished turn's owner is never asked about
        store.acquire_session("sess", 300, 3.0, alive=alive)  # its own turn: fine
        store.release_session("sess", 300)
        store.acquire_session("sess", 200, 2.0, alive=lambda pid, started: False)


def test_a_question_and_its_answer_with_who_gave_it(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.record_question("r1", 2, 1, "c1", "which file?")
        store.record_question("r1", 0, 3, "c0", "first?", answer="yes", answered_by="machine")
        store.record_question("r1", 2, 0, "c2", "no answer given", answered_by="person")
        store.record_question("r2", 0, 0, "c9", "elsewhere")
        (first, second, third) = store.questions("r1")
        assert (first.step_index, first.call_index, first.call_id, first.question,
                first.answer, first.answered_by, first.is_answered) == (
            0, 3, "c0", "first?", "yes", "machine", True)
        assert first.answered_at == first.asked_at
        assert (second.call_id, second.answer, second.answered_by) == ("c2", "", "person")
        assert (third.call_id, third.answer, third.answered_by, third.answered_at,
                third.is_answered) == ("c1", None, None, None, False)
        assert store.answered_question("r1", 2, 1) is None
        store.answer_question("r1", 2, 1, "a.txt", "person")
        answered = store.answered_question("r1", 2, 1)
        assert answered is not None
        assert (answered.run_id, answered.question, answered.answer, answered.answered_by) == (
            "r1", "which file?", "a.txt", "person")
        assert answered.answered_at is not None and answered.answered_at > answered.asked_at
        assert store.answered_question("r1", 0, 3) == first
        assert store.answered_question("r1", 9, 9) is None
        assert [q.call_id for q in store.questions("r2")] == ["c9"]


def test_asking_again_at_the_same_call_keeps_the_first_record(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.record_question("r1", 0, 0, "c1", "first wording")
        (before,) = store.questions("r1")
        store.record_question("r1", 0, 0, "c1-again", "second wording")
        assert store.questions("r1") == [before]
        assert isinstance(before, QuestionRecord)


def test_reads_on_a_closed_store_name_what_was_read(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.close()
    with pytest.raises(StateError) as sessions:
        store.list_sessions()
    assert str(sessions.value) == ("store failed while reading sessions: Cannot operate on a"
                                   " closed database.")
    with pytest.raises(StateError) as questions:
        store.questions("r1")
    assert str(questions.value) == ("store failed while reading questions: Cannot operate on"
                                    " a closed database.")
    with pytest.raises(StateError) as branch:
        list(store.turn_ancestry("r1"))
    assert str(branch.value) == ("store failed while reading a session branch: Cannot operate"
                                 " on a closed database.")
