"""The process ledger's file: appended JSON lines replayed by the sweep's reader; a torn
last line (kill -9 mid-write) and an earlier io's whole-file ledger both read back."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness_core.sandbox._ledger import Ledger, read_ledger


def test_the_reader_replays_adds_removes_and_runs(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.note_run("r1", "/s/state.db")
    ledger.add(os.getpid(), None)
    ledger.add(1, Path("/sys/fs/cgroup/x"))
    ledger.remove(1)
    ledger.note_run("r2", "/s/state.db")
    data = read_ledger(ledger.path.read_text())
    assert data is not None
    assert data["owner_pid"] == os.getpid() and data["token"] == ledger.token
    assert data["runs"] == ["r1", "r2"] and data["stores"] == ["/s/state.db"]
    assert [e["pid"] for e in data["entries"]] == [os.getpid()]


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.note_run("r1", "/s")
    ledger.add(os.getpid(), None)
    with open(ledger.path, "a") as handle:
        handle.write('{"add": {"pid": 9')  # killed mid-write
    data = read_ledger(ledger.path.read_text())
    assert data is not None and [e["pid"] for e in data["entries"]] == [os.getpid()]


def test_an_earlier_whole_file_ledger_still_reads(tmp_path: Path) -> None:
    old = {"owner_pid": 5, "owner_started": 1.0, "token": "t", "runs": ["r"],
           "stores": ["/s"], "entries": [{"pid": 7, "started": 2.0, "cgroup": None}]}
    assert read_ledger(json.dumps(old)) == old
    assert read_ledger("") is None


def test_a_long_lived_ledger_is_compacted_to_its_live_state(tmp_path: Path) -> None:
    import harness_core.sandbox._ledger as module

    module_any: object = module
    setattr(module_any, "_COMPACT_AFTER", 10)
    try:
        ledger = Ledger(tmp_path)
        ledger.note_run("r1", "/s")
        for pid in range(100, 130):
            ledger.add(pid, None)
            ledger.remove(pid)
        ledger.add(os.getpid(), None)
        lines = ledger.path.read_text().splitlines()
        assert len(lines) <= 12
        data = read_ledger(ledger.path.read_text())
        assert data is not None and [e["pid"] for e in data["entries"]] == [os.getpid()]
        assert data["runs"] == ["r1"]
    finally:
        setattr(module_any, "_COMPACT_AFTER", 4096)
