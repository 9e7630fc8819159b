"""Hooks across a kill -9 of a real runner: a pre_tool hook that allowed a call is not
asked again when the resumed run reaches that call, and a post_tool hook runs at most
once per call even when the runner died while it ran."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness_core import Store
from tests.integration.agents.tree_helpers import line
from tests.integration.hooks.hook_helpers import counted, script

RUNNER = Path(__file__).with_name("hook_crash_runner.py")


def _setup(tmp: Path, wait: bool) -> Path:
    (tmp / "ws").mkdir()
    (tmp / "replay.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [
        line("work", ("work", {"wait": wait})), line("done")]))
    return tmp / "ws"


def _runner(tmp: Path, mode: str, hooks: list[list[str]]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(RUNNER), str(tmp / "state.db"), str(tmp / "ws"),
         str(tmp / "replay.jsonl"), mode, json.dumps(hooks)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)  # polling for a file the runner writes


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _resume(tmp: Path, hooks: list[list[str]]) -> str:
    out, err = _runner(tmp, "resume:run-hooks", hooks).communicate(timeout=120)
    assert out.startswith("finished"), err
    return out


def test_a_pre_tool_hook_that_allowed_is_not_asked_again_after_kill_9(tmp_path: Path) -> None:
    ws = _setup(tmp_path, wait=True)
    count = tmp_path / "pre.log"  # outside the workspace
    pre = script(tmp_path, "pre", f"count({str(count)!r})\n")
    hooks = [["pre_tool", str(pre), "counter"]]
    proc = _runner(tmp_path, "start", hooks)
    _wait_for(ws / "work.started", proc)  # the call is executing
    _kill(proc)
    assert counted(count) == ["pre_tool work"]
    _resume(tmp_path, hooks)
    assert counted(count) == ["pre_tool work"]  # replayed from the store, not asked again
    with Store(tmp_path / "state.db") as store:
        (entry,) = store.ledger("run-hooks", 0)
        assert entry.observation == "resumed: the work was already done"
        (record,) = store.hook_runs("run-hooks")
        assert record.answer is not None and record.answer["decision"] == "allow"


def test_a_post_tool_hook_runs_at_most_once_across_kill_9(tmp_path: Path) -> None:
    _setup(tmp_path, wait=False)
    count, started, pid = tmp_path / "post.log", tmp_path / "post.started", tmp_path / "post.pid"
    post = script(tmp_path, "post", f"""
        count({str(count)!r})
        open({str(pid)!r}, "w").write(str(os.getpid()))
        open({str(started)!r}, "w").close()
        while True:
            time.sleep(1)
    """)
    hooks = [["post_tool", str(post), "slow-post"]]
    proc = _runner(tmp_path, "start", hooks)
    _wait_for(started, proc)  # the post_tool hook is running
    _kill(proc)
    os.kill(int(pid.read_text()), signal.SIGKILL)  # the hook we started, by its pid
    _resume(tmp_path, hooks)
    assert counted(count) == ["post_tool work"]  # not run a second time
    with Store(tmp_path / "state.db") as store:
        (entry,) = store.ledger("run-hooks", 0)
        assert entry.observation is not None
        assert "[hook slow-post] did not finish" in entry.observation
        (record,) = store.hook_runs("run-hooks")
        assert record.answer is None  # started, never finished
