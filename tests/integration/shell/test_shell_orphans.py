"""A crash of the process that started a handle (a real SIGKILL) leaves an orphan that the
next process marks, answers from the record, and never signals — even when its recorded pid
now belongs to an unrelated process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import psutil

from harness_core.clock import SystemClock
from harness_core.shell import HandleRegistry
from harness_core.tools._shell_tools import ShellKill, ShellPoll, ShellStart
from harness_core.workspace import Workspace
from tests.unit.shell.support import HandleTestStore, context, off_launcher, pid_alive, wait_for

REPO = Path(__file__).resolve().parents[3]


def test_orphan_after_kill_9_is_never_signalled_even_when_its_pid_is_reused(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    db = tmp_path / "state.db"
    marker = f"orphan-payload-{uuid.uuid4().hex}"
    runner = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.shell.handle_runner", str(db), str(root),
         str(tmp_path / "capture"), marker],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    handle_pids: list[int] = []
    try:
        assert runner.stdout is not None
        started = json.loads(runner.stdout.readline())
        handle_pids = started["pids"]
        assert started["handle"] == "h1" and handle_pids
        os.kill(runner.pid, signal.SIGKILL)  # the crash: no clean-up of any kind runs
        runner.wait()
        runner.stdout.close()
        assert all(pid_alive(p) for p in handle_pids)  # the handle outlived its io process

        # Between the crash and the resume the OS handed the recorded pid to something else.
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE process_handles SET pids = ? WHERE handle_id = 'h1'",
                         (json.dumps([victim.pid]),))
        conn.close()

        store = HandleTestStore(db)
        try:
            resumed = HandleRegistry(
                run_id="run-crash", launcher=off_launcher(root), workspace=Workspace(root),
                capture_dir=tmp_path / "capture2", clock=SystemClock(), store=store,
            )
            assert resumed.orphaned_at_start == 1
            record = store.handle_record("run-crash", "h1")
            assert record is not None and record.end_reason == "orphaned"
            ctx = context(root, handles=resumed)
            killed = ShellKill().run({"handle": "h1"}, ctx)
            polled = ShellPoll().run({"handle": "h1"}, ctx)
            for outcome in (killed, polled):
                assert outcome.data.orphaned is True
                assert "orphaned" in outcome.output and "start again" in outcome.output.lower()
            fresh = ShellStart().run({"line": "true"}, ctx)
            assert fresh.data.handle == "h2"  # ids continue after the recorded ones
            resumed.close_all()  # the resumed run ends: its sweep must not touch the orphan
            assert victim.poll() is None and pid_alive(victim.pid)
        finally:
            store.close()
    finally:
        victim.kill()
        victim.wait()
        for pid in handle_pids:  # clean up the real orphan, checking it is ours first
            try:
                proc = psutil.Process(pid)
                if marker in " ".join(proc.cmdline()):
                    proc.kill()
            except psutil.NoSuchProcess:
                pass
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert wait_for(lambda: not any(pid_alive(p) for p in handle_pids))
