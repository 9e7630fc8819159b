"""Ledger files without an owner line: never written any more, and removed by the sweep
once their process is gone (every `io` start reads every ledger file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness_core.sandbox._ledger import Ledger, read_ledger
from harness_core.sandbox._sweep import sweep


def test_a_ledger_whose_file_was_removed_starts_again_with_its_owner_line(
        tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.note_run("r1", "/s/state.db")
    ledger.path.unlink()
    ledger.note_run("r2", "/s/state.db")
    data = read_ledger(ledger.path.read_text())
    assert data is not None and data["owner_pid"] == os.getpid()
    assert data["runs"] == ["r2"] and data["token"] == ledger.token


def test_a_forked_child_writes_its_own_owner_line(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.note_run("parent-run", "/s/state.db")
    pid = os.fork()
    if pid == 0:  # the child appends to its own pid's file with the inherited ledger
        try:
            ledger.note_run("child-run", "/s/other.db")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    data = read_ledger((tmp_path / f"io-{pid}.json").read_text())
    assert data is not None and data["owner_pid"] == pid and data["runs"] == ["child-run"]


def test_the_sweep_removes_an_ownerless_ledger_of_a_dead_process_only(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    lines = json.dumps({"run": "r"}) + "\n" + json.dumps({"store": "/s"}) + "\n"
    gone = tmp_path / f"io-{dead_pid}.json"
    gone.write_text(lines)
    alive = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        living = tmp_path / f"io-{alive.pid}.json"
        living.write_text(lines)
        mine = tmp_path / f"io-{os.getpid()}.json"
        mine.write_text(lines)
        assert sweep(tmp_path) == []
        assert not gone.exists()  # its process is gone: nothing can own it
        assert living.exists() and mine.exists()  # a live pid may still be writing it
    finally:
        alive.communicate(b"")
