"""The Session API over a real store: turns are runs, the tree is append-only, a turn sees
its own branch, and one process drives a session at a time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    CompletionRequest,
    CompletionResponse,
    Message,
    Role,
    Runner,
    RunStatus,
    SessionInUse,
    Store,
    UsageError,
)
from harness_core.session import Session
from tests.unit.session.support import RecordingProvider, spec_for


def _turn(session: Session, store: Store, ws: Path, text: str, reply: str,
          from_turn: int | str | None = None, **spec: object) -> tuple[str, RecordingProvider]:
    provider = RecordingProvider([(reply, [])])
    outcome = session.turn(Runner(store, provider), spec_for(ws, text, **spec),
                           from_turn=from_turn)
    assert outcome.status is RunStatus.FINISHED, outcome.reason
    return outcome.run_id, provider


def _seen(provider: RecordingProvider) -> list[str]:
    return [m.content for m in provider.requests[0].messages if m.role is not Role.SYSTEM]


@pytest.fixture()
def setup(tmp_path: Path) -> Iterator[tuple[Store, Path]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    store = Store(tmp_path / "state.db")
    yield store, ws
    store.close()


def test_each_turn_is_a_run_with_the_session_and_its_parent_recorded(setup: tuple[Store, Path]
                                                                     ) -> None:
    store, ws = setup
    session = Session.new(store, workspace=ws, title="demo")
    first, _ = _turn(session, store, ws, "hello", "hi")
    second, _ = _turn(session, store, ws, "again", "hi again")
    assert store.run(first).session_id == session.id and store.run(first).parent_run_id is None
    assert store.run(second).parent_run_id == first
    tree = session.tree()
    assert [t.number for t in tree.turns] == [1, 2]
    assert [t.message for t in tree.turns] == ["hello", "again"]
    assert tree.latest is not None and tree.latest.run_id == second
    assert Session.list(store)[0].turns == 2


def test_a_turn_sees_the_conversation_before_it(setup: tuple[Store, Path]) -> None:
    store, ws = setup
    session = Session.new(store, workspace=ws)
    _turn(session, store, ws, "my name is Ada", "noted")
    _, provider = _turn(session, store, ws, "what is my name?", "Ada")
    assert _seen(provider) == ["my name is Ada", "noted", "what is my name?"]


def test_branching_keeps_the_old_branch_intact_and_readable(setup: tuple[Store, Path]) -> None:
    store, ws = setup
    session = Session.new(store, workspace=ws)
    one, _ = _turn(session, store, ws, "one", "r1")
    two, _ = _turn(session, store, ws, "two", "r2")
    three, _ = _turn(session, store, ws, "three", "r3")
    before = {run: store.messages(run) for run in (one, two, three)}

    four, provider = _turn(session, store, ws, "four", "r4", from_turn=1)
    assert _seen(provider) == ["one", "r1", "four"]  # the sibling branch is not shown
    assert store.run(four).parent_run_id == one
    assert {run: store.messages(run) for run in (one, two, three)} == before

    tree = session.tree()
    assert [t.number for t in tree.path(tree.turns[2])] == [1, 2, 3]
    assert [t.number for t in tree.children(tree.turns[0])] == [2, 4]
    # a plain turn continues the newest turn, which is now the branch
    _, provider = _turn(session, store, ws, "five", "r5")
    assert _seen(provider) == ["one", "r1", "four", "r4", "five"]


def test_a_turn_can_be_named_by_run_id_and_a_bad_name_is_a_usage_error(
        setup: tuple[Store, Path]) -> None:
    store, ws = setup
    session = Session.new(store, workspace=ws)
    one, _ = _turn(session, store, ws, "one", "r1")
    _turn(session, store, ws, "two", "r2")
    _, provider = _turn(session, store, ws, "again", "ok", from_turn=one)
    assert _seen(provider) == ["one", "r1", "again"]
    with pytest.raises(UsageError, match="no turn"):
        _turn(session, store, ws, "x", "y", from_turn=10**15)
    with pytest.raises(UsageError, match="no session"):
        Session.open(store, "nope")


def test_history_is_bounded_by_the_context_budget_with_a_marker(setup: tuple[Store, Path]
                                                                ) -> None:
    store, ws = setup
    session = Session.new(store, workspace=ws)
    for i in range(12):
        _turn(session, store, ws, f"message {i} " + "x" * 400, f"reply {i}")
    _, provider = _turn(session, store, ws, "last", "ok", context_max_tokens=1000)
    seen = _seen(provider)
    assert "earlier turns of this conversation were left out" in seen[0]
    assert seen[-3].startswith("message 11") and seen[-2] == "reply 11" and seen[-1] == "last"
    assert not any(s.startswith("message 0 ") for s in seen)
    # the store still holds every earlier turn whole
    assert len(session.tree().turns) == 13
    assert store.messages(session.tree().turns[0].run_id)[-2].content.startswith("message 0")


def test_a_second_driver_gets_session_in_use_and_a_dead_ones_lock_is_reclaimed(
        setup: tuple[Store, Path]) -> None:
    store, ws = setup
    session = Session.new(store, workspace=ws)
    other_pid = 999_999
    store.acquire_session(session.id, other_pid, 1.0, alive=lambda pid, started: True)

    alive = Session.open(store, session.id, alive=lambda pid, started: pid == other_pid)
    with pytest.raises(SessionInUse):
        _turn(alive, store, ws, "hello", "hi")
    assert session.tree().turns == ()  # nothing was started

    dead = Session.open(store, session.id, alive=lambda pid, started: False)
    _turn(dead, store, ws, "hello", "hi")
    assert len(session.tree().turns) == 1


def test_a_turn_driven_elsewhere_by_run_id_also_blocks_a_new_turn(setup: tuple[Store, Path]
                                                                  ) -> None:
    store, ws = setup
    session = Session.new(store, workspace=ws)
    run_id, _ = _turn(session, store, ws, "hello", "hi")
    store.set_status(run_id, RunStatus.RUNNING)
    store.acquire_run(run_id, 999_999, 1.0, alive=lambda pid, started: True)
    blocked = Session.open(store, session.id, alive=lambda pid, started: pid == 999_999)
    with pytest.raises(SessionInUse) as info:
        _turn(blocked, store, ws, "more", "x")
    assert info.value.run_id == run_id


def test_the_lock_is_released_when_a_turn_ends_even_by_error(setup: tuple[Store, Path]) -> None:
    store, ws = setup
    session = Session.new(store, workspace=ws)

    class Broken(RecordingProvider):
        def complete(self, request: CompletionRequest, *, step: int,
                     on_token: Any = None) -> CompletionResponse:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        session.turn(Runner(store, Broken([])), spec_for(ws, "x"))
    strict = Session.open(store, session.id, alive=lambda pid, started: True)
    _turn(strict, store, ws, "again", "fine")


def test_tool_calls_in_history_always_have_results_and_unique_ids(setup: tuple[Store, Path]
                                                                  ) -> None:
    store, ws = setup
    (ws / "a.txt").write_text("A")
    session = Session.new(store, workspace=ws)
    provider = RecordingProvider([("look", [("read_file", {"path": "a.txt"})]), ("seen", [])])
    session.turn(Runner(store, provider), spec_for(ws, "read it"))
    paused = RecordingProvider([("ask", [("ask_question", {"question": "which?"})])])
    outcome = session.turn(Runner(store, paused), spec_for(ws, "ask me"))
    assert outcome.status is RunStatus.PAUSED
    with pytest.raises(UsageError, match="is paused"):  # not built on unless asked to
        session.turn(Runner(store, RecordingProvider([("ok", [])])), spec_for(ws, "go on"))

    _, last = _turn(session, store, ws, "go on", "ok", from_turn=2)
    messages: tuple[Message, ...] = last.requests[0].messages
    calls = [c.id for m in messages if m.role is Role.ASSISTANT for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if m.role is Role.TOOL]
    assert len(calls) == len(set(calls)) == 2
    assert sorted(calls) == sorted(r for r in results if r is not None)
    unanswered = [m for m in messages if m.role is Role.TOOL and m.is_error]
    assert len(unanswered) == 1 and "no observation was recorded" in unanswered[0].content


def test_walk_lists_branches_under_their_turn_without_deepening_lines(
        setup: tuple[Store, Path]) -> None:
    store, ws = setup
    session = Session.new(store, workspace=ws)
    for text in ("a", "b", "c"):
        _turn(session, store, ws, text, "ok")
    _turn(session, store, ws, "d", "ok", from_turn=1)
    _turn(session, store, ws, "e", "ok", from_turn=2)
    walked = [(depth, t.number, opens) for depth, t, opens in session.tree().walk()]
    assert walked == [(0, 1, False), (1, 4, True), (0, 2, False), (1, 5, True), (0, 3, False)]
    as_json = session.tree().to_json()
    assert [t["parent"] for t in as_json["turns"]] == [None, 1, 2, 1, 2]
    assert as_json["latest"] == 5


def test_find_reads_a_number_in_range_as_a_turn_and_anything_else_as_a_run_id() -> None:
    from harness_core.session import SessionRecord, SessionTree, TurnRecord

    def turn(number: int, run_id: str) -> TurnRecord:
        return TurnRecord(number, run_id, None, "m", RunStatus.FINISHED, None, "t", 1, 1)

    tree = SessionTree(SessionRecord("s1", "t", "", "/w", 3, "9zz", "t"),
                       (turn(1, "111aaa"), turn(2, "222bbb"), turn(3, "9zz")))
    assert tree.find(1).run_id == "111aaa" and tree.find("#3").run_id == "9zz"
    assert tree.find("222").run_id == "222bbb" and tree.find("9").run_id == "9zz"
    with pytest.raises(UsageError, match="turns 1-3"):
        tree.find("4")
