"""One sandbox per run: commands start inside a resident launcher (issue 9, "Speed").

Real bwrap, real cgroups, real processes. The launcher protocol is exercised with odd
argv bytes, a huge environment, a command that never reads its stdin, one that closes
its fds, one killed by its timeout, and a launcher that crashes under a run. The read
masks follow the workspace: a denied file planted after the first command is hidden
from the second (a fresh sandbox; `off` is the negative control). After `kill -9` of
the `io` that started it, no launcher is left once the next `io` has started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from harness_core import Policy, RunSpec, TaskContract, Workspace, build_launchers
from harness_core.errors import SandboxUnavailable
from harness_core.policy import ActKind, Effect, Rule
from harness_core.sandbox import (
    BackendChoice,
    LaunchRequest,
    ProcessLauncher,
    SandboxConfig,
    SandboxSpec,
    Selected,
    launcher,
    run_command,
)
from tests.conftest import run_io
from tests.integration.sandbox.conftest import HOST_PATH

BACKENDS = ["native_with_pids", "floor_with_pids"]


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture
def made(tmp_path: Path) -> Iterator[Callable[..., ProcessLauncher]]:
    """Builds launchers on a workdir and closes every one at the end."""
    built: list[ProcessLauncher] = []
    workdir = tmp_path / "ws"
    workdir.mkdir()

    def make(selected: Selected, **spec: object) -> ProcessLauncher:
        env = spec.pop("env", {"PATH": HOST_PATH})
        one = launcher(selected, SandboxSpec(workdir=workdir, env=env, **spec))  # type: ignore[arg-type]
        built.append(one)
        return one

    make.workdir = workdir  # type: ignore[attr-defined]  # the commands' cwd (not the
    # checkout's: a checkout under /tmp is hidden inside the sandbox)
    try:
        yield make
    finally:
        for one in built:
            getattr(one, "close", lambda: None)()


def _resident_pid(used: ProcessLauncher) -> int:
    current = getattr(used, "_current", None)
    assert current is not None, "no resident sandbox was started"
    return int(current.process.pid)


@pytest.mark.parametrize("backend", BACKENDS)
def test_odd_argv_bytes_arrive_exactly(
    made: Callable[..., ProcessLauncher], backend: str, request: pytest.FixtureRequest
) -> None:
    used = made(request.getfixturevalue(backend))
    odd = ["", " two words ", "new\nline", "tab\t", "$HOME", "'\"", os.fsdecode(b"\xff\xfe-not-utf8"),
           "é✓", "-", "--"]
    result = run_command(used, LaunchRequest(argv=["printf", "%s\\0", *odd], cwd=made.workdir))
    assert result.exit_status == 0, result.stderr
    assert result.stdout.split(b"\0")[:-1] == [os.fsencode(a) for a in odd]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_huge_environment_arrives_whole(
    made: Callable[..., ProcessLauncher], backend: str, request: pytest.FixtureRequest
) -> None:
    names = [f"BIG_{i}" for i in range(100)]
    env = {"PATH": HOST_PATH, **{n: chr(65 + i % 26) * 10_000 for i, n in enumerate(names)}}
    used = made(request.getfixturevalue(backend), env=env, env_allow=tuple(names))
    result = run_command(used, LaunchRequest(argv=["env"], cwd=made.workdir))
    assert result.exit_status == 0
    seen = dict(line.split("=", 1) for line in result.stdout.decode().splitlines() if "=" in line)
    assert all(seen[n] == env[n] for n in names)  # 1 MB of environment, each byte there


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_command_that_never_reads_stdin_ends(
    made: Callable[..., ProcessLauncher], backend: str, request: pytest.FixtureRequest
) -> None:
    used = made(request.getfixturevalue(backend))
    result = run_command(used, LaunchRequest(argv=["true"], cwd=made.workdir),
                         stdin_data=b"x" * 4_000_000, timeout=30)
    assert (result.exit_status, result.timed_out) == (0, False)
    echoed = run_command(used, LaunchRequest(argv=["wc", "-c"], cwd=made.workdir),
                         stdin_data=b"y" * 3_000_000, timeout=30)
    assert echoed.stdout.strip() == b"3000000"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_command_that_closes_its_fds_still_reports_its_status(
    made: Callable[..., ProcessLauncher], backend: str, request: pytest.FixtureRequest
) -> None:
    used = made(request.getfixturevalue(backend))
    line = "exec <&- >&- 2>&-; sleep 0.3; exit 7"
    result = run_command(used, LaunchRequest(argv=["sh", "-c", line], cwd=made.workdir), timeout=30)
    assert (result.exit_status, result.stdout, result.stderr, result.timed_out) == (7, b"", b"", False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_timeout_kills_the_command_its_group_and_its_cgroup(
    made: Callable[..., ProcessLauncher], backend: str, request: pytest.FixtureRequest
) -> None:
    used = made(request.getfixturevalue(backend))
    marker = f"{os.getpid()}{time.monotonic_ns() % 100000}"
    line = f"sleep 6{marker} & setsid sleep 7{marker} & echo started; wait"
    started = time.monotonic()
    result = run_command(used, LaunchRequest(argv=["sh", "-c", line], cwd=made.workdir), timeout=1.0)
    assert result.timed_out and result.exit_status == 137
    assert time.monotonic() - started < 15
    left = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
    assert wait_for(lambda: all(_ended(p) for p in left))
    # The sandbox is still there for the next command.
    again = run_command(used, LaunchRequest(argv=["echo", "next"], cwd=made.workdir))
    assert again.stdout == b"next\n"


def _launcher_process(used: ProcessLauncher) -> psutil.Process:
    """The resident launcher (the python running the launcher source) of `used`."""
    host = psutil.Process(_resident_pid(used))
    for candidate in [host, *host.children(recursive=True)]:
        cmdline = candidate.cmdline()
        if "-c" in cmdline and any("resident launcher" in part or "forks the processes" in part
                                   for part in cmdline):
            if candidate.ppid() == host.pid or candidate is host or "bwrap" in host.name():
                return candidate
    raise AssertionError("no launcher process found")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_crashed_launcher_costs_one_clear_error_then_a_fresh_sandbox(
    made: Callable[..., ProcessLauncher], backend: str, request: pytest.FixtureRequest
) -> None:
    used = made(request.getfixturevalue(backend))
    first = run_command(used, LaunchRequest(argv=["true"], cwd=made.workdir))
    assert first.exit_status == 0
    old_host = _resident_pid(used)
    victim = _launcher_process(used)
    victim.send_signal(signal.SIGKILL)
    assert wait_for(lambda: _ended(victim))
    started = time.monotonic()
    with pytest.raises(SandboxUnavailable, match="launcher"):
        run_command(used, LaunchRequest(argv=["true"], cwd=made.workdir))
    assert time.monotonic() - started < 30  # an error, never a hang
    again = run_command(used, LaunchRequest(argv=["echo", "fresh"], cwd=made.workdir))
    assert again.stdout == b"fresh\n"
    assert _resident_pid(used) != old_host


def _spec(root: Path, backend: BackendChoice) -> RunSpec:
    return RunSpec(
        workspace=Workspace(root),
        contract=TaskContract(goal="resident"),
        policy=Policy(tier="full", rules=(Rule(Effect.DENY, ActKind.READ, "secrets/**", "project"),
                                          Rule(Effect.DENY, ActKind.READ, "*.pem", "project"))),
        sandbox=SandboxConfig(backend=backend),
        env={"PATH": HOST_PATH, "HOME": os.environ.get("HOME", "/")},
        store_path=root.parent / "state.db",
    )


@pytest.mark.parametrize("backend", ["native", "off"])
def test_a_denied_file_planted_after_the_first_command_is_hidden_from_the_next(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "native":
        request.getfixturevalue("native")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("public\n")
    built = build_launchers(_spec(root, BackendChoice(backend)))
    try:
        cat = LaunchRequest(argv=["cat", "notes.txt"], cwd=root)
        assert run_command(built.commands, cat).stdout == b"public\n"
        reused = getattr(built.commands, "_current", None)
        assert run_command(built.commands, cat).stdout == b"public\n"
        assert getattr(built.commands, "_current", None) is reused  # nothing changed: reused
        (root / "secrets").mkdir()
        (root / "secrets" / "new.env").write_text("TOKEN=planted\n")
        leaked = run_command(built.commands, LaunchRequest(argv=["cat", "secrets/new.env"], cwd=root))
        if backend == "off":  # the negative control: nothing masks it
            assert leaked.stdout == b"TOKEN=planted\n"
            return
        assert b"planted" not in leaked.stdout and leaked.exit_status != 0
        assert getattr(built.commands, "_current", None) is not reused  # a fresh sandbox
    finally:
        built.close()


def test_a_masked_file_replaced_on_the_host_stays_hidden(tmp_path: Path, native: Selected) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "key.pem").write_text("old secret\n")
    built = build_launchers(_spec(root, BackendChoice.NATIVE))
    try:
        read = LaunchRequest(argv=["cat", "key.pem"], cwd=root)
        assert b"secret" not in run_command(built.commands, read).stdout
        # A rename over the masked file detaches the mount in a running sandbox.
        (root / "fresh.pem.tmp").write_text("new secret\n")
        os.replace(root / "fresh.pem.tmp", root / "key.pem")
        assert b"secret" not in run_command(built.commands, read).stdout
    finally:
        built.close()


@pytest.mark.parametrize("backend", ["native", "floor"])
def test_no_launcher_outlives_a_killed_io_once_the_next_io_starts(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "native":
        request.getfixturevalue("native")
    root = tmp_path / "ws"
    root.mkdir()
    script = tmp_path / "fake_io.py"
    script.write_text(
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from harness_core import Policy, RunSpec, TaskContract, Workspace, build_launchers\n"
        "from harness_core.sandbox import BackendChoice, LaunchRequest, SandboxConfig, "
        "activate_ledger, run_command\n"
        "ledger = activate_ledger()\n"
        f"root = Path({str(root)!r})\n"
        "spec = RunSpec(workspace=Workspace(root), contract=TaskContract(goal='g'),\n"
        "               policy=Policy(tier='full'),\n"
        f"               sandbox=SandboxConfig(backend=BackendChoice({backend!r})),\n"
        "               env={'PATH': os.environ['PATH'], 'HOME': os.environ.get('HOME', '/')})\n"
        "built = build_launchers(spec)\n"
        "run_command(built.commands, LaunchRequest(argv=['true'], cwd=root))\n"
        "print(ledger.token, flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, env=env) as fake:
        assert fake.stdout is not None
        token = fake.stdout.readline().decode().strip()
        assert token
        launchers = _tokened(token)
        assert launchers, "the resident launcher should be running"
        fake.send_signal(signal.SIGKILL)
    result = run_io(["runs"], cwd=tmp_path, env={"IO_STORE": str(tmp_path / "state.db")})
    assert result.returncode == 0, result.stderr
    assert wait_for(lambda: _tokened(token) == [])


def _tokened(token: str) -> list[psutil.Process]:
    """Live processes whose environment carries this ledger token (launcher, spares)."""
    needle = f"IO_RUN_TOKEN={token}".encode()
    found = []
    for process in psutil.process_iter():
        try:
            with open(f"/proc/{process.pid}/environ", "rb") as handle:
                if needle in handle.read().split(b"\0") and process.status() != "zombie":
                    found.append(process)
        except (OSError, psutil.Error):
            continue
    return found


def test_commands_of_one_sandbox_share_its_tmp(made: Callable[..., ProcessLauncher],
                                                native: Selected) -> None:
    used = made(native)
    wrote = run_command(used, LaunchRequest(argv=["sh", "-c", "echo kept > /tmp/io-note"],
                                            cwd=made.workdir))
    assert wrote.exit_status == 0
    read = run_command(used, LaunchRequest(argv=["cat", "/tmp/io-note"], cwd=made.workdir))
    assert read.stdout == b"kept\n"  # the run's sandbox, not one per command
    assert not Path("/tmp/io-note").exists()  # still its private /tmp, not the host's


def test_a_placeholder_the_host_fills_is_bound_for_the_next_command(
    tmp_path: Path, native: Selected
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    built = build_launchers(_spec(root, BackendChoice.NATIVE))
    try:
        probe = LaunchRequest(argv=["sh", "-c", "ls -A .git | wc -l"], cwd=root)
        assert run_command(built.commands, probe).stdout.strip() == b"0"  # an empty placeholder
        subprocess.run(["git", "init", "-q", str(root)], check=True)  # the host's git tool
        assert int(run_command(built.commands, probe).stdout.strip()) > 0
        hooks = run_command(built.commands, LaunchRequest(
            argv=["sh", "-c", "echo x > .git/hooks/pre-commit"], cwd=root))
        assert hooks.exit_status != 0  # and .git/hooks is read-only in the fresh sandbox
    finally:
        built.close()


def _ended(process: psutil.Process) -> bool:
    """Gone or a zombie (one that ends between two looks is not an error)."""
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
