"""Children run in parallel share their root's sandbox: a child that ends must not end
it, or the commands its siblings still run are killed with it (found when a Ctrl-C test
of parallel children lost one child's command under load)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from harness_core import RunStatus, Store
from tests.conftest import io_cmd
from tests.integration.cli.helpers import make_workspace, replay_line

WAIT = ("import pathlib, sys, time\n"
        "pathlib.Path(sys.argv[2]).write_text('started')\n"
        "while not pathlib.Path(sys.argv[1]).exists():\n"
        "    time.sleep(0.02)\n"
        "with open(sys.argv[3], 'a') as f: f.write('ran\\n')\n")


def _child_ended(store: Path, goal: str) -> bool:
    """Whether the child with `goal` ended and let go of its run (after its sandbox use)."""
    if not store.exists():
        return False
    with Store(store) as opened:
        return any(r.goal == goal and r.status is RunStatus.FINISHED and r.owner_pid is None
                   for r in opened.list_runs(50))


def test_a_finished_child_leaves_its_siblings_command_running(tmp_path: Path) -> None:
    import sys

    script = tmp_path / "wait.py"
    script.write_text(WAIT)
    release, log, started = tmp_path / "release", tmp_path / "ran.log", tmp_path / "b.started"
    slow = ("exec", {"argv": [sys.executable, str(script), str(release), str(started), str(log)]})
    ws = make_workspace(tmp_path / "w", [
        replay_line("", ("spawn_agent", {"goal": "quick"}), ("spawn_agent", {"goal": "slow"})),
        replay_line("", ("exec", {"argv": ["true"]})),
        replay_line("quick done"),
        replay_line("", slow),
        replay_line("slow done"),
        replay_line("root done"),
    ], toml_extra='[policy]\ntier = "full"\n')
    store = tmp_path / "state.db"
    env = {**os.environ, "IO_STORE": str(store)}
    proc = subprocess.Popen([*io_cmd(), "run", "lead", "-w", str(ws), "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (started.exists() and _child_ended(store, "quick")):
            if proc.poll() is not None:
                break  # it ended on its own: the ledger below says how the slow command did
            assert time.monotonic() < deadline, "the quick child never ended beside the slow one"
            time.sleep(0.02)
        release.write_text("go")  # only now: the quick child's drive is over
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    with Store(store) as opened:
        statuses = {r.goal: [e.data_json()["exit_status"] for e in opened.ledger(r.run_id)
                             if e.name == "exec"] for r in opened.list_runs(10)}
    assert statuses == {"quick": [0], "slow": [0], "lead": []}  # not 137: killed with the box
    assert log.read_text().splitlines() == ["ran"]  # it ran to its end, once
