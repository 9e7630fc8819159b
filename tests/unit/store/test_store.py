"""The store on a real SQLite file: formats, typed errors, the ledger, locks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness_core import (
    CHECKPOINT_FORMAT,
    CheckpointFormatError,
    CheckpointState,
    Message,
    RunInUse,
    RunNotFound,
    StateError,
    Store,
    ToolCall,
    ToolResult,
    Usage,
)


def _store_with_run(path: Path) -> Store:
    store = Store(path)
    store.create_run("r1", goal="g", workspace="/w", model="m", settings={}, policy={},
                     sandbox=None, messages=[Message.system("s"), Message.user("g")],
                     owner_pid=1, owner_started=None)
    return store


def test_a_store_written_with_another_checkpoint_format_is_refused(tmp_path: Path) -> None:
    _store_with_run(tmp_path / "s.db").close()
    conn = sqlite3.connect(tmp_path / "s.db")
    conn.execute("UPDATE meta SET value = '6' WHERE key = 'checkpoint_format'")
    conn.commit()
    conn.close()
    with pytest.raises(CheckpointFormatError) as info:
        Store(tmp_path / "s.db")
    assert info.value.found == 6 and info.value.expected == CHECKPOINT_FORMAT == 7


def test_a_checkpoint_row_of_another_format_is_refused_not_half_read(tmp_path: Path) -> None:
    store = _store_with_run(tmp_path / "s.db")
    store.record_checkpoint("r1", 0, CheckpointState(0), tokens=1, wall_seconds=0.1)
    store._conn.execute("UPDATE checkpoints SET format = 99")
    with pytest.raises(CheckpointFormatError):
        store.last_checkpoint("r1")
    store.close()


def test_a_file_that_is_not_sqlite_is_a_state_error_and_is_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, not a database")
    with pytest.raises(StateError) as info:
        Store(path)
    assert not isinstance(info.value.__cause__, type(None)) or "not an io store" in str(info.value)
    assert path.read_text() == "hello, not a database"


def test_sqlite_errors_surface_as_state_error_never_raw(tmp_path: Path) -> None:
    store = _store_with_run(tmp_path / "s.db")
    with pytest.raises(StateError) as info:
        store.create_run("r1", goal="dup", workspace="/w", model=None, settings={}, policy={},
                         sandbox=None, messages=[])
    assert isinstance(info.value.__cause__, sqlite3.Error)
    assert not isinstance(info.value, sqlite3.Error)
    store.close()


def test_unknown_run_is_run_not_found(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store, pytest.raises(RunNotFound):
        store.run("nope")


def test_ledger_keeps_intent_without_observation_until_observed(tmp_path: Path) -> None:
    store = _store_with_run(tmp_path / "s.db")
    call = ToolCall("c1", "read_file", {"path": "a"})
    store.record_completion("r1", 0, text="t", tool_calls=[call], provider="p",
                            model_requested="m", model_served="m2", usage=Usage(total_tokens=3),
                            latency_ms=1.0, ttft_ms=None, stop_reason=None)
    store.record_intent("r1", 0, 0, call)
    (entry,) = store.ledger("r1", 0)
    assert not entry.has_observation
    store.record_observation("r1", 0, 0, ToolResult("c1", "read_file", "ok"))
    (entry,) = store.ledger("r1", 0)
    assert entry.observation == "ok"
    roles = [m.role.value for m in store.messages("r1")]
    assert roles == ["system", "user", "assistant", "tool"]
    step = store.step("r1", 0)
    assert step is not None and step.model_served == "m2" and step.ttft_ms is None
    assert step.usage.prompt_tokens is None  # not reported stays None, never 0
    assert store.integrity_check() == "ok"
    store.close()


def test_a_live_owner_keeps_the_run_and_a_dead_one_is_reclaimed(tmp_path: Path) -> None:
    store = _store_with_run(tmp_path / "s.db")
    with pytest.raises(RunInUse):
        store.acquire_run("r1", 2, 0.0, alive=lambda pid, started: True)
    assert store.acquire_run("r1", 2, 0.0, alive=lambda pid, started: False) == 1
    store.close()


def test_payloads_are_json_never_pickle(tmp_path: Path) -> None:
    store = _store_with_run(tmp_path / "s.db")
    store.close()
    conn = sqlite3.connect(tmp_path / "s.db")
    body = conn.execute("SELECT s.body, p.body FROM runs JOIN documents s ON s.hash ="
                        " runs.settings JOIN documents p ON p.hash = runs.policy").fetchone()
    conn.close()
    assert body == ("{}", "{}")
