"""The store's step, ledger and checkpoint queries pinned to exact values on a real SQLite
file (mutation testing's survivors in `store/_steps.py`, `_checkpoints.py` and
`_records.py`): which row each write lands in, the order reads come back in, the sums a
checkpoint draws, and every field of the typed records."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    AttemptRecord,
    CheckpointFormatError,
    CheckpointState,
    Citation,
    Edit,
    EditRecord,
    InputsFate,
    LedgerEntry,
    Message,
    OpenData,
    Pause,
    ProviderAttempt,
    RunStatus,
    ServerToolCall,
    Store,
    ToolCall,
    ToolResult,
    Usage,
    VerificationRecord,
)

_USAGE = Usage(prompt_tokens=11, completion_tokens=7, total_tokens=18, cache_read_tokens=5,
               cache_write_tokens=3, reasoning_tokens=2, server_tool_requests=1)


def _store(path: Path) -> Store:
    store = Store(path)
    store.create_run("r1", goal="g", workspace="/w", model="m", settings={}, policy={},
                     sandbox=None, messages=[Message.system("s"), Message.user("g")],
                     owner_pid=1, owner_started=None)
    return store


def _complete(store: Store, step: int, calls: tuple[ToolCall, ...] = (), **extra: Any) -> None:
    fields: dict[str, Any] = {
        "text": f"text {step}", "tool_calls": calls, "provider": "prov",
        "model_requested": "asked", "model_served": "served", "usage": _USAGE,
        "latency_ms": 12.5, "ttft_ms": 3.25, "stop_reason": "end_turn"}
    fields.update(extra)
    store.record_completion("r1", step, **fields)


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_completion_reads_back_every_field_it_was_given(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    calls = (ToolCall("c1", "read_file", {"path": "a"}), ToolCall("c2", "list_dir", {}))
    _complete(store, 0, calls)
    step = store.step("r1", 0)
    assert step is not None
    assert (step.step_index, step.text, step.tool_calls, step.provider, step.model_served,
            step.latency_ms, step.ttft_ms) == (0, "text 0", calls, "prov", "served", 12.5, 3.25)
    assert step.usage == _USAGE
    assert step.created_at.endswith("+00:00") and "T" in step.created_at
    assert store.step("r1", 1) is None
    assert store.step("nope", 0) is None
    assert _rows(tmp_path / "s.db", "SELECT model_requested, stop_reason, host IS NOT NULL"
                                    " FROM completions") == [("asked", "end_turn", 1)]
    store.close()


def test_steps_come_back_in_step_order_whatever_the_write_order(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    for step in (2, 0, 1):
        _complete(store, step)
    assert [s.step_index for s in store.steps("r1")] == [0, 1, 2]
    assert [s.text for s in store.steps("r1")] == ["text 0", "text 1", "text 2"]
    assert store.steps("other") == []
    store.close()


def test_a_completion_appends_exactly_one_assistant_message_after_the_opening(
        tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    call = ToolCall("c1", "read_file", {"path": "a"})
    _complete(store, 0, (call,))
    assert store.messages("r1") == [Message.system("s"), Message.user("g"),
                                    Message.assistant("text 0", (call,))]
    assert _rows(tmp_path / "s.db", "SELECT seq, step_index, role FROM messages ORDER BY seq") \
        == [(0, -1, "system"), (1, -1, "user"), (2, 0, "assistant")]
    store.close()


def test_append_messages_numbers_them_after_the_last_and_ignores_an_empty_list(
        tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    store.append_messages("r1", 4, [])
    store.append_messages("r1", 4, [Message.user("a"), Message.user("b")])
    assert _rows(tmp_path / "s.db", "SELECT seq, step_index, role FROM messages ORDER BY seq") \
        == [(0, -1, "system"), (1, -1, "user"), (2, 4, "user"), (3, 4, "user")]
    assert [m.content for m in store.messages("r1")] == ["s", "g", "a", "b"]
    store.close()


def test_provider_attempts_are_numbered_per_step_failed_ones_first(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    store.record_failed_attempts("r1", 0, [])
    store.record_failed_attempts("r1", 0, [
        ProviderAttempt("a", "ma", True, "503", 503),  # a failed completion: never ok
        ProviderAttempt("", "", False, "timeout")])
    _complete(store, 0, attempts=[ProviderAttempt("b", "mb", True, None, 200),
                                  ProviderAttempt("c", "mc", False, "x", 500)])
    _complete(store, 1, attempts=[ProviderAttempt("d", "md", True)])
    assert store.provider_attempts("r1") == [
        AttemptRecord(0, 0, ProviderAttempt("a", "ma", False, "503", 503)),
        AttemptRecord(0, 1, ProviderAttempt("", "", False, "timeout", None)),
        AttemptRecord(0, 2, ProviderAttempt("b", "mb", True, None, 200)),
        AttemptRecord(0, 3, ProviderAttempt("c", "mc", False, "x", 500)),
        AttemptRecord(1, 0, ProviderAttempt("d", "md", True, None, None)),
    ]
    assert _rows(tmp_path / "s.db", "SELECT ok FROM provider_attempts"
                                    " ORDER BY step_index, seq") == [(0,), (0,), (1,), (0,), (1,)]
    assert store.provider_attempts("other") == []
    store.close()


def test_citations_and_server_tool_calls_are_kept_per_step(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    _complete(store, 3, citations=[Citation("https://a", "A", "q"), Citation("")],
              server_tool_calls=[ServerToolCall("web_search", {"q": "x"}),
                                 ServerToolCall("")])
    store.close()
    assert _rows(tmp_path / "s.db", "SELECT run_id, step_index, url, title, cited_text"
                                    " FROM citations ORDER BY rowid") == [
        ("r1", 3, "https://a", "A", "q"), ("r1", 3, "", None, None)]
    assert _rows(tmp_path / "s.db", "SELECT run_id, step_index, name, input"
                                    " FROM server_tool_calls ORDER BY rowid") == [
        ("r1", 3, "web_search", '{"q":"x"}'), ("r1", 3, "", "{}")]


def test_an_intent_without_an_observation_then_its_observation(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    call = ToolCall("c1", "write_file", {"path": "a.txt", "content": "x"})
    _complete(store, 0, (call,))
    store.record_intent("r1", 0, 0, call)
    (entry,) = store.ledger("r1")
    assert entry == LedgerEntry(0, 0, "c1", "write_file",
                                    {"path": "a.txt", "content": "x"}, None, False, None)
    assert entry.has_observation is False
    store.record_observation("r1", 0, 0, ToolResult("c1", "write_file", "", is_error=True),
                             data=OpenData({"k": [1, 2]}))
    (entry,) = store.ledger("r1")
    assert entry == LedgerEntry(0, 0, "c1", "write_file", {"path": "a.txt", "content": "x"},
                                "", True, OpenData({"k": [1, 2]}))
    assert entry.has_observation is True  # an empty observation is still one
    assert store.messages("r1")[-1] == Message.tool(
        ToolResult("c1", "write_file", "", is_error=True))
    store.close()


def test_an_observation_that_succeeded_without_data_stores_no_data(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    call = ToolCall("c1", "read_file", {"path": "a"})
    store.record_intent("r1", 0, 0, call)
    store.record_observation("r1", 0, 0, ToolResult("c1", "read_file", "body"))
    (entry,) = store.ledger("r1")
    assert (entry.observation, entry.is_error, entry.data) == ("body", False, None)
    assert _rows(tmp_path / "s.db", "SELECT is_error, data, observed_at IS NOT NULL,"
                                    " intent_at IS NOT NULL FROM ledger") == [(0, None, 1, 1)]
    store.close()


def test_arguments_that_were_not_json_are_kept_raw(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    call = ToolCall("c1", "read_file", {}, raw_arguments="{not json")
    store.record_intent("r1", 0, 0, call)
    (entry,) = store.ledger("r1")
    assert entry.arguments == {} and entry.raw_arguments == "{not json"
    assert entry.arguments_json() == {"__raw__": "{not json"} and entry.call == call
    store.close()


def test_the_ledger_is_ordered_by_step_then_call_and_filters_by_step(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    order = [(1, 1), (0, 1), (1, 0), (0, 0), (2, 0)]
    for step, index in order:
        store.record_intent("r1", step, index, ToolCall(f"c{step}{index}", "list_dir", {}))
    assert [(e.step_index, e.call_index) for e in store.ledger("r1")] == [
        (0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]
    assert [e.call_id for e in store.ledger("r1", 1)] == ["c10", "c11"]
    assert [e.call_id for e in store.ledger("r1", 0)] == ["c00", "c01"]
    assert store.ledger("r1", 3) == []
    assert store.ledger("other") == []
    store.close()


def test_an_observation_writes_only_its_own_call(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    for step, index in ((0, 0), (0, 1), (1, 0)):
        store.record_intent("r1", step, index, ToolCall(f"c{step}{index}", "list_dir", {}))
    store.record_observation("r1", 0, 1, ToolResult("c01", "list_dir", "seen"))
    assert [(e.step_index, e.call_index, e.observation) for e in store.ledger("r1")] == [
        (0, 0, None), (0, 1, "seen"), (1, 0, None)]
    store.close()


def test_edits_are_recorded_with_their_sizes_in_order(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    store.record_intent("r1", 2, 0, ToolCall("c1", "write_file", {}))
    edits = [Edit("b.txt", 3, 1, 10, 25), Edit("a.txt", 0, 4, 40, 0)]
    store.record_observation("r1", 2, 0, ToolResult("c1", "write_file", "ok"), edits=edits)
    assert store.edits("r1") == [EditRecord(2, "c1", Edit("b.txt", 3, 1, 10, 25)),
                                 EditRecord(2, "c1", Edit("a.txt", 0, 4, 40, 0))]
    assert store.edits("other") == []
    store.close()


def test_a_last_observation_commits_the_step_checkpoint_with_it(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    store.record_intent("r1", 0, 0, ToolCall("c1", "list_dir", {}))
    store.record_observation("r1", 0, 0, ToolResult("c1", "list_dir", "seen"),
                             checkpoint=CheckpointState(0), tokens=25, wall_seconds=0.75)
    last = store.last_checkpoint("r1")
    assert last is not None and last.state == CheckpointState(0)
    run = store.run("r1")
    assert (run.steps_used, run.tokens_used, run.wall_used) == (1, 25, 0.75)
    store.record_intent("r1", 1, 0, ToolCall("c2", "list_dir", {}))
    store.record_observation("r1", 1, 0, ToolResult("c2", "list_dir", "again"))
    assert store.last_checkpoint("r1") == last  # no checkpoint asked: none written
    assert store.run("r1").steps_used == 1
    store.close()


def test_a_checkpoint_draws_its_step_tokens_and_wall_time_onto_the_run(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    store.record_checkpoint("r1", 0, CheckpointState(0), tokens=100, wall_seconds=1.5)
    store.record_checkpoint("r1", 1, CheckpointState(1, done=True), tokens=30, wall_seconds=0.25)
    run = store.run("r1")
    assert (run.steps_used, run.tokens_used, run.wall_used) == (2, 130, 1.75)
    last = store.last_checkpoint("r1")
    assert last is not None
    assert (last.step_index, last.format, last.state) == (1, 7, CheckpointState(1, done=True))
    assert _rows(tmp_path / "s.db", "SELECT step_index, steps, tokens, wall_seconds"
                                    " FROM budget_draws ORDER BY step_index") == [
        (0, 1, 100, 1.5), (1, 1, 30, 0.25)]
    store.add_wall("r1", 0.5)
    assert store.run("r1").wall_used == 2.25
    assert store.run("r1").tokens_used == 130
    store.close()


def test_the_newest_checkpoint_is_the_highest_step_not_the_last_written(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    assert store.last_checkpoint("r1") is None
    store.record_checkpoint("r1", 3, CheckpointState(3), tokens=0, wall_seconds=0.0)
    store.record_checkpoint("r1", 1, CheckpointState(1), tokens=0, wall_seconds=0.0)
    last = store.last_checkpoint("r1")
    assert last is not None and last.step_index == 3 and last.state.step == 3
    store.close()


def test_a_checkpoint_state_is_replaced_for_its_step_only(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    store.record_checkpoint("r1", 0, CheckpointState(0, done=True), tokens=1, wall_seconds=0.0)
    store.record_checkpoint("r1", 1, CheckpointState(1, done=True), tokens=1, wall_seconds=0.0)
    store.update_checkpoint_state("r1", 1, CheckpointState(1, done=True, verified=False))
    last = store.last_checkpoint("r1")
    assert last is not None and last.state == CheckpointState(1, done=True, verified=False)
    assert _rows(tmp_path / "s.db", "SELECT step_index, state FROM checkpoints"
                                    " ORDER BY step_index") == [
        (0, '{"step":0,"done":true,"verified":null}'),
        (1, '{"step":1,"done":true,"verified":false}')]
    store.close()


def test_a_checkpoint_of_another_format_names_both_formats(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    store.record_checkpoint("r1", 0, CheckpointState(0), tokens=1, wall_seconds=0.0)
    store._conn.execute("UPDATE checkpoints SET format = 8")
    with pytest.raises(CheckpointFormatError) as info:
        store.last_checkpoint("r1")
    assert (info.value.found, info.value.expected) == (8, 7)
    store.close()


@pytest.mark.parametrize(("status", "terminal"), [
    (RunStatus.RUNNING, False), (RunStatus.PAUSED, False), (RunStatus.FINISHED, True),
    (RunStatus.FAILED, True), (RunStatus.STOPPED, True), (RunStatus.INTERRUPTED, False),
    (RunStatus.ERRORED, False)])
def test_which_statuses_are_terminal(status: RunStatus, terminal: bool) -> None:
    assert status.is_terminal is terminal


def test_checkpoint_state_json_both_ways() -> None:
    assert CheckpointState(4, done=True, verified=True).to_json() == {
        "step": 4, "done": True, "verified": True}
    assert CheckpointState.from_json({}) == CheckpointState(0, done=False, verified=None)
    assert CheckpointState.from_json({"step": "3", "done": 1, "verified": 0}) == \
        CheckpointState(3, done=True, verified=False)
    assert CheckpointState.from_json({"step": 2, "verified": None}).verified is None
    assert CheckpointState.from_json({"step": 2, "verified": True}).verified is True


def test_a_pause_writes_the_keys_that_apply_and_reads_back_ignoring_unknown_ones() -> None:
    question = Pause("question", step=2, call_index=1, call_id="c", tool="ask_question",
                     question="why?")
    assert question.to_json() == {"kind": "question", "step": 2, "call_index": 1,
                                  "call_id": "c", "tool": "ask_question", "question": "why?"}
    approval = Pause("approval", step=1, act="exec", target="rm -rf x", reason="asks")
    assert approval.to_json() == {"kind": "approval", "step": 1, "call_index": 0,
                                  "call_id": "", "tool": "", "act": "exec",
                                  "target": "rm -rf x", "reason": "asks", "rule": None,
                                  "layer": None}
    assert Pause("question").to_json() == {"kind": "question", "step": 0, "call_index": 0,
                                           "call_id": "", "tool": ""}
    assert Pause.from_json({**approval.to_json(), "future": 1}) == approval
    tree = Pause("question", child_run_id="k", waiting_run_id="w")
    assert Pause.from_json(tree.to_json()) == tree


def test_a_gate_report_entry_rounds_its_duration_and_reads_its_inputs() -> None:
    bare = VerificationRecord(3, "pytest", False, 1, "out")
    assert bare.to_json() == {
        "step": 3, "command": "pytest", "passed": False, "exit_status": 1,
        "duration_seconds": None, "sandbox": None, "inputs": None, "editable": None,
        "inputs_untouched": None, "modified_inputs": []}
    full = VerificationRecord(0, "make", True, 0, "", duration_seconds=1.23456, sandbox="floor",
                              inputs=InputsFate(("*.py",), False, True, ("a.py",)))
    assert full.to_json() == {
        "step": 0, "command": "make", "passed": True, "exit_status": 0,
        "duration_seconds": 1.235, "sandbox": "floor", "inputs": ["*.py"], "editable": False,
        "inputs_untouched": True, "modified_inputs": ["a.py"]}


def test_an_error_flag_and_data_are_read_from_their_own_columns(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    store.record_intent("r1", 0, 0, ToolCall("c1", "exec", {}))
    store.record_intent("r1", 0, 1, ToolCall("c2", "exec", {}))
    store.record_observation("r1", 0, 0, ToolResult("c1", "exec", "failed", is_error=True))
    store.record_observation("r1", 0, 1, ToolResult("c2", "exec", "fine"),
                             data=OpenData({"x": 1}))
    assert [(e.is_error, e.data) for e in store.ledger("r1")] == [(True, None),
                                                                  (False, OpenData({"x": 1}))]
    assert _rows(tmp_path / "s.db", "SELECT is_error FROM ledger ORDER BY call_index") == [
        (1,), (0,)]
    store.close()
