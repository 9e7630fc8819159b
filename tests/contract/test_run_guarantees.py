"""docs/CONTRACT.md, "What a run guarantees": the order in which a step reaches the store
(completion, then each call's intent, the call, its observation, then the checkpoint
with the step's budget draw), seen from a second connection while a tool runs; the
store's durability settings; the audit of each drive's policy and `--stored-policy`;
and the reclaim of a lock whose pid now belongs to another process (real SQLite files,
the real loop, the real `io`)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import psutil

from harness_core import DriveRecord, Runner, RunStatus, Store, Toolbox
from harness_core.messages import ToolSpec
from harness_core.tools import ToolContext, ToolOutcome
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line
from tests.unit.session.support import RecordingProvider, spec_for


class StoreProbe:
    """A tool that, while it runs, reads what the store already holds of its run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: list[dict[str, Any]] = []

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("probe", "Reads the store.", {
            "type": "object", "properties": {"step": {"type": "integer"},
                                             "call": {"type": "integer"}}})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        step, call = int(args["step"]), int(args["call"])
        with Store(self.path) as other:  # another connection: only committed rows show
            completion = other.step(ctx.run_id, step)
            ledger = {e.call_index: e for e in other.ledger(ctx.run_id, step)}
            checkpoint = other.last_checkpoint(ctx.run_id)
            record = other.run(ctx.run_id)
        self.seen.append({
            "step": step, "call": call,
            "completion": completion is not None and len(completion.tool_calls) == 2,
            "own_intent": call in ledger,
            "own_observation": call in ledger and ledger[call].has_observation,
            "earlier_observed": all(ledger[i].has_observation for i in range(call)),
            "checkpoint": None if checkpoint is None else checkpoint.step_index,
            "steps_used": record.steps_used,
        })
        return ToolOutcome(output=f"probed {step}/{call}")


def test_a_step_reaches_the_store_completion_intent_observation_then_checkpoint(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    db = tmp_path / "state.db"
    probe = StoreProbe(db)
    provider = RecordingProvider([
        ("first", [("probe", {"step": 0, "call": 0}), ("probe", {"step": 0, "call": 1})]),
        ("second", [("probe", {"step": 1, "call": 0}), ("probe", {"step": 1, "call": 1})]),
        ("done", []),
    ])
    with Store(db) as store:
        outcome = Runner(store, provider, toolbox=Toolbox([probe])).start(spec_for(ws, "go"))
        assert outcome.status is RunStatus.FINISHED, outcome.reason
        final = store.run(outcome.run_id)
        last = store.last_checkpoint(outcome.run_id)
    assert [(s["step"], s["call"]) for s in probe.seen] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for seen in probe.seen:
        assert seen["completion"], seen          # the completion committed first
        assert seen["own_intent"], seen          # its intent committed before it ran
        assert not seen["own_observation"], seen  # its observation after
        assert seen["earlier_observed"], seen     # the call before it was observed
        # the step's checkpoint (and its budget draw) is not there while it runs:
        expected = None if seen["step"] == 0 else seen["step"] - 1
        assert seen["checkpoint"] == expected, seen
        assert seen["steps_used"] == seen["step"], seen
    assert last is not None and last.step_index == 2
    assert final.steps_used == 3 and final.tokens_used == 3 * 12


def test_the_store_runs_in_wal_mode_with_synchronous_normal(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with Store(db) as store:
        store.integrity_check()
        conn = store._conn  # noqa: SLF001 - the connection's own setting is what durability rests on
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    raw = sqlite3.connect(db)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # kept in the file
    finally:
        raw.close()
    with Store(db) as reopened:  # a second open keeps the setting on its connection too
        assert reopened._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # noqa: SLF001


ASK = '[policy]\napproval = "ask"\n'


def _paused_run(root: Path) -> tuple[Path, str]:
    ws = make_workspace(root, [replay_line("make", ("exec", {"argv": ["touch", "made.txt"]})),
                               replay_line("done")], toml_extra=ASK)
    first = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert first.returncode == 4, first.stderr
    # the operator tightens the project's policy before resuming
    (ws / "io.toml").write_text((ws / "io.toml").read_text().replace(
        ASK, ASK + 'deny_exec = ["touch*"]\n'))
    return ws, str(json_lines(first.stdout)[-1]["run_id"])


def _drives(home: Path, run_id: str) -> list[DriveRecord]:
    with Store(home / "state" / "io" / "state.db") as store:
        return store.drives(run_id)


def test_a_resume_runs_under_the_current_policy_and_records_it(
        tmp_path: Path, isolated_env: Path) -> None:
    ws, run_id = _paused_run(tmp_path / "w")
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert not (ws / "made.txt").exists()  # the new deny beat the approval
    drives = _drives(isolated_env, run_id)
    assert len(drives) == 2
    assert "touch*" not in json.dumps(drives[0].policy)
    assert "touch*" in json.dumps(drives[1].policy)
    assert all(d.sandbox for d in drives)  # each drive records its sandbox too


def test_stored_policy_resumes_under_the_policy_recorded_at_the_start(
        tmp_path: Path, isolated_env: Path) -> None:
    ws, run_id = _paused_run(tmp_path / "w")
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--stored-policy",
                      "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert (ws / "made.txt").exists()  # the recorded policy had no deny
    drives = _drives(isolated_env, run_id)
    assert len(drives) == 2 and drives[1].policy == drives[0].policy


def _owned_by_this_process(home: Path, run_id: str, started: float) -> None:
    with Store(home / "state" / "io" / "state.db") as store:
        assert store.acquire_run(run_id, os.getpid(), started,
                                 alive=lambda pid, when: False) >= 1


def test_a_lock_whose_pid_is_live_with_another_start_time_is_reclaimed(
        tmp_path: Path, isolated_env: Path) -> None:
    ws, run_id = _paused_run(tmp_path / "w")
    # the recorded owner's pid is alive (this test), but it was started at another time:
    # the pid was reused, the recorded driver is gone
    _owned_by_this_process(isolated_env, run_id, started=1.0)
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    assert resumed.returncode == 0, resumed.stderr


def test_a_lock_held_by_a_live_process_is_run_in_use(tmp_path: Path, isolated_env: Path) -> None:
    ws, run_id = _paused_run(tmp_path / "w")
    _owned_by_this_process(isolated_env, run_id,
                           started=psutil.Process(os.getpid()).create_time())
    refused = run_io(["resume", run_id, "-w", str(ws), "--approve"])
    assert refused.returncode == 5 and "in use" in refused.stderr  # busy (#23)
