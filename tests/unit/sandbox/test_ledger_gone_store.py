"""A dead `io`'s ledger whose store file is gone is swept by the next store opened (no
later `io` could open that store to record it, and every start would read it again);
one whose store still exists is left for that store to sweep and record."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil

from harness_core.sandbox._ledger import Ledger, read_ledger
from harness_core.sandbox._sweep import sweep


def _dead_owner_with_a_command(folder: Path, store: str) -> tuple[int, Path]:
    """Fork an owner that notes a run of `store`, starts `sleep` in its own session,
    records it and dies without cleaning up; returns the sleep's pid and the ledger."""
    reader, writer = os.pipe()
    owner = os.fork()
    if owner == 0:
        try:
            os.close(reader)
            ledger = Ledger(folder)
            ledger.note_run("run-1", store)
            sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
            ledger.add(sleeper.pid, None)
            os.write(writer, str(sleeper.pid).encode())
        finally:
            os._exit(0)
    os.close(writer)
    pid = int(os.read(reader, 64))
    os.close(reader)
    os.waitpid(owner, 0)
    return pid, folder / f"io-{owner}.json"


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_ledger_of_a_removed_store_is_swept_by_another_store(tmp_path: Path) -> None:
    folder = tmp_path / "ledgers"
    folder.mkdir()
    pid, path = _dead_owner_with_a_command(folder, str(tmp_path / "removed" / "state.db"))
    data = read_ledger(path.read_text())
    assert data is not None and data["entries"]  # a live command of a dead owner
    swept = sweep(folder, store=str(tmp_path / "mine.db"))
    assert [s.runs for s in swept] == [("run-1",)]
    assert [k["pid"] for k in swept[0].killed] == [pid]
    assert not path.exists()
    psutil.Process(pid).wait(timeout=10) if not _gone(pid) else None
    assert _gone(pid)


def test_a_ledger_of_an_existing_store_is_left_to_that_store(tmp_path: Path) -> None:
    folder = tmp_path / "ledgers"
    folder.mkdir()
    theirs = tmp_path / "theirs.db"
    theirs.write_bytes(b"")
    pid, path = _dead_owner_with_a_command(folder, str(theirs))
    try:
        assert sweep(folder, store=str(tmp_path / "mine.db")) == []
        assert path.exists() and not _gone(pid)  # their store will sweep and record it
        swept = sweep(folder, store=str(theirs))
        assert [k["pid"] for k in swept[0].killed] == [pid] and not path.exists()
    finally:
        if not _gone(pid):
            os.kill(pid, 9)
