"""A looping run killed with kill -9 between repetitions and resumed stops as stalled at
the same step as the same run left alone: the stall detector's window is taken back
from the recorded steps, not started again at zero.

The model (a loopback Chat Completions fake) asks for the same `echo` at every step. The
uninterrupted run is the reference; the other run is killed while the fake holds the
request of step `held` (the store holds exactly `held` steps: polled, never slept for),
then `io resume` runs in a new process.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.vendor_server import (
    FakeCall,
    FakeVendorServer,
    Hang,
    RecordedRequest,
    Reply,
    Turn,
    tool_results_in,
)
from tests.integration.providers.conftest import (
    Cli,
    events,
    finished,
    provider_toml,
    write_workspace,
)

StartFake = Callable[..., FakeVendorServer]


def _same_call(request: RecordedRequest) -> Reply:
    step = tool_results_in(request)
    call = FakeCall(f"call_{step}", "exec", json.dumps({"argv": ["echo", "again"]}))
    return Turn(text="once more", tool_calls=(call,))


def _steps(store: Path, run_id: str) -> int:
    with sqlite3.connect(store) as db:
        return int(db.execute("SELECT COUNT(*) FROM steps WHERE run_id = ?",
                              (run_id,)).fetchone()[0])


def _stop(cli: Cli, stdout: str) -> tuple[Any, ...]:
    end = finished(stdout)
    stalls = [e for e in events(stdout) if e["kind"] == "stall"]
    assert len(stalls) == 1, stdout
    return end["status"], end["exit_code"], end["reason"], _steps(cli.store, end["run_id"])


def _wait_for(condition: Callable[[], bool], what: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.parametrize("held", [1, 2])
def test_a_resumed_loop_stalls_at_the_step_an_uninterrupted_one_does(
    cli: Cli, fakes: StartFake, tmp_path: Path, isolated_env: Path, held: int
) -> None:
    reference = fakes("openai", responder=_same_call)
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", reference))
    whole = cli("run", "loop", "-w", str(ws), "--json")
    assert whole.returncode == 3, whole.stderr
    expected = _stop(cli, whole.stdout)
    assert expected[0] == "stopped" and "stalled" in expected[2]
    assert expected[3] > held  # the kill lands before the stall

    hang = Hang()
    fake = fakes("openai", responder=_holding(held, hang))
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake))
    proc = cli.popen("run", "loop", "-w", str(ws), "--json")
    try:
        _wait_for(lambda: len(fake.requests) > held, "the held request")
        run_id = _run_id(cli.store)
        _wait_for(lambda: _steps(cli.store, run_id) == held, f"{held} recorded steps")
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    hang.release.set()
    assert proc.returncode == -signal.SIGKILL
    assert events(out)[0]["run_id"] == run_id

    resumed = cli("resume", run_id, "-w", str(ws), "--json")
    assert resumed.returncode == 3, resumed.stderr
    assert _stop(cli, resumed.stdout) == expected
    assert fake.violations == [] and reference.violations == []


def _holding(held: int, hang: Hang) -> Callable[[RecordedRequest], Reply]:
    """The same call every time, except that request number `held` hangs (once)."""
    count = [0]

    def respond(request: RecordedRequest) -> Reply:
        count[0] += 1
        if count[0] == held + 1:
            return hang
        return _same_call(request)

    return respond


def _run_id(store: Path) -> str:
    """The newest run in the store (the one the killed process drives)."""
    _wait_for(store.exists, "the store")
    with sqlite3.connect(store) as db:
        return str(db.execute("SELECT run_id FROM runs ORDER BY created_at DESC, rowid DESC"
                              " LIMIT 1").fetchone()[0])
