"""kill -9 at random points of a 3-level tree with parallel children, then resume: no
tool call runs twice, no child is lost or started twice, and the tree finishes."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness_core import INTERRUPTED_OBSERVATION, RunStatus, Store
from tests.integration.crash.test_crash_resume import _finish, _has_run, _resume_until_done, _spawn


def _line(*calls: dict[str, Any], text: str = "") -> str:
    return json.dumps({"text": text, "tool_calls": list(calls), "usage": {"total_tokens": 3}})


def _append(n: int, who: str) -> dict[str, Any]:
    return {"name": "append_line", "arguments": {"text": f"{n}:{who}"}}


def _spawn_call(goal: str) -> dict[str, Any]:
    return {"name": "spawn_agent", "arguments": {"goal": goal}}


class _Script:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0

    def appends(self, who: str, count: int) -> None:
        for _ in range(count):
            self.n += 1
            self.lines.append(_line(_append(self.n, who)))


def _tree_replay(path: Path) -> int:
    """root ─┬─ a ─┬─ a1   (a1 and a2 in parallel)
             │     └─ a2
             └─ b ─── b1   (a and b in parallel)"""
    s = _Script()
    s.lines.append(_line(_spawn_call("a"), _spawn_call("b")))
    s.appends("a", 3)
    s.lines.append(_line(_spawn_call("a1"), _spawn_call("a2")))
    s.appends("a1", 4)
    s.lines.append(_line(text="a1 done"))
    s.appends("a2", 4)
    s.lines.append(_line(text="a2 done"))
    s.appends("a", 2)
    s.lines.append(_line(text="a done"))
    s.appends("b", 3)
    s.lines.append(_line(_spawn_call("b1")))
    s.appends("b1", 4)
    s.lines.append(_line(text="b1 done"))
    s.appends("b", 2)
    s.lines.append(_line(text="b done"))
    s.appends("root", 3)
    s.lines.append(_line(text="root done"))
    path.write_text("\n".join(s.lines) + "\n")
    return s.n


def _check_tree(tmp: Path, appends: int) -> None:
    with Store(tmp / "state.db") as store:
        assert store.integrity_check() == "ok"
        runs = store.tree_runs("run-crash")
        assert sorted(r.goal for r in runs[1:]) == ["a", "a1", "a2", "b", "b1"]  # none lost, none twice
        assert [r.status for r in runs] == [RunStatus.FINISHED] * 6, [
            (r.goal, r.status.value, r.reason) for r in runs]
        assert sorted(r.depth for r in runs) == [0, 1, 1, 2, 2, 2]
        lines = (tmp / "ws" / "log.txt").read_text().splitlines()
        for n in range(1, appends + 1):
            assert sum(1 for x in lines if x.startswith(f"{n}:")) <= 1  # never twice
        for run in runs:
            for entry in store.ledger(run.run_id):
                assert entry.observation is not None
                if entry.name == "append_line" and entry.observation != INTERRUPTED_OBSERVATION:
                    assert lines.count(entry.arguments["text"]) == 1
                if entry.name == "spawn_agent":
                    assert "finished" in entry.observation


@pytest.mark.parametrize("seed", range(6))
def test_random_kills_of_a_parallel_three_level_tree_then_resume(
        tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    (tmp_path / "ws").mkdir()
    appends = _tree_replay(tmp_path / "replay.jsonl")
    mode = "start"
    for _ in range(6):
        proc = _spawn(tmp_path, mode)
        try:
            proc.wait(timeout=rng.uniform(0.2, 0.9))
        except subprocess.TimeoutExpired:
            proc.kill()
        out, _ = proc.communicate(timeout=60)
        if _has_run(tmp_path):
            mode = "resume:run-crash"
        if proc.returncode == 0 and out.startswith("finished"):
            break
    if not _has_run(tmp_path):
        code, out, err = _finish(_spawn(tmp_path, "start"))
        assert code == 0, err
    else:
        _resume_until_done(tmp_path)
    _check_tree(tmp_path, appends)
