"""docs/CONTRACT.md, "What a run guarantees": the order in which a step reaches the store
(completion, then each call's intent, the call, its observation, then the checkpoint
with the step's budget draw), seen from a second connection while a tool runs, and the
store's durability settings (a real SQLite file, the real loop)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from harness_core import Runner, RunStatus, Store, Toolbox
from harness_core.messages import ToolSpec
from harness_core.tools import ToolContext, ToolOutcome
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
