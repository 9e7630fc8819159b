"""A descendant first seen while it is still in its command's session and group, and
that calls `setsid()` only afterwards, is recorded in the ledger when it is next seen
(#22): it used to be remembered as "looked at" on the first sighting and never looked
at again, so a `kill -9`ed io's sweep could not name it (seen as a flaky
`test_floor_survivors` under load, where the sampler often lands between fork and
setsid)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

import harness_core.sandbox._ledger as ledger_module
from harness_core.sandbox._ledger import Ledger, note_escapees, read_ledger
from harness_core.shell._tree import ProcessTracker

_LATE = """
import os, sys, time
trigger = sys.argv[1]
if os.fork() == 0:
    while not os.path.exists(trigger):
        time.sleep(0.01)
    os.setsid()
    os.execv("/bin/sleep", ["sleep", "300"])
os.execv("/bin/sleep", ["sleep", "300"])
"""


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Ledger]:
    active = Ledger(tmp_path / "ledger")
    (tmp_path / "ledger").mkdir()
    monkeypatch.setattr(ledger_module, "_active", active)
    yield active
    active.close_file()


def _command(tmp_path: Path) -> tuple[subprocess.Popen[bytes], psutil.Process, Path]:
    trigger = tmp_path / "go"
    command = subprocess.Popen([sys.executable, "-c", _LATE, str(trigger)],
                               start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        children = psutil.Process(command.pid).children()
        if children:
            return command, children[0], trigger
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.01)


def _wait_left(child: psutil.Process) -> None:
    deadline = time.monotonic() + 30
    while os.getsid(child.pid) != child.pid:
        assert time.monotonic() < deadline, "the child never called setsid"
        time.sleep(0.01)


def _seen(ledger: Ledger) -> set[int]:
    data = read_ledger(ledger.path.read_text())
    assert data is not None
    return {entry["pid"] for entry in data["seen"]}


def _end(command: subprocess.Popen[bytes], child: psutil.Process) -> None:
    for process in (child, psutil.Process(command.pid)):
        try:
            process.kill()
        except psutil.Error:
            pass
    command.wait()


def test_a_descendant_that_leaves_after_it_was_first_seen_is_recorded(
        tmp_path: Path, ledger: Ledger) -> None:
    command, child, trigger = _command(tmp_path)
    try:
        ledger.add(command.pid, None)
        known: set[int] = set()
        note_escapees(command.pid, known)
        assert child.pid not in _seen(ledger)  # still in the command's session: not yet
        trigger.touch()
        _wait_left(child)
        note_escapees(command.pid, known)
        assert child.pid in _seen(ledger)
    finally:
        _end(command, child)


def test_the_tracker_records_a_late_escapee_of_a_stage(tmp_path: Path, ledger: Ledger) -> None:
    command, child, trigger = _command(tmp_path)
    try:
        ledger.add(command.pid, None)
        tracker = ProcessTracker()
        tracker.add(command)
        tracker.snapshot()
        assert child.pid in tracker.pids() and child.pid not in _seen(ledger)
        trigger.touch()
        _wait_left(child)
        tracker.snapshot()
        assert child.pid in _seen(ledger)
    finally:
        _end(command, child)
