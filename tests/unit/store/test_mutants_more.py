"""Store survivors of the mutation pass killed after it (bench/README.md, not
re-measured): the path in every schema finding, `_one_line` at exactly three findings
and its length cap, a refusal's round trip through the ledger, no sandbox stored as
SQL NULL on a resumed drive, and the session a live turn holds named in the error."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness_core import Message, SessionInUse, Store, StoreDamaged, ToolCall, ToolResult
from harness_core.store import _check
from harness_core.tool_data import Refusal
from tests.unit.store.test_check_faults import _store


def _schema_error(conn: sqlite3.Connection, path: Path, known: frozenset[str]) -> StoreDamaged:
    with pytest.raises(StoreDamaged) as info:
        _check.verify_schema(conn, path, expected=7, known=known)
    assert info.value.path == str(path)
    return info.value


def test_every_schema_finding_names_the_file(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    conn = sqlite3.connect(path)
    try:
        _schema_error(conn, path, frozenset({"0002_handles"}))  # migrations it does not know
        known = frozenset(r[0] for r in conn.execute("SELECT name FROM migrations"))
        conn.execute("DELETE FROM meta WHERE key = 'checkpoint_format'")
        error = _schema_error(conn, path, known)
        assert error.detail == "its checkpoint_format row is missing"
        conn.execute("DROP TABLE meta")
        error = _schema_error(conn, path, known)
        assert error.detail == ("it is a SQLite database but not an io store (no meta"
                                " table)")
    finally:
        conn.close()


def test_one_line_counts_only_findings_past_three_and_caps_the_length() -> None:
    assert _check._one_line(["a", "b", "c"]) == "a; b; c"
    assert _check._one_line(["a", "b", "c", "d"]) == "a; b; c (and 1 more)"
    assert _check._one_line(["x" * 500]) == "x" * 300


def test_a_refusal_comes_back_from_the_ledger(tmp_path: Path) -> None:
    refusal = Refusal("denied by rule", act="exec", target="rm -rf /", rule="rm *",
                      layer="project")
    with Store(tmp_path / "s.db") as store:
        store.create_run("r1", goal="g", workspace="/w", model="m", settings={}, policy={},
                         sandbox=None, messages=[Message.user("g")])
        store.record_intent("r1", 0, 0, ToolCall("c1", "exec", {"argv": ["rm"]}))
        store.record_observation("r1", 0, 0, ToolResult("c1", "exec", "refused", True),
                                 refused=refusal)
        (entry,) = store.ledger("r1")
        assert entry.refused == refusal
        assert (entry.data_json() or {})["refused"] == refusal.to_json()


def test_a_resumed_drive_without_a_sandbox_stores_null(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        store.create_run("r1", goal="g", workspace="/w", model="m", settings={}, policy={},
                         sandbox=None, messages=[])
        store.record_drive("r1", 1, 5, {}, None)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT seq, sandbox IS NULL FROM drives ORDER BY seq").fetchall() \
            == [(0, 1), (1, 1)]
    finally:
        conn.close()


def test_a_live_turn_names_its_session(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create_session("sess", workspace="/w")
        store.create_run("t1", goal="g", workspace="/w", model="m", settings={}, policy={},
                         sandbox=None, messages=[], session_id="sess", owner_pid=300,
                         owner_started=3.0)
        with pytest.raises(SessionInUse) as info:
            store.acquire_session("sess", 200, 2.0, alive=lambda pid, started: True)
        assert (info.value.session_id, info.value.run_id) == ("sess", "t1")


def test_a_turn_ref_is_stripped_of_hashes_only(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create_session("sess", workspace="/w")
        for run_id in ("Xa1", "Xa2", "Xb"):
            store.create_run(run_id, goal="g", workspace="/w", model="m", settings={},
                             policy={}, sandbox=None, messages=[], session_id="sess")
        found = store.find_turn("sess", "Xb")
        assert found is not None and found.run_id == "Xb"
        assert store.find_turn("sess", "Xa") is None  # two turns start with it
        assert store.find_turn("sess", "b") is None
