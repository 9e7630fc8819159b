"""The store's completion and edit records are typed both ways: `record_completion` and
`record_observation` take `ProviderAttempt`, `Citation`, `ServerToolCall`, `Edit` and
`Usage`, and `edits()` / `provider_attempts()` hand back `EditRecord` / `AttemptRecord`.
The columns written are the ones the dict-taking code wrote, and rows written in that
shape (an older store) read back."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harness_core import (
    AttemptRecord,
    Citation,
    DriveRecord,
    Edit,
    EditRecord,
    InputsFate,
    Message,
    ProviderAttempt,
    ServerToolCall,
    Store,
    TodoItem,
    ToolCall,
    ToolResult,
    Usage,
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    opened = Store(tmp_path / "s.db")
    opened.create_run("r1", goal="g", workspace="/w", model="m", settings={}, policy={},
                      sandbox=None, messages=[Message.system("s"), Message.user("g")])
    return opened


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


def test_typed_completion_records_land_in_their_columns(store: Store, tmp_path: Path) -> None:
    call = ToolCall("c1", "write_file", {"path": "a.txt", "content": "x"})
    store.record_failed_attempts("r1", 0, [ProviderAttempt("openai", "gpt", False, "HTTP 503", 503)])
    store.record_completion(
        "r1", 0, text="t", tool_calls=[call], provider="anthropic", model_requested="m",
        model_served="m-1", usage=Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12,
                                        cache_read_tokens=4, server_tool_requests=1),
        latency_ms=3.0, ttft_ms=None, stop_reason="tool_use",
        attempts=[ProviderAttempt("anthropic", "m", True)],
        citations=[Citation("https://example.test/a", "A", "quoted")],
        server_tool_calls=[ServerToolCall("web_search", {"query": "q"})],
    )
    db = tmp_path / "s.db"
    assert _rows(db, "SELECT provider, model, ok, error, status FROM provider_attempts"
                     " ORDER BY seq") == [("openai", "gpt", 0, "HTTP 503", 503),
                                          ("anthropic", "m", 1, None, None)]
    assert _rows(db, "SELECT url, title, cited_text FROM citations") == [
        ("https://example.test/a", "A", "quoted")]
    assert _rows(db, "SELECT name, input FROM server_tool_calls") == [
        ("web_search", '{"query":"q"}')]
    assert _rows(db, "SELECT prompt_tokens, completion_tokens, total_tokens, cache_read_tokens,"
                     " cache_write_tokens, server_tool_requests FROM completions") == [
        (10, 2, 12, 4, None, 1)]
    assert store.provider_attempts("r1") == [
        AttemptRecord(0, 0, ProviderAttempt("openai", "gpt", False, "HTTP 503", 503)),
        AttemptRecord(0, 1, ProviderAttempt("anthropic", "m", True)),
    ]


def test_typed_edits_round_trip_through_the_store(store: Store) -> None:
    call = ToolCall("c1", "write_file", {"path": "a.txt", "content": "x"})
    store.record_intent("r1", 0, 0, call)
    edit = Edit("a.txt", lines_added=1, lines_removed=0, bytes_before=0, bytes_after=1)
    store.record_observation("r1", 0, 0, ToolResult("c1", "write_file", "ok"), edits=[edit])
    assert store.edits("r1") == [EditRecord(0, "c1", edit)]


def test_rows_in_the_old_shape_read_back_typed_with_the_old_json(store: Store,
                                                                 tmp_path: Path) -> None:
    # Rows as the dict-taking code inserted them, written straight into the tables.
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute("INSERT INTO provider_attempts(run_id, step_index, seq, provider, model, ok,"
                     " error, status) VALUES ('r1', 2, 0, 'openai', 'gpt', 0, 'boom', 429)")
        conn.execute("INSERT INTO edits(run_id, step_index, call_id, path, lines_added,"
                     " lines_removed, bytes_before, bytes_after) VALUES"
                     " ('r1', 2, 'c9', 'src/x.py', 3, 1, 40, 52)")
    (attempt,) = store.provider_attempts("r1")
    (edit,) = store.edits("r1")
    assert attempt.attempt.status == 429 and attempt.attempt.ok is False
    assert edit.edit.path == "src/x.py" and edit.edit.lines_added == 3
    # `io trace --json` writes these objects: the keys, values and order it always had.
    assert json.dumps(attempt.to_json()) == json.dumps(
        {"step": 2, "seq": 0, "provider": "openai", "model": "gpt", "ok": 0, "error": "boom",
         "status": 429})
    assert json.dumps(edit.to_json()) == json.dumps(
        {"step": 2, "call_id": "c9", "path": "src/x.py", "lines_added": 3, "lines_removed": 1,
         "bytes_before": 40, "bytes_after": 52})


@pytest.mark.parametrize("record", [
    Citation("https://e.test", None, "t"),
    ServerToolCall("web_fetch", {"url": "https://e.test", "n": [1, 2]}),
    ProviderAttempt("p", "m", False, "e", 500),
    ProviderAttempt("p", "m", True),
    Edit("a/b.txt", 2, 1, 10, 11),
])
def test_each_record_reads_back_its_own_json(record: object) -> None:
    kind = type(record)
    data = record.to_json()  # type: ignore[attr-defined]
    assert kind.from_json(data) == record  # type: ignore[attr-defined]
    assert kind.from_json({**data, "added_later": 1}) == record  # type: ignore[attr-defined]


def test_a_foreign_failure_becomes_a_failed_attempt_that_names_it() -> None:
    assert ProviderAttempt.of(ValueError("bad")) == ProviderAttempt("", "", False, "bad")
    kept = ProviderAttempt("p", "m", False, "x", 1)
    assert ProviderAttempt.of(kept) is kept


def test_a_gate_s_inputs_fate_is_typed_and_its_column_keeps_the_old_json(
        store: Store, tmp_path: Path) -> None:
    fate = InputsFate(("tests/**",), editable=False, untouched=False, modified=("tests/a.py",))
    store.record_verification("r1", 0, "pytest", False, 1, "out", duration_seconds=0.5,
                              sandbox="floor", inputs=fate)
    assert _rows(tmp_path / "s.db", "SELECT inputs FROM verifications") == [
        ('{"inputs":["tests/**"],"editable":false,"untouched":false,"modified":["tests/a.py"]}',)]
    # A row as the dict-taking code wrote it, with no patterns recorded.
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute("INSERT INTO verifications(run_id, step_index, created_at, criterion, passed,"
                     " exit_status, output, duration_seconds, sandbox, inputs) VALUES"
                     " ('r1', 1, 'now', 'make', 1, 0, '', NULL, 'off',"
                     " '{\"inputs\":null,\"editable\":true,\"untouched\":null,\"modified\":[]}')")
    first, second = store.verifications("r1")
    assert first.inputs == fate
    assert second.inputs == InputsFate(None, editable=True, untouched=None)
    # `io trace --json` writes each row as the dataclass's fields did (`vars`), in order.
    assert json.dumps(second.row_json()) == json.dumps(
        {"step_index": 1, "criterion": "make", "passed": True, "exit_status": 0, "output": "",
         "duration_seconds": None, "sandbox": "off",
         "inputs": {"inputs": None, "editable": True, "untouched": None, "modified": []}})
    assert first.to_json()["modified_inputs"] == ["tests/a.py"]
    assert first.to_json()["inputs_untouched"] is False


@pytest.mark.parametrize("record", [
    EditRecord(2, "c1", Edit("a.txt", 1, 0, 0, 4)),
    AttemptRecord(0, 1, ProviderAttempt("openai", "gpt", False, "HTTP 429", 429)),
    AttemptRecord(3, 0, ProviderAttempt("scripted", "m", True)),
    DriveRecord(1, "2026-01-01T00:00:00+00:00", 42, {"tier": "full"}, {"backend": "floor"}),
    DriveRecord(0, "2026-01-01T00:00:00+00:00", 7, {}, None),
    TodoItem("read", "done", 3),
    TodoItem("write", "pending"),
])
def test_each_store_record_reads_back_its_own_json(record: object) -> None:
    kind = type(record)
    assert kind.from_json(record.to_json()) == record  # type: ignore[attr-defined]
