"""Opening a store costs the same at any size: `PRAGMA quick_check` runs only after an
unclean close (an io process killed with the store open), a change no io made, or a
missing fingerprint; never after a clean close, and never while a live io holds it.

The unclean closes are real: a child process opens the store and is killed with
SIGKILL (the marker it leaves is what a crash leaves)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness_core import Message, Store, StoreDamaged
from harness_core.store import _check, _clean

_HOLD = """
import sys
from harness_core import Store
store = Store(sys.argv[1])
store.list_runs()
print("open", flush=True)
sys.stdin.read()
"""


def _store(path: Path, runs: int = 3) -> Path:
    with Store(path) as store:
        for i in range(runs):
            store.create_run(f"r{i}", goal="g", workspace="/w", model="m", settings={},
                             policy={}, sandbox=None, messages=[Message.user("hi")])
    return path


def _checked_on_open(path: Path) -> bool:
    info = path.stat()
    _check._checked.discard((info.st_dev, info.st_ino))
    Store(path).close()
    return (info.st_dev, info.st_ino) in _check._checked


def _holder(path: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "open\n"
    return child


def _markers(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith("s.db-open-"))


def _kill(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    for pipe in (child.stdin, child.stdout):
        if pipe is not None:
            pipe.close()


def test_a_cleanly_closed_store_opens_without_quick_check(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    assert (tmp_path / "s.db-clean").is_file() and _markers(path) == []
    assert not _checked_on_open(path)
    assert not _checked_on_open(path)  # and stays so


def test_an_io_killed_with_the_store_open_makes_the_next_open_check(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    child = _holder(path)
    assert len(_markers(path)) == 1
    _kill(child)
    assert _checked_on_open(path)
    assert _markers(path) == []  # the dead marker is settled by the passed check
    assert not _checked_on_open(path)


def test_a_live_io_holding_the_store_is_trusted(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    child = _holder(path)
    try:
        with Store(path) as store:  # this process writes while the child holds it open
            store.set_status("r0", store.run("r0").status)
        assert not _checked_on_open(path)
    finally:
        _kill(child)


def test_a_write_by_another_program_makes_the_next_open_check(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET goal = 'edited' WHERE run_id = 'r0'")
    conn.close()
    assert _checked_on_open(path)
    assert not _checked_on_open(path)  # the clean close after the check recorded it


def test_a_missing_or_garbled_fingerprint_makes_the_open_check(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    (tmp_path / "s.db-clean").unlink()
    assert _checked_on_open(path)
    (tmp_path / "s.db-clean").write_text("{not json")
    assert _checked_on_open(path)
    assert not _checked_on_open(path)


def test_a_damaged_page_after_a_crash_is_refused_and_not_written(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db", runs=30)
    child = _holder(path)
    _kill(child)
    with open(path, "r+b") as handle:  # a table page the open's own reads never touch
        handle.seek(path.stat().st_size - 4096 * 3 + 8)
        handle.write(b"\xff" * 64)
    before = path.read_bytes()
    info = path.stat()
    _check._checked.discard((info.st_dev, info.st_ino))
    with pytest.raises(StoreDamaged, match="quick_check found"):
        Store(path)
    assert path.read_bytes() == before
    assert len(_markers(path)) == 1  # the unclean close stays on record until a check passes


def test_a_marker_of_a_reused_pid_counts_as_dead(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    # This very process's pid, with a start time it never had: a pid reused since.
    (tmp_path / f"s.db-open-{os.getpid()}-0000").write_text(f"{os.getpid()} 1")
    assert _checked_on_open(path)
    assert _markers(path) == []


def test_a_planted_fingerprint_link_is_neither_read_nor_followed(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    outside = tmp_path / "outside.txt"
    outside.write_text((tmp_path / "s.db-clean").read_text())
    (tmp_path / "s.db-clean").unlink()
    (tmp_path / "s.db-clean").symlink_to(outside)
    assert _checked_on_open(path)  # a link is a doubt, however right its content
    assert outside.read_text().startswith("{")  # unchanged: the close replaced the link
    assert not (tmp_path / "s.db-clean").is_symlink()
    assert not _checked_on_open(path)


def test_an_unwritable_directory_leaves_no_marker_and_the_open_still_answers(
        tmp_path: Path) -> None:
    path = _store(tmp_path / "s.db")
    marker = _clean.OpenMarker(tmp_path / "missing-dir" / "s.db")  # cannot be created
    marker.close()
    assert not (tmp_path / "missing-dir").exists()
    assert not _checked_on_open(path)
