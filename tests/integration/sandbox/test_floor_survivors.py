"""Under the floor backend, what a `kill -9`ed `io` left running is ended by the next
`io`, even without a pids cgroup and after a descendant cleared its environment (#22).

`io` runs in a mount namespace where `/sys/fs/cgroup` is an empty tmpfs, so the floor
gets no pids cgroup (as on a host where io is not root) and only the ledger can name
what it started:

- children of a handle and of an `exec` that call `setsid()` and execute `sleep` with
  an empty environment (no `IO_RUN_TOKEN`): they left the command's session and group,
  so only the escapee record io wrote while sampling the command's tree names them;
- children of both that call `setpgid(0, 0)` and clear their environment: they left the
  group but not the session, so only the session walk finds them.

Both survive the kill (the precondition, and what the old sweep left running); the
next `io resume` ends them. An unrelated process started meanwhile in a session of its
own survives (the negative control). A leftover that may not be signalled (it changed
to another user, and the next `io` runs in a user namespace without the right to signal
it) is reported as not ended, by the command and by `io trace`.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from harness_core import Store
from harness_core.sandbox._ledger import ledger_folder, read_ledger
from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import replay_line

ESCAPE = """
import os, sys
session_child, group_child, parent = sys.argv[1:4]
for seconds, leave in ((session_child, os.setsid), (group_child, lambda: os.setpgid(0, 0))):
    if os.fork() == 0:
        leave()
        os.execve("/bin/sleep", ["sleep", seconds], {})
