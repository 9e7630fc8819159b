"""`run_command` over the unconfined and floor launchers: output, stdin, exit status, clocks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness_core.errors import ToolError
from harness_core.sandbox import (
    BackendChoice,
    LaunchRequest,
    SandboxConfig,
    SandboxLimits,
    SandboxSpec,
    launcher,
    run_command,
    select,
)
from harness_core.sandbox._base import ProcessLauncher

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SECRET_TOKEN": "s3cret"}


def make(
    tmp_path: Path, backend: BackendChoice = BackendChoice.OFF, limits: SandboxLimits | None = None
) -> ProcessLauncher:
    limits = limits or SandboxLimits()
    selected = select(SandboxConfig(backend=backend, limits=limits), env=ENV)
    return launcher(selected, SandboxSpec(workdir=tmp_path, limits=limits, env=ENV))


def py(tmp_path: Path, code: str) -> LaunchRequest:
    return LaunchRequest(argv=[sys.executable, "-c", code], cwd=tmp_path)


def test_output_and_exit_status_are_captured(tmp_path: Path) -> None:
    result = run_command(
        make(tmp_path),
        py(tmp_path, "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"),
    )
    assert (result.exit_status, result.stdout, result.stderr) == (3, b"out\n", b"err\n")
    assert not result.timed_out and result.truncated_bytes == 0


def test_stdin_data_is_fed_and_closed(tmp_path: Path) -> None:
    data = b"x" * 300_000  # larger than a pipe buffer
    result = run_command(
        make(tmp_path),
        py(tmp_path, "import sys; print(len(sys.stdin.buffer.read()))"),
        stdin_data=data,
    )
    assert result.stdout == b"300000\n"


def test_stdin_defaults_to_devnull(tmp_path: Path) -> None:
    result = run_command(make(tmp_path), py(tmp_path, "import sys; print(repr(sys.stdin.read()))"))
    assert result.stdout == b"''\n"


def test_output_beyond_the_cap_is_counted_not_kept(tmp_path: Path) -> None:
    result = run_command(
        make(tmp_path),
        py(tmp_path, "import sys; sys.stdout.write('a' * 5000); sys.stderr.write('b' * 3000)"),
        max_output=1000,
    )
    assert result.stdout == b"a" * 1000 and result.stderr == b"b" * 1000
    assert result.truncated_bytes == 4000 + 2000


def test_merged_stderr_lands_in_stdout(tmp_path: Path) -> None:
    request = LaunchRequest(
        argv=[sys.executable, "-c", "import sys; print('e', file=sys.stderr)"],
        cwd=tmp_path,
        stderr=subprocess.STDOUT,
    )
    result = run_command(make(tmp_path), request)
    assert result.stdout == b"e\n" and result.stderr == b""


def test_death_by_signal_reads_as_128_plus_the_signal(tmp_path: Path) -> None:
    result = run_command(
        make(tmp_path), py(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    )
    assert result.exit_status == 137


def test_timeout_kills_the_command_and_says_so(tmp_path: Path) -> None:
    result = run_command(
        make(tmp_path),
        py(tmp_path, "import time; print('started', flush=True); time.sleep(60)"),
        timeout=0.5,
    )
    assert result.timed_out
    assert result.exit_status == 137
    assert result.stdout == b"started\n"


def test_wall_seconds_caps_a_longer_timeout(tmp_path: Path) -> None:
    fast = make(tmp_path, limits=SandboxLimits(wall_seconds=0.5))
    result = run_command(fast, py(tmp_path, "import time; time.sleep(60)"), timeout=600)
    assert result.timed_out


def test_a_background_child_holding_the_pipes_is_killed_when_the_command_ends(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "child.pid"
    (tmp_path / "child.py").write_text(
        "import os, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(60)\n"
    )
    (tmp_path / "parent.py").write_text(
        "import os, subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, 'child.py'])\n"
        f"while not os.path.exists({str(pid_file)!r}): time.sleep(0.01)\n"
        "print('parent done')\n"
    )
    result = run_command(
        make(tmp_path), LaunchRequest(argv=[sys.executable, "parent.py"], cwd=tmp_path), timeout=30
    )
    assert result.stdout == b"parent done\n"
    assert not result.timed_out
    assert is_gone_soon(int(pid_file.read_text()))


def is_gone_soon(pid: int, seconds: float = 5.0) -> bool:
    """Poll until `pid` is dead or a zombie (SIGKILL is delivered asynchronously)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
    return False


def test_environment_is_scrubbed_even_when_off(tmp_path: Path) -> None:
    result = run_command(make(tmp_path), py(tmp_path, "import os; print(sorted(os.environ))"))
    assert b"SECRET_TOKEN" not in result.stdout
    assert b"PATH" in result.stdout


def test_child_leads_its_own_session(tmp_path: Path) -> None:
    result = run_command(
        make(tmp_path), py(tmp_path, "import os; print(os.getsid(0) == os.getpid())")
    )
    assert result.stdout == b"True\n"


def test_floor_applies_rlimits_in_the_child(tmp_path: Path) -> None:
    limits = SandboxLimits(memory_mb=512, cpu_seconds=7, open_files=77)
    code = (
        "import resource as r; print(r.getrlimit(r.RLIMIT_AS)[0] // 2**20, "
        "r.getrlimit(r.RLIMIT_CPU), r.getrlimit(r.RLIMIT_NOFILE), r.getrlimit(r.RLIMIT_CORE))"
    )
    result = run_command(make(tmp_path, BackendChoice.FLOOR, limits), py(tmp_path, code))
    assert result.stdout == b"512 (7, 8) (77, 77) (0, 0)\n"


def test_unknown_program_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="program not found on PATH: no-such-program-io"):
        run_command(make(tmp_path), LaunchRequest(argv=["no-such-program-io"], cwd=tmp_path))


def test_missing_working_directory_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="working directory does not exist"):
        run_command(make(tmp_path), LaunchRequest(argv=["true"], cwd=tmp_path / "gone"))
