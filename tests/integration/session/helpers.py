"""Shared pieces of the session, steering and question CLI tests: a tool call that
blocks until the test releases it, and polling with a deadline (never a bare sleep)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness_core import Store

DEADLINE = 30.0


class Blocker:
    """An `exec` call that writes `started`, then waits until `release` exists."""

    def __init__(self, tmp_path: Path) -> None:
        self.started = tmp_path / "started"
        self.release_file = tmp_path / "release"
        self.script = tmp_path / "wait.py"
        self.script.write_text(
            "import pathlib, time, sys\n"
            "pathlib.Path(sys.argv[2]).write_text('started')\n"
            "while not pathlib.Path(sys.argv[1]).exists():\n"
            "    time.sleep(0.02)\n"
            "print('released')\n")

    def call(self) -> tuple[str, dict[str, Any]]:
        return ("exec", {"argv": [sys.executable, str(self.script), str(self.release_file),
                                  str(self.started)]})

    def wait_started(self, proc: subprocess.Popen[str]) -> None:
        wait_until(self.started.exists, proc, "the blocking tool never started")

    def release(self) -> None:
        self.release_file.write_text("go")


def wait_until(condition: Callable[[], bool], proc: subprocess.Popen[str] | None,
               what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited early: {proc.communicate()}")
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def first_event(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """The first JSON line of a `--json` run (its run_started event).

    Read a byte at a time from the pipe itself: `readline()` on the text wrapper would
    buffer the lines after it, which a later `communicate()` (it reads the pipe, not
    the wrapper) would then never see.
    """
    assert proc.stdout is not None
    line = bytearray()
    while not line.endswith(b"\n"):
        byte = os.read(proc.stdout.fileno(), 1)
        if not byte:
            break
        line += byte
    return dict(json.loads(line.decode()))


def open_store() -> Store:
    """The store every `io` subprocess of this test uses (IO_STORE, set per test)."""
    return Store(os.environ["IO_STORE"])