os.execvp("sleep", ["sleep", parent])
"""


def _sleepers(numbers: list[str]) -> dict[str, psutil.Process]:
    found: dict[str, psutil.Process] = {}
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if len(cmdline) == 2 and cmdline[0].rpartition("/")[2] == "sleep" \
                and cmdline[1] in numbers:
            with contextlib.suppress(psutil.Error):
                if process.status() != psutil.STATUS_ZOMBIE:
                    found[cmdline[1]] = process
    return found


def _wait_until(numbers: list[str], present: bool, timeout: float = 60) -> None:
    """Until a `sleep N` runs for every N (present), or for none (not present)."""
    deadline = time.monotonic() + timeout
    while True:
        running = set(_sleepers(numbers))
        if (running == set(numbers)) if present else not running:
            return
        assert time.monotonic() < deadline, (numbers, present, sorted(running))
        time.sleep(0.05)


@pytest.fixture
def numbers() -> Iterator[list[str]]:
    picked = [str(random.randint(40000, 90000) * 10 + i) for i in range(6)]
    yield picked
    for process in _sleepers(picked).values():
        with contextlib.suppress(psutil.Error):
            process.kill()


@pytest.fixture
def no_cgroup() -> list[str]:
    """The prefix that runs `io` where the floor finds no pids cgroup."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        pytest.skip("needs Linux and unshare (util-linux)")
    prefix = ["unshare", "--mount", "sh", "-c",
              'mount -t tmpfs none /sys/fs/cgroup && exec "$@"', "sh"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot hide the cgroup hierarchy here: {probe.stderr.strip()}")
    return prefix


def _wait_until_recorded(io_pid: int, numbers: list[str], timeout: float = 60) -> None:
    """Until io's ledger names each escapee `sleep N` (io sampled it while it ran)."""
    ledger = ledger_folder() / f"io-{io_pid}.json"
    deadline = time.monotonic() + timeout
    while True:
        escapees = {p.pid for p in _sleepers(numbers).values()}
        with contextlib.suppress(OSError):
            data = read_ledger(ledger.read_text())
            seen = {entry["pid"] for entry in data["seen"]} if data is not None else set()
            if len(escapees) == len(numbers) and escapees <= seen:
                return
        assert time.monotonic() < deadline, f"io never recorded {numbers}"
        time.sleep(0.05)


def _launchers(io_pid: int) -> list[psutil.Process]:
    """The floor's resident launchers `io` started (`python -I -S -c SOURCE ...`)."""
    return [child for child in psutil.Process(io_pid).children()
            if child.cmdline()[1:4] == ["-I", "-S", "-c"]]


def _start_and_kill(tmp_path: Path, prefix: list[str], lines: list[str],
                    waiting_for: list[str], recorded: list[str] | None = None, *,
                    with_launcher: bool = True) -> tuple[Path, str, dict[str, str]]:
    """Start `io run` under the floor, wait for the sleepers, then kill -9 io (and,
    `with_launcher`, its resident launcher too, which would otherwise end them: what is
    left is then the next io's to sweep)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "escape.py").write_text(ESCAPE)
    (ws / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n\n'
        '[policy]\ntier = "full"\n\n[sandbox]\nbackend = "floor"\n')
    (ws / "replay.jsonl").write_text("\n".join([*lines, replay_line("done")]) + "\n")
    env = {**os.environ, "IO_STORE": str(tmp_path / "state.db")}
    io = subprocess.Popen([*prefix, *io_cmd(), "run", "leave nothing", "--json"], cwd=ws,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_until(waiting_for, present=True)
        if recorded:
            _wait_until_recorded(io.pid, recorded)
    finally:
        launchers = _launchers(io.pid) if with_launcher else []
        io.send_signal(signal.SIGKILL)
        for launcher in launchers:
            with contextlib.suppress(psutil.Error):
                launcher.kill()
        out, err = io.communicate(timeout=30)
    run_id = json.loads(out.decode().splitlines()[0])["run_id"]
    return ws, run_id, {"IO_STORE": env["IO_STORE"]}


def test_escapees_a_killed_io_and_launcher_left_under_the_floor_are_ended_by_the_next_io(
    tmp_path: Path, no_cgroup: list[str], numbers: list[str]
) -> None:
    handle_session, handle_group, handle, exec_session, exec_group, blocker = numbers
    _, run_id, env = _start_and_kill(tmp_path, no_cgroup, [
        replay_line("start", ("shell_start", {
            "line": f"python3 escape.py {handle_session} {handle_group} {handle}"})),
        replay_line("block", ("exec", {
            "argv": ["python3", "escape.py", exec_session, exec_group, blocker],
            "timeout_seconds": 600})),
    ], waiting_for=numbers, recorded=[handle_session, exec_session])
    # The negative control: started after io, in a session of its own, not io's.
    unrelated = str(int(blocker) + 7)
    other = subprocess.Popen(["sleep", unrelated], start_new_session=True, env={})
    escapees = [handle_session, handle_group, exec_session, exec_group]
    try:
        left = _sleepers(escapees)
        assert len(left) == 4  # the precondition: the escapees outlived io
        for process in left.values():
            assert os.getpgid(process.pid) == process.pid  # it left its command's group
            assert b"IO_RUN_TOKEN" not in Path(f"/proc/{process.pid}/environ").read_bytes()

        result = run_io(["resume", run_id, "--json"], cwd=tmp_path / "ws", env=env)
        assert "swept" in result.stderr, result.stderr
        _wait_until(numbers, present=False)
        assert other.poll() is None  # not io's: never signalled
    finally:
        other.kill()
        other.wait()
    with Store(tmp_path / "state.db") as store:
        killed = {k["pid"] for s in store.sweeps(run_id) for k in s["killed"] if k["ended"]}
    assert {p.pid for p in left.values()} <= killed


def test_a_leftover_that_cannot_be_signalled_is_reported_as_not_ended(
    tmp_path: Path, no_cgroup: list[str], numbers: list[str]
) -> None:
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to leave a process of another user")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "true"])
    if probe.returncode != 0:
        pytest.skip("the kernel refuses user namespaces here")
    other_user, blocker = numbers[0], numbers[1]
    _, run_id, env = _start_and_kill(tmp_path, no_cgroup, [
        replay_line("start", ("shell_start", {
            "line": f"setpriv --reuid 65534 --regid 65534 --clear-groups sleep {other_user}"})),
        replay_line("block", ("exec", {"argv": ["sleep", blocker], "timeout_seconds": 600})),
    ], waiting_for=[other_user, blocker])
    # In a user namespace the next io keeps its uid but may not signal another user's
    # process outside it.
    result = subprocess.run(["unshare", "--user", "--map-root-user", *io_cmd(), "runs"],
                            capture_output=True, text=True, env={**os.environ, **env},
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "could not end" in result.stderr and "sleep" in result.stderr, result.stderr
    _wait_until([blocker], present=False)
    assert other_user in _sleepers([other_user])  # it is still there: the report is true
    trace = run_io(["trace", run_id], env=env)
    assert trace.returncode == 0, trace.stderr
    assert "could not end" in trace.stdout and "cannot be signalled" in trace.stdout


def test_the_floor_launcher_ends_everything_when_io_is_killed(
    tmp_path: Path, no_cgroup: list[str], numbers: list[str]
) -> None:
    """A handle and an `exec` whose children leave their session and group and are
    orphaned at once, before io could sample them (the docs called them a limit), die
    with io: the floor's launcher adopts them and ends them all when io is killed, with
    no next io needed (#35). An unrelated process in a session of its own survives."""
    handle_session, handle_group, handle, exec_session, exec_group, blocker = numbers
    unrelated = str(int(blocker) + 7)
    other = subprocess.Popen(["sleep", unrelated], start_new_session=True, env={})
    try:
        _start_and_kill(tmp_path, no_cgroup, [
            replay_line("start", ("shell_start", {
                "line": f"python3 escape.py {handle_session} {handle_group} {handle}"})),
            replay_line("block", ("exec", {
                "argv": ["python3", "escape.py", exec_session, exec_group, blocker],
                "timeout_seconds": 600})),
        ], waiting_for=numbers, with_launcher=False)
        _wait_until(numbers, present=False)
        assert other.poll() is None  # not io's: never signalled
    finally:
        other.kill()
        other.wait()
