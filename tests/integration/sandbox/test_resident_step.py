"""The resident sandbox's per-command path after issue 24 made it cheaper.

Real bwrap, real cgroups, real processes. A command's ledger entry carries the start
time a sweep compares (read from the spare before it became the command), and what a
command leaves behind in its cgroup when it exits is still killed (an empty cgroup is
no longer sent a kill, a non-empty one is).
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

import harness_core.sandbox._ledger as ledger_module
from harness_core.sandbox import LaunchRequest, ProcessLauncher, run_command
from harness_core.sandbox._ledger import Ledger, read_ledger
from tests.integration.sandbox.test_resident import BACKENDS, made  # noqa: F401 - fixture

__all__ = ["made"]


def _alive(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if any(marker in part for part in cmdline) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_command_is_in_the_ledger_with_the_start_time_a_sweep_compares(
    made: Callable[..., ProcessLauncher], backend: str,  # noqa: F811
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "ledger").mkdir()
    ledger = Ledger(tmp_path / "ledger")
    monkeypatch.setattr(ledger_module, "_active", ledger)
    used = made(request.getfixturevalue(backend))
    run_command(used, LaunchRequest(argv=["true"], cwd=made.workdir))  # the sandbox is up
    process = used.popen(LaunchRequest(
        argv=["sleep", "30"], cwd=made.workdir, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        data = read_ledger(ledger.path.read_text())
        assert data is not None
        entry = next(e for e in data["entries"] if e["pid"] == process.pid)
        assert entry["started"] == psutil.Process(process.pid).create_time()
        deadline = time.monotonic() + 10  # the spare's exec may still be under way
        while psutil.Process(process.pid).cmdline()[1:] != ["30"]:
            assert time.monotonic() < deadline, "the spare never became the command"
            time.sleep(0.01)
        assert entry["started"] == psutil.Process(process.pid).create_time()  # exec kept it
        assert (entry["pgid"], entry["sid"]) == (process.pid, process.pid)
    finally:
        used.kill_tree(process)
        used.finish(process)
    data = read_ledger(ledger.path.read_text())
    assert data is not None and process.pid not in [e["pid"] for e in data["entries"]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_what_an_exited_command_left_in_its_cgroup_is_killed(
    made: Callable[..., ProcessLauncher], backend: str,  # noqa: F811
    request: pytest.FixtureRequest,
) -> None:
    used = made(request.getfixturevalue(backend))
    marker = uuid.uuid4().hex[:8]
    line = f"setsid sh -c 'sleep 60; : {marker}' </dev/null >/dev/null 2>&1 & exit 3"
    for _ in range(3):  # and the commands after it, in the same sandbox, are unharmed
        result = run_command(used, LaunchRequest(argv=["sh", "-c", line], cwd=made.workdir),
                             timeout=30)
        assert result.exit_status == 3
        deadline = time.monotonic() + 10
        while _alive(marker):
            assert time.monotonic() < deadline, "a setsid grandchild outlived its command"
            time.sleep(0.02)
    assert run_command(used, LaunchRequest(argv=["true"], cwd=made.workdir)).exit_status == 0
