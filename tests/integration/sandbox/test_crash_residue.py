"""After `kill -9` of `io` mid-step under the native sandbox, the workspace is as the
agent left it once the next `io` command has run (#22).

The sandbox covers each missing protected path (`.git`, `.gitmodules`, `io.local.toml`)
with a placeholder whose mount point lives in the workspace. A real `io run` (scripted
provider) is killed with SIGKILL while its command (`sleep N`) runs; the placeholders are
there then (the precondition the old code never cleaned up), and gone after the next
`io runs` or `io resume`. What is not the placeholder io made (content written into
it, a file made there again, an entry in the directory) is kept.
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

from harness_core.sandbox import Selected
from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import replay_line

PLACEHOLDERS = (".git", ".gitmodules", "io.local.toml")


def _sleeping(seconds: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if cmdline[-2:] == ["sleep", seconds] or cmdline == ["/usr/bin/sleep", seconds]:
            found.append(process)
    return found


@pytest.fixture
def seconds() -> Iterator[str]:
    picked = str(random.randint(40000, 90000))
    yield picked
    for process in _sleeping(picked):
        with contextlib.suppress(psutil.Error):
            process.kill()


def _start_and_kill(tmp_path: Path, seconds: str) -> tuple[Path, str, dict[str, str]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n\n'
        '[policy]\ntier = "full"\n\n[sandbox]\nbackend = "native"\n')
    (ws / "replay.jsonl").write_text("\n".join([
        replay_line("block", ("exec", {"argv": ["sleep", seconds], "timeout_seconds": 600})),
        replay_line("done"),
    ]) + "\n")
    env = {**os.environ, "IO_STORE": str(tmp_path / "state.db")}
    io = subprocess.Popen([*io_cmd(), "run", "leave no trace", "--json"], cwd=ws, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not _sleeping(seconds):
            assert time.monotonic() < deadline and io.poll() is None, "the step never started"
            time.sleep(0.05)
    finally:
        io.send_signal(signal.SIGKILL)
        out, _ = io.communicate(timeout=30)
    run_id = json.loads(out.decode().splitlines()[0])["run_id"]
    # The precondition: io died with its placeholders in the workspace.
    assert (ws / ".git").is_dir() and not any((ws / ".git").iterdir())
    for name in (".gitmodules", "io.local.toml"):
        assert (ws / name).is_file() and (ws / name).stat().st_size == 0
    return ws, run_id, {"IO_STORE": env["IO_STORE"]}


def _alive(process: psutil.Process) -> bool:
    """Whether `process` still runs (one that ended between the listing and this
    look is gone, not an error)."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for_sandbox_gone(seconds: str) -> None:
    deadline = time.monotonic() + 10
    while [p for p in _sleeping(seconds) if _alive(p)]:
        assert time.monotonic() < deadline, "the sandbox outlived io"
        time.sleep(0.05)


def test_the_next_io_command_removes_the_placeholders_of_a_killed_run(
    tmp_path: Path, native: Selected, seconds: str
) -> None:
    ws, _, env = _start_and_kill(tmp_path, seconds)
    _wait_for_sandbox_gone(seconds)
    result = run_io(["runs"], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in ws.iterdir()) == ["io.toml", "replay.jsonl"]
    # The ledger folder is per user, shared by every io on the machine: under a parallel
    # suite another io's start may sweep this dead run first (then it says so, not us).
    # Alone, this command removes them and says so (checked with -n 0).


def test_resume_removes_the_placeholders_and_finishes_the_run(
    tmp_path: Path, native: Selected, seconds: str
) -> None:
    ws, run_id, env = _start_and_kill(tmp_path, seconds)
    result = run_io(["resume", run_id, "--json"], cwd=ws, env=env)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in ws.iterdir()) == ["io.toml", "replay.jsonl"]


def test_what_is_not_the_placeholder_io_made_is_kept(
    tmp_path: Path, native: Selected, seconds: str
) -> None:
    ws, _, env = _start_and_kill(tmp_path, seconds)
    _wait_for_sandbox_gone(seconds)
    (ws / ".gitmodules").write_text("[submodule]\n")  # content written after the crash
    (ws / "io.local.toml").unlink()
    (ws / "io.local.toml").touch()  # empty, but another file than the one io made
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # an entry in the directory
    result = run_io(["runs"], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert (ws / ".gitmodules").read_text() == "[submodule]\n"
    assert (ws / "io.local.toml").is_file()
    assert (ws / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    # A later command does not come back for them either.
    assert run_io(["runs"], cwd=tmp_path, env=env).returncode == 0
    assert (ws / "io.local.toml").is_file() and (ws / ".git" / "HEAD").is_file()


def test_a_run_that_ends_normally_leaves_no_placeholders(
    tmp_path: Path, native: Selected
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n\n'
        '[policy]\ntier = "full"\n\n[sandbox]\nbackend = "native"\n')
    (ws / "replay.jsonl").write_text("\n".join([
        replay_line("probe", ("exec", {"argv": ["sh", "-c", "echo > .gitmodules; ls -a"]})),
        replay_line("done"),
    ]) + "\n")
    result = run_io(["run", "touch nothing", "--json"], cwd=ws,
                    env={"IO_STORE": str(tmp_path / "state.db")})
    assert result.returncode == 0, result.stderr
    assert "Read-only file system" in result.stdout or "Permission denied" in result.stdout
    assert sorted(p.name for p in ws.iterdir()) == ["io.toml", "replay.jsonl"]
