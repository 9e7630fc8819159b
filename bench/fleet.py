"""The fleet figures of issue 16: per-step store cost on PostgreSQL against SQLite, and
`io batch` throughput with the scripted provider.

    IO_BENCH_POSTGRES_URL=postgresql://io:io-test@127.0.0.1:5432/io_test python bench/fleet.py

1. Per-step store cost: a 100-step run (scripted provider, one `read_file` per step,
   sandbox off) driven in-process; the median wall time between consecutive
   `step_started` events is the whole step (provider replay, policy, tool, intent,
   observation, checkpoint); the same run on a SQLite file and on PostgreSQL over
   loopback, interleaved, 3 runs each. Target: PostgreSQL ≤ 3× SQLite.
2. `io batch` throughput: 20 one-step runs (scripted) at `--parallel 2`, the real CLI,
   SQLite store; runs per second of the whole `io batch` process, median of 3.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
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

STEPS = 100


def _replay(path: Path, steps: int) -> None:
    lines = [json.dumps({"tool_calls": [{"name": "read_file",
                                         "arguments": {"path": "a.txt", "offset": i + 1}}],
                         "usage": {"total_tokens": 10}}) for i in range(steps)]
    lines.append(json.dumps({"text": "done"}))
    path.write_text("\n".join(lines) + "\n")


def _server_cpu(store: Store) -> float:
    """CPU seconds the store's PostgreSQL backend process has used (0 for SQLite)."""
    if store.backend != "postgresql":
        return 0.0
    pid = store._conn._conn.info.backend_pid  # type: ignore[attr-defined]
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


CPU: dict[str, list[float]] = {}


def _per_step(location: str, root: Path) -> float:
    """The median wall time of a step; records the CPU per step (io's thread plus the
    PostgreSQL backend serving it) between the first and the last step in `CPU`."""
    stamps: list[float] = []
    cpu: list[float] = []
    store_ref: list[Store] = []

    def on_event(event: Event) -> None:
        if event.kind is EventKind.STEP_STARTED:
            stamps.append(time.perf_counter())
            if len(stamps) in (2, STEPS):
                cpu.append(time.thread_time() + _server_cpu(store_ref[0]))

    ws = root / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(STEPS + 10)))
    _replay(root / "replay.jsonl", STEPS)
    with Store(location) as store:
        store_ref.append(store)
        provider = ScriptedProvider(ProviderConfig(kind="scripted", script=root / "replay.jsonl"))
        spec = RunSpec(workspace=Workspace(ws), contract=TaskContract(goal="bench"),
                       budget=Budget(max_steps=STEPS + 10, max_tokens=None, wall_seconds=None),
                       sandbox=SandboxConfig(backend=BackendChoice.OFF), model="scripted",
                       stall_window=STEPS + 10)
        Runner(store, provider, on_event=on_event).start(spec)
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    CPU.setdefault(store.backend, []).append((cpu[1] - cpu[0]) / (STEPS - 2) * 1000)
    return statistics.median(gaps) * 1000


def _schema_url(base: str) -> tuple[str, str]:
    import psycopg

    schema = "bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    return schema, f"{base}{sep}options=-csearch_path%3D{schema}"


def _drop(base: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def store_cost(base: str | None) -> None:
    sqlite: list[float] = []
    postgres: list[float] = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            sqlite.append(_per_step(str(Path(tmp) / "state.db"), Path(tmp)))
        if base:
            schema, url = _schema_url(base)
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    postgres.append(_per_step(url, Path(tmp)))
            finally:
                _drop(base, schema)
    print(f"per-step, {STEPS} steps, SQLite file:      median {statistics.median(sqlite):.2f} ms"
          f"  (runs: {', '.join(f'{v:.2f}' for v in sqlite)})")
    if postgres:
        ratio = statistics.median(postgres) / statistics.median(sqlite)
        print(f"per-step, {STEPS} steps, PostgreSQL:       median"
              f" {statistics.median(postgres):.2f} ms  (runs: "
              f"{', '.join(f'{v:.2f}' for v in postgres)})  ratio {ratio:.2f}x (target <= 3x)")
        lite, pg = statistics.median(CPU["sqlite"]), statistics.median(CPU["postgresql"])
        print(f"CPU per step (io's thread + the PostgreSQL backend): SQLite {lite:.2f} ms,"
              f" PostgreSQL {pg:.2f} ms, ratio {pg / lite:.2f}x")
    else:
        print("PostgreSQL: skipped (set IO_BENCH_POSTGRES_URL)")


def batch_throughput(runs: int = 20, parallel: int = 2) -> None:
    rates: list[float] = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            ws = root / "ws"
            ws.mkdir()
            (ws / "io.toml").write_text('[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n'
                                        '[sandbox]\nbackend = "off"\n')
            (ws / "replay.jsonl").write_text(json.dumps({"text": "done"}) + "\n")
            tasks = root / "tasks.jsonl"
            tasks.write_text("".join(json.dumps({"goal": f"t{i}", "workspace": "ws"}) + "\n"
                                     for i in range(runs)))
            env = {**os.environ, "IO_STORE": str(root / "state.db")}
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "io_harness_cli", "batch", str(tasks),
                                   "--parallel", str(parallel), "--json", "-w", str(ws)],
                                  env=env, capture_output=True, text=True, check=False)
            elapsed = time.perf_counter() - started
            assert done.returncode == 0, done.stderr
            rates.append(runs / elapsed)
    print(f"io batch, {runs} one-step runs, --parallel {parallel}, SQLite: median"
          f" {statistics.median(rates):.2f} runs/s (runs: {', '.join(f'{r:.2f}' for r in rates)})")


if __name__ == "__main__":
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    store_cost(os.environ.get("IO_BENCH_POSTGRES_URL"))
    batch_throughput()
