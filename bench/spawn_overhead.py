"""Overhead of spawning a child run (issue 11): scripted provider, store on disk.

A root run whose first reply holds N `spawn_agent` calls; each child answers at once
(one completion, no tool call). The time per child is
(wall time of that tree - wall time of the same root with no children) / N, so it holds
everything a child costs the harness: its `runs` row and opening messages, its drive
(gate, context, handle registry), its one completion and checkpoint, its observation in
the parent's ledger, and the events. Measured with `[agents] parallel = 1` (children one
after another: the pure per-child cost) and with the default 4 (children in threads,
each with its own store connection). Sandbox off: a child's spawn starts no process.

Target: <= 20 ms a child.

Run: python bench/spawn_overhead.py [--children N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness_core import (  # noqa: E402
    AgentLimits,
    Budget,
    Policy,
    ProviderConfig,
    RunSpec,
    SandboxConfig,
    ScriptedProvider,
    Store,
    TaskContract,
    Workspace,
    run_tree,
)
from harness_core.sandbox import BackendChoice  # noqa: E402


def _script(path: Path, children: int) -> None:
    calls = [{"name": "spawn_agent", "arguments": {"goal": f"child {i}"}} for i in range(children)]
    lines = [{"text": "fan out", "tool_calls": calls}] if children else []
    lines += [{"text": f"child {i} done", "usage": {"total_tokens": 5}} for i in range(children)]
    lines.append({"text": "root done", "usage": {"total_tokens": 5}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _tree_seconds(children: int, parallel: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        _script(root / "replay.jsonl", children)
        provider = ScriptedProvider(ProviderConfig(kind="scripted", script=root / "replay.jsonl"))
        spec = RunSpec(workspace=Workspace(root / "ws"), contract=TaskContract(goal="lead"),
                       policy=Policy.from_lists(tier="workspace-write"),
                       budget=Budget(max_steps=10_000, max_tokens=None, wall_seconds=None),
                       sandbox=SandboxConfig(backend=BackendChoice.OFF), model="scripted",
                       agent_limits=AgentLimits(max_children=children or 1, parallel=parallel))
        with Store(root / "state.db") as store:
            began = time.perf_counter()
            outcome = run_tree(store, provider, spec)
            took = time.perf_counter() - began
        assert outcome.status.value == "finished", outcome
        return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--children", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    _tree_seconds(2, 1)  # warm imports and caches
    base = min(_tree_seconds(0, 1) for _ in range(args.repeat))
    print(f"root alone: {base * 1000:.1f} ms (best of {args.repeat})")
    for parallel in (1, 4):
        runs = [_tree_seconds(args.children, parallel) for _ in range(args.repeat)]
        per = [(t - base) / args.children * 1000 for t in runs]
        print(f"parallel={parallel}: {args.children} children, per child best {min(per):.2f} ms,"
              f" median {statistics.median(per):.2f} ms (target <= 20 ms)")


if __name__ == "__main__":
    main()
