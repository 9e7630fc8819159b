"""After `kill -9` of `io`, the next `io` that opens the store ends what the run started.

A run starts a background handle (`sleep A`) and a command that leaves its session
(`setsid`) for a grandchild (`sleep B`) and then blocks (`sleep C`). `io` is killed with
SIGKILL mid-step (under the floor its resident launcher too, which would otherwise end
them at once: see test_floor_survivors). Under `off` and the floor the three survive it
(the negative control: nothing ran `io`'s clean-up); `io runs` then kills them, and the store records
what it killed against the run. Under the native backend nothing survives at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from harness_core import Store
from harness_core.sandbox import Selected
from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import replay_line

PAYLOAD = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    os.execvp("sleep", ["sleep", sys.argv[1]])
time.sleep(int(sys.argv[2]))
"""


def marked(*seconds: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if any(s in cmdline for s in seconds) and (
            "sleep" in " ".join(cmdline) or "payload.py" in " ".join(cmdline)):
            found.append(process)
    return found


def _running(process: psutil.Process) -> bool:
    """Not ended (one that ended after `marked` listed it is not an error)."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_for(sleeps: list[str], timeout: float = 60) -> None:
    """Until a `sleep N` runs for every N in `sleeps`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = set()
        for process in marked(*sleeps):
            with contextlib.suppress(psutil.Error):
                cmdline = process.cmdline()  # empty for a process that is just ending
                if cmdline and cmdline[0].rpartition("/")[2] == "sleep":
                    running.update(cmdline[1:])
        if all(n in running for n in sleeps):
            return
        time.sleep(0.05)
    raise AssertionError(f"the run did not start {sleeps} in {timeout} s")


@pytest.fixture
def numbers() -> Iterator[list[str]]:
    picked = [str(random.randint(40000, 90000) + i) for i in range(3)]
    try:
        yield picked
    finally:
        for process in marked(*picked):
            with contextlib.suppress(psutil.Error):
                process.kill()


def start_and_kill(tmp_path: Path, backend: str, numbers: list[str]) -> tuple[str, Path]:
    handle, grandchild, blocker = numbers
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "payload.py").write_text(PAYLOAD)
    (ws / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n\n'
        f'[policy]\ntier = "full"\n\n[sandbox]\nbackend = "{backend}"\n')
    (ws / "replay.jsonl").write_text("\n".join([
        replay_line("start", ("shell_start", {"line": f"sleep {handle}"})),
        replay_line("block", ("exec", {"argv": ["python3", "payload.py", grandchild, blocker],
                                       "timeout_seconds": 600})),
        replay_line("done"),
    ]) + "\n")
    store = tmp_path / "state.db"
    env = {**os.environ, "IO_STORE": str(store)}
    io = subprocess.Popen([*io_cmd(), "run", "sweep me", "--json"], cwd=ws, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for([handle, grandchild])
    finally:
        launchers = [child for child in psutil.Process(io.pid).children()
                     if child.cmdline()[1:4] == ["-I", "-S", "-c"]]
        # The launchers are stopped first: on the floor one is io's reaper and, left
        # running, it could end the commands between io's kill and its own (a loaded
        # machine schedules it there), leaving nothing for the sweep to find.
        for launcher in launchers:
            with contextlib.suppress(psutil.Error):
                launcher.suspend()
        io.send_signal(signal.SIGKILL)
        for launcher in launchers:
            with contextlib.suppress(psutil.Error):
                launcher.kill()
        out, _ = io.communicate(timeout=30)
    run_id = json.loads(out.decode().splitlines()[0])["run_id"]
    return run_id, store


@pytest.mark.parametrize("backend", ["off", "floor"])
def test_leftovers_of_a_killed_io_are_swept_and_recorded(
    tmp_path: Path, backend: str, numbers: list[str]
) -> None:
    run_id, store = start_and_kill(tmp_path, backend, numbers)
    survivors = {p.pid for p in marked(*numbers)}
    assert len(survivors) >= 3, [" ".join(p.cmdline()) for p in marked(*numbers)]

    result = run_io(["runs"], cwd=tmp_path, env={"IO_STORE": str(store)})
    assert result.returncode == 0, result.stderr
    assert "swept" in result.stderr
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and [p for p in marked(*numbers) if _running(p)]:
        time.sleep(0.05)
    assert [p for p in marked(*numbers) if _running(p)] == []
    with Store(store) as opened:
        sweeps = opened.sweeps(run_id)
    killed = {k["pid"] for s in sweeps for k in s["killed"]}
    assert survivors <= killed


def test_native_leaves_nothing_after_kill_9(
    tmp_path: Path, native: Selected, numbers: list[str]
) -> None:
    start_and_kill(tmp_path, "native", numbers)
    run_io(["runs"], cwd=tmp_path, env={"IO_STORE": str(tmp_path / "state.db")})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and [p for p in marked(*numbers) if _running(p)]:
        time.sleep(0.05)
    assert [p for p in marked(*numbers) if _running(p)] == []
