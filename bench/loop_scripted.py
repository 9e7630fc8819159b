"""Harness overhead per step, resume cost, and CLI start-up (issue #2 figures).

    python bench/loop_scripted.py

1. Per-step overhead: the scripted provider, one trivial tool call per step (`read_file`
   of a small file), the store on disk; median and p90 of the wall time between
   consecutive `step_started` events, at 100 and at 1000 steps.
2. `io resume` of a 1000-step run that was interrupted, to its next step (the time of
   the whole `io resume` process until the step is committed).
3. `io --help` and `io --version` cold (median of 15 process runs each).

Targets: per step ≤ 3 ms median at 100 steps, 1000 steps ≤ 1.5× that; resume ≤ 300 ms;
--help/--version ≤ 100 ms median. Timings only here, never in tests.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness_core import (
    Budget,
    Event,
    EventKind,
    ProviderConfig,
    Runner,
    RunSpec,
    SandboxConfig,
    ScriptedProvider,
    Store,
    TaskContract,
    Workspace,
)
from harness_core.sandbox import BackendChoice


def _replay(path: Path, steps: int) -> None:
    lines = [json.dumps({"tool_calls": [{"name": "read_file",
                                         "arguments": {"path": "a.txt", "offset": i % 50 + 1}}],
                         "usage": {"total_tokens": 10}}) for i in range(steps)]
    lines.append(json.dumps({"text": "done"}))
    path.write_text("\n".join(lines) + "\n")


def per_step(steps: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "ws" / "a.txt").write_text("\n".join(f"line {i}" for i in range(60)))
        _replay(root / "replay.jsonl", steps)
        stamps: list[float] = []

        def on_event(event: Event) -> None:
            if event.kind is EventKind.STEP_STARTED:
                stamps.append(time.perf_counter())

        store = Store(root / "state.db")
        runner = Runner(store, ScriptedProvider(ProviderConfig(script=root / "replay.jsonl")),
                        on_event=on_event)
        spec = RunSpec(workspace=Workspace(root / "ws"), contract=TaskContract(goal="bench"),
                       budget=Budget(max_steps=steps + 5, max_tokens=None, wall_seconds=None),
                       sandbox=SandboxConfig(backend=BackendChoice.OFF), model="scripted")
        runner.start(spec)
        store.close()
        gaps = [(b - a) * 1000 for a, b in zip(stamps, stamps[1:], strict=False)]
        last_tenth = gaps[-max(len(gaps) // 10, 1):]
        return statistics.median(gaps), statistics.quantiles(gaps, n=10)[-1], \
            statistics.median(last_tenth)


def resume_cost(steps: int = 1000) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        (ws / "a.txt").write_text("\n".join(f"line {i}" for i in range(60)))
        _replay(ws / "replay.jsonl", steps + 1)
        (ws / "io.toml").write_text(
            '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n'
            f'[budget]\nmax_steps = {steps}\nmax_tokens = 100000000\nwall_seconds = 100000\n'
            '[sandbox]\nbackend = "off"\n')
        env = dict(os.environ, IO_STORE=str(root / "state.db"))
        out = subprocess.run([sys.executable, "-m", "io_harness_cli", "run", "go", "-w", str(ws),
                              "--json"], capture_output=True, text=True, env=env)
        run_id = json.loads(out.stdout.splitlines()[-1])["run_id"]
        # raise the step budget by one so the resume takes exactly one more step
        (ws / "io.toml").write_text((ws / "io.toml").read_text().replace(
            f"max_steps = {steps}", f"max_steps = {steps + 1}"))
        io = [str(Path(sys.executable).with_name("io"))]
        if not Path(io[0]).exists():
            io = [sys.executable, "-m", "io_harness_cli"]
        begin = time.perf_counter()
        subprocess.run([*io, "resume", run_id, "-w", str(ws), "--json"], capture_output=True,
                       env=env)
        return (time.perf_counter() - begin) * 1000


def cli_cold(args: list[str], runs: int = 15) -> float:
    io = str(Path(sys.executable).with_name("io"))
    cmd = [io] if Path(io).exists() else [sys.executable, "-m", "io_harness_cli"]
    times = []
    for _ in range(runs):
        begin = time.perf_counter()
        subprocess.run([*cmd, *args], capture_output=True)
        times.append((time.perf_counter() - begin) * 1000)
    return statistics.median(times)


def main() -> None:
    m100, p90_100, _ = per_step(100)
    m1000, p90_1000, tail1000 = per_step(1000)
    print(f"per-step overhead, 100 steps:  median {m100:.3f} ms  p90 {p90_100:.3f} ms")
    print(f"per-step overhead, 1000 steps: median {m1000:.3f} ms  p90 {p90_1000:.3f} ms"
          f"  last 100 steps median {tail1000:.3f} ms  ratio to 100-step {m1000 / m100:.2f}x")
    print(f"io resume of a 1000-step run to its next step: {resume_cost():.0f} ms")
    print(f"io --help cold: median {cli_cold(['--help']):.0f} ms")
    print(f"io --version cold: median {cli_cold(['--version']):.0f} ms")


if __name__ == "__main__":
    main()
