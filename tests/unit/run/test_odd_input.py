"""Odd input never ends a run: each tool failure the model's input causes comes back as
an error observation, the run goes on to the next step, and names that are not UTF-8
are shown with an explicit marker and stored losslessly (real loop, real SQLite file,
real files on disk)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness_core import Policy, Runner, RunStatus, Store
from harness_core.tools._files import MAX_READ_BYTES
from tests.unit.session.support import RecordingProvider, spec_for

ODD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("read_file", {"path": "a\ud800b"}, "lone surrogate"),
    ("read_file", {"path": "a\x00b"}, "NUL byte"),
    ("read_file", {"path": "loop1"}, "too many symbolic links"),
    ("read_file", {"path": "fifo"}, "not a regular file"),
    ("read_file", {"path": "d"}, "not a regular file"),
    ("read_file", {"path": "sparse.bin"}, "limit of one read"),
    ("list_dir", {"path": "loop1"}, "too many symbolic links"),
    ("list_dir", {"path": "fifo"}, "not a directory"),
    ("write_file", {"path": "x\ud800", "content": "a"}, "lone surrogate"),
    ("write_file", {"path": "y.txt", "content": "a\ud800"}, "lone surrogate"),
    ("write_file", {"path": "d", "content": "a"}, "is a directory"),
    ("edit_file", {"path": "ok.txt", "old": "hello", "new": "\udfff"}, "lone surrogate"),
    ("edit_file", {"path": "n\x00", "old": "a", "new": "b"}, "NUL byte"),
    ("find", {"pattern": "*", "path": "a\x00"}, "NUL byte"),
    ("grep", {"pattern": "x", "path": "loop1"}, "too many symbolic links"),
    ("exec", {"argv": ["true", "a\x00"]}, "NUL byte"),
    ("exec", {"argv": ["true", "\ud800"]}, "lone surrogate"),
    ("exec", {"argv": ["true"], "cwd": "\ud800"}, "lone surrogate"),
]


def _odd_workspace(root: Path) -> Path:
    root.mkdir()
    (root / "d").mkdir()
    (root / "ok.txt").write_text("hello")
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    os.mkfifo(root / "fifo")
    with open(root / "sparse.bin", "wb") as handle:  # sparse: no disk space used
        handle.truncate(MAX_READ_BYTES + 1)
    return root


@pytest.mark.parametrize(("tool", "args", "says"), ODD_CALLS,
                         ids=[f"{t}-{s.replace(' ', '_')}" for t, _, s in ODD_CALLS])
def test_a_tool_failure_from_input_is_an_observation_and_the_run_goes_on(
        tmp_path: Path, tool: str, args: dict[str, Any], says: str) -> None:
    ws = _odd_workspace(tmp_path / "ws")
    provider = RecordingProvider([("odd", [(tool, args)]), ("done", [])])
    policy = Policy.from_lists(tier="workspace-write", allow_exec=["true*"])
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider).start(spec_for(ws, "odd", policy=policy))
        entries = store.ledger(outcome.run_id)
    assert outcome.status is RunStatus.FINISHED, outcome.reason
    assert len(provider.requests) == 2  # the model saw the observation and went on
    assert len(entries) == 1 and entries[0].is_error
    assert says in (entries[0].observation or "")
    seen = [m.content for m in provider.requests[1].messages if m.role.value == "tool"]
    assert seen == [entries[0].observation]
    assert (ws / "ok.txt").read_text() == "hello"


def test_a_name_that_is_not_utf8_is_marked_and_stored_losslessly(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    raw = b"caf\xe9.txt"
    with open(os.path.join(os.fsencode(ws), raw), "wb") as handle:
        handle.write(b"latin-1 named")
    escaped = os.fsdecode(raw)  # 'caf\udce9.txt', the name the OS hands back
    provider = RecordingProvider([
        ("list", [("list_dir", {})]),
        ("find", [("find", {"pattern": "*.txt"})]),
        ("grep", [("grep", {"pattern": "latin"})]),
        ("read it by its escaped name", [("read_file", {"path": escaped})]),
        ("done", []),
    ])
    db = tmp_path / "state.db"
    with Store(db) as store:
        outcome = Runner(store, provider).start(spec_for(ws, "names"))
        entries = store.ledger(outcome.run_id)
    assert outcome.status is RunStatus.FINISHED, outcome.reason
    listing, found, grepped, read = (e.observation or "" for e in entries)
    assert "caf\\xe9.txt [not UTF-8]" in listing and "\\udcNN" in listing
    assert "caf\\xe9.txt [not UTF-8]" in found
    assert grepped.startswith("caf\\xe9.txt [not UTF-8]:1:latin-1 named")
    assert read == "latin-1 named"
    # the exact name survives the store: data keeps the surrogate-escaped name
    assert entries[0].data is not None and entries[0].data.entries == (escaped,)
    assert os.fsencode(entries[0].data.entries[0]) == raw
    # and the file is plain SQLite any reader opens (no invalid UTF-8 written)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT data FROM ledger WHERE name = 'list_dir'").fetchall()
    assert json.loads(rows[0][0])["entries"] == [escaped]


def test_a_permission_failure_is_an_observation(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ro").mkdir()
    (ws / "ro" / "f.txt").write_text("x")
    os.chmod(ws / "ro", 0o500)
    try:
        writable = os.access(ws / "ro", os.W_OK)  # root writes anyway: then no failure
        provider = RecordingProvider([("w", [("write_file", {"path": "ro/f.txt",
                                                             "content": "y"})]), ("done", [])])
        with Store(tmp_path / "state.db") as store:
            outcome = Runner(store, provider).start(spec_for(ws, "perm"))
            entry = store.ledger(outcome.run_id)[0]
    finally:
        os.chmod(ws / "ro", 0o700)
    assert outcome.status is RunStatus.FINISHED
    if not writable:
        assert entry.is_error and "permission denied" in (entry.observation or "")
