"""Resource limits that really hold: processes, memory, CPU, wall clock; the host stays unharmed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from harness_core.sandbox import (
    Backend,
    BackendChoice,
    LaunchRequest,
    SandboxConfig,
    SandboxLimits,
    SandboxSpec,
    Selected,
    launcher,
    run_command,
    select,
)
from harness_core.sandbox._cgroup import PidsHierarchy, find_pids_hierarchy

from .conftest import HOST_PATH, Sandbox

FORK_BOMB = """
import os, sys, time
cap, made = int(sys.argv[1]), 0
while made < cap:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    made += 1
print(made, flush=True)
"""


def our_cgroups() -> list[Path]:
    found = find_pids_hierarchy()
    if not isinstance(found, PidsHierarchy):
        return []
    return sorted(found.base.glob(f"io-{os.getpid()}-*"))


def processes_with(token: str) -> list[psutil.Process]:
    alive = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if token in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            alive.append(proc)
    return alive


def gone_soon(token: str, seconds: float = 5.0) -> bool:
    """Poll until no live process carries `token` (SIGKILL lands asynchronously)."""
    deadline = time.monotonic() + seconds
    while processes_with(token):
        if time.monotonic() > deadline:
            return False
    return True


@pytest.mark.parametrize("backend", ["native", "floor"])
def test_a_fork_bomb_is_bounded_by_the_pids_cgroup(
    sandbox: Sandbox, backend: str, request: pytest.FixtureRequest
) -> None:
    selected: Selected = request.getfixturevalue(f"{backend}_with_pids")
    result = sandbox.run(selected, FORK_BOMB, args=["500"], limits=SandboxLimits(max_processes=24))
    made = int(result.stdout)
    assert 0 < made <= 24
    # The host is unharmed: it can still start processes, and nothing is left behind.
    assert subprocess.run(["true"], check=False).returncode == 0
    assert our_cgroups() == []
    assert gone_soon(str(sandbox.workdir / "payload.py"))


def test_a_fork_bomb_outside_the_sandbox_is_not_bounded(sandbox: Sandbox, off: Selected) -> None:
    result = sandbox.run(off, FORK_BOMB, args=["60"])
    assert int(result.stdout) == 60  # the payload's own cap, far above max_processes
    assert gone_soon(str(sandbox.workdir / "payload.py"))


MEMORY_BOMB = """
block = bytearray(384 * 1024 * 1024)  # zero-filled, so every page is touched
print("allocated", flush=True)
"""


def test_a_memory_bomb_fails_to_allocate(sandbox: Sandbox, native: Selected, off: Selected) -> None:
    inside = sandbox.run(native, MEMORY_BOMB, limits=SandboxLimits(memory_mb=256))
    assert inside.exit_status != 0
    assert b"allocated" not in inside.stdout
    assert b"MemoryError" in inside.stderr or inside.exit_status == 137
    assert sandbox.run(off, MEMORY_BOMB).stdout == b"allocated\n"


SPIN = "while True:\n    pass\n"
BOUNDED_SPIN = """
import time
while time.process_time() < 1.5:
    pass
print("done")
"""


def test_a_cpu_spin_dies_at_the_cpu_limit(
    sandbox: Sandbox, native: Selected, off: Selected
) -> None:
    started = time.monotonic()
    inside = sandbox.run(native, SPIN, limits=SandboxLimits(cpu_seconds=1), timeout=60)
    assert not inside.timed_out
    # SIGXCPU at the soft limit, SIGKILL at the hard one a second later.
    assert inside.exit_status in (128 + 24, 128 + 9)
    assert time.monotonic() - started < 30
    # Control: spending more than a second of CPU is fine without the limit.
    assert sandbox.run(off, BOUNDED_SPIN).stdout == b"done\n"


ESCAPE = """
import os, sys, time
marker, token = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        code = "import sys, time; open(sys.argv[1], 'w').close(); time.sleep(120)"
        os.execv(sys.executable, [sys.executable, "-c", code, marker, token])
    os._exit(0)
os.wait()
while not os.path.exists(marker):
    time.sleep(0.01)
print("grandchild up", flush=True)
time.sleep(120)
"""


@pytest.fixture
def token() -> Iterator[str]:
    value = f"io-escape-{uuid.uuid4().hex}"
    try:
        yield value
    finally:
        for proc in processes_with(value):  # only the control leaves one behind
            proc.kill()


@pytest.mark.parametrize("backend", ["native", "floor"])
def test_the_wall_clock_kills_a_grandchild_that_left_its_parent(
    sandbox: Sandbox, backend: str, token: str, request: pytest.FixtureRequest
) -> None:
    selected: Selected = request.getfixturevalue(
        "native" if backend == "native" else "floor_with_pids"
    )
    marker = sandbox.workdir / "grandchild-started"
    result = sandbox.run(selected, ESCAPE, args=[str(marker), token], timeout=2)
    assert result.timed_out
    assert result.stdout == b"grandchild up\n"
    assert marker.exists()
    assert gone_soon(token)


def test_without_the_cgroup_the_escaped_grandchild_survives(
    sandbox: Sandbox, off: Selected, token: str
) -> None:
    marker = sandbox.workdir / "grandchild-started"
    result = sandbox.run(off, ESCAPE, args=[str(marker), token], timeout=2)
    assert result.timed_out and marker.exists()
    assert processes_with(token), "the payload must really escape a process-group kill"


def test_floor_is_selected_and_runs_when_bwrap_is_not_on_path(tmp_path: Path) -> None:
    no_bwrap = tmp_path / "bin"
    no_bwrap.mkdir()
    (no_bwrap / "true").symlink_to("/bin/true")
    selected = select(SandboxConfig(), env={"PATH": str(no_bwrap)})
    assert selected.backend is Backend.FLOOR
    assert selected.degraded == "bwrap (bubblewrap) is not on PATH"
    spec = SandboxSpec(workdir=tmp_path, env={"PATH": HOST_PATH})
    result = run_command(
        launcher(selected, spec),
        LaunchRequest(argv=[sys.executable, "-c", "print('ran')"], cwd=tmp_path),
    )
    assert result.stdout == b"ran\n"


def test_native_is_refused_when_bwrap_is_not_on_path(tmp_path: Path) -> None:
    from harness_core.errors import SandboxUnavailable

    with pytest.raises(SandboxUnavailable):
        select(SandboxConfig(backend=BackendChoice.NATIVE), env={"PATH": str(tmp_path)})


RLIMITS = """
import resource as r
print(r.getrlimit(r.RLIMIT_AS)[0] // 2**20, r.getrlimit(r.RLIMIT_CPU), r.getrlimit(r.RLIMIT_NOFILE),
      r.getrlimit(r.RLIMIT_CORE))
"""


def test_native_applies_rlimits_to_the_payload(sandbox: Sandbox, native: Selected) -> None:
    limits = SandboxLimits(memory_mb=512, cpu_seconds=7, open_files=77)
    assert sandbox.run(native, RLIMITS, limits=limits).stdout == b"512 (7, 8) (77, 77) (0, 0)\n"
