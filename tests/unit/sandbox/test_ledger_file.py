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


def test_a_command_start_time_from_the_spawn_clock_is_the_one_a_sweep_compares(
        tmp_path: Path) -> None:
    # The sweep matches a recorded command by psutil's create_time (within 50 ms):
    # the start time taken from clock readings around the spawn must be that very value,
    # and so must the one read from /proc when the readings straddle a clock tick.
    import subprocess
    import sys

    import psutil

    from harness_core.sandbox._started import spawn_clock, started_between

    for _ in range(5):
        before = spawn_clock()
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                 stdin=subprocess.PIPE)
        after = spawn_clock()
        try:
            expected = psutil.Process(child.pid).create_time()
            assert started_between(child.pid, before, after) == expected
            if before is not None:  # a window of 50 ms always spans ticks: /proc is read
                assert started_between(child.pid, before - 50_000_000, after) == expected
            assert started_between(child.pid, None, None) == expected  # psutil itself
        finally:
            child.communicate(b"")
    ledger = Ledger(tmp_path)
    before = spawn_clock()
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        ledger.add(child.pid, None, spawned=(before, spawn_clock()))
        data = read_ledger(ledger.path.read_text())
        assert data is not None
        assert data["entries"][0]["started"] == psutil.Process(child.pid).create_time()
    finally:
        child.communicate(b"")


def test_appends_after_a_compaction_go_to_the_compacted_file(tmp_path: Path) -> None:
    # The ledger keeps its file open between appends; the compaction replaces the file,
    # so the next append must reach the new one, not the replaced inode.
    import harness_core.sandbox._ledger as module

    module_any: object = module
    setattr(module_any, "_COMPACT_AFTER", 4)
    try:
        ledger = Ledger(tmp_path)
        ledger.note_run("r1", "/s")
        for pid in (101, 102, 103, 104):
            ledger.add(pid, None)
        ledger.remove(101)
        data = read_ledger(ledger.path.read_text())
        assert data is not None
        assert [e["pid"] for e in data["entries"]] == [102, 103, 104]
        assert ledger.path.read_text().count("owner_pid") == 1
    finally:
        setattr(module_any, "_COMPACT_AFTER", 4096)
