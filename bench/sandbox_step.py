"""The sandboxed step against the unsandboxed one, through the real `io run` (issue 24).

`io run` (the CLI, a child process) drives N steps of one `exec` call of ``echo``
against the loopback OpenAI-compatible fake, with `[sandbox] backend = "off"` and
``"native"`` (bubblewrap; the run's one sandbox, commands started inside it), the runs
of the two backends (and of each source tree) alternating so both see the same load.
For 20, 100 and 1,000 steps it prints:

* the per-step gap (the fake's last byte of a reply to the next request's arrival),
  the median of the per-step minima over the runs, as `bench/loop_overhead.py` takes it;
* CPU per step: the CPU time of the `io` child and every process it started (the
  sandbox, its launcher, the `echo`s), an N-step run minus a 20-step run, over N - 20;
* with `--instructions`: instructions per step of the `io` process alone (callgrind,
  `--trace-children=no`: the sandbox and the `echo`s run natively), the same difference.
  Instructions do not move with the machine's load; wall times do.

`--against REF` runs commit REF's tree beside this one (exported with `git archive`),
so a change is measured side by side with its baseline.

Targets (issue 24, a quiet machine): gap <= 2 ms unsandboxed, <= 2.8 ms sandboxed,
flat from 20 to 1,000 steps.

Run: python bench/sandbox_step.py [--repeat N] [--steps 20,100,1000] [--against REF]
         [--instructions]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from loop_overhead import (  # noqa: E402
    _BOOT,
    _child_cpu,
    child_env,
    export_tree,
    responder,
    write_workspace,
)

from tests.fakes.vendor_server import start_vendor_server  # noqa: E402

BACKENDS: tuple[str, ...] = ("off", "native")


def run_once(steps: int, backend: str, tmp: Path, code: Path,
             callgrind: Path | None = None) -> tuple[list[float], float]:
    """One `io run` of `steps` echo steps: (per-step gaps in ms, CPU seconds of the tree).

    With `callgrind`, the `io` process runs under callgrind and its counts are written
    to that file (a child forked before its `exec` would otherwise write over them)."""
    with start_vendor_server("openai", responder=responder(steps)) as fake:
        ws = write_workspace(tmp / f"ws-{backend}-{steps}", "openai", fake.base_url, backend)
        env = child_env(tmp / f"state-{code.name}.db")
        env["PYTHONPATH"] = str(code)
        env["IO_BENCH_RSS"] = str(tmp / "rss.txt")
        argv = [sys.executable, "-c", _BOOT, "run", "bench", "-w", str(ws), "--json"]
        if callgrind is not None:
            env["PYTHONHASHSEED"] = "0"
            argv = ["valgrind", "--tool=callgrind", "--trace-children=no",
                    f"--callgrind-out-file={callgrind}.%p", *argv]
        child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, cwd=str(code))
        _, err = child.communicate()
        if child.returncode != 0:
            raise SystemExit(f"io run failed ({child.returncode}): {err.decode()[-2000:]}")
        if callgrind is not None:
            Path(f"{callgrind}.{child.pid}").rename(callgrind)
        received = [r.received_at for r in fake.requests]
        answered = fake.answered_at
        last = json.dumps(fake.requests[-1].body)
    cpu = _child_cpu()
    assert len(received) == steps + 1, f"{len(received)} requests for {steps} steps"
    if steps and f"hi {steps - 1}" not in last:  # the commands really ran
        raise SystemExit(f"the last step's echo output is missing ({backend}): {last[-300:]}")
    return [(received[i + 1] - answered[i]) * 1000.0 for i in range(steps)], cpu


def instructions(path: Path) -> int:
    """Total instructions (Ir) of a callgrind output file."""
    text = path.read_text()
    found = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
    if found is None:
        raise SystemExit(f"no instruction total in {path}")
    return int(found.group(1))


def _floor(runs: list[list[float]]) -> list[float]:
    return [min(values) for values in zip(*runs, strict=True)]


def timing(trees: dict[str, Path], lengths: list[int], repeat: int, tmp: Path) -> None:
    gaps: dict[tuple[str, str, int], list[list[float]]] = {}
    cpus: dict[tuple[str, str, int], list[float]] = {}
    for steps in lengths:
        times = repeat if steps < 1000 else max(1, min(repeat, 2))
        for _ in range(times):
            for name, code in trees.items():
                for backend in BACKENDS:
                    gap, cpu = run_once(steps, backend, tmp, code)
                    gaps.setdefault((name, backend, steps), []).append(gap)
                    cpus.setdefault((name, backend, steps), []).append(cpu)
    print("\nper-step gap (median of per-step minima; in brackets: median of every step),"
          " and CPU per step of io and everything it started (N-step run minus 20-step run)")
    for name in trees:
        for backend in BACKENDS:
            cells = []
            for steps in lengths:
                runs = gaps[(name, backend, steps)]
                every = [g for r in runs for g in r]
                cell = (f"{steps}: {statistics.median(_floor(runs)):5.2f} ms"
                        f" [{statistics.median(every):5.2f}]")
                if steps != lengths[0]:
                    extra = min(cpus[(name, backend, steps)]) - min(cpus[(name, backend, lengths[0])])
                    cell += f" cpu {extra / (steps - lengths[0]) * 1000:4.2f} ms"
                cells.append(cell)
            print(f"  {name:<16} {backend:<7} " + "  ".join(cells))


def counting(trees: dict[str, Path], lengths: list[int], tmp: Path) -> None:
    print("\ninstructions per step of the io process (callgrind), N-step run minus"
          f" {lengths[0]}-step run")
    for name, code in trees.items():
        run_once(1, "off", tmp, code)  # compiles the tree's bytecode outside the counts
        for backend in BACKENDS:
            counts = {}
            for steps in lengths:
                out = tmp / f"cg-{code.name}-{backend}-{steps}.out"
                run_once(steps, backend, tmp, code, callgrind=out)
                counts[steps] = instructions(out)
            cells = [f"{steps}: {(counts[steps] - counts[lengths[0]]) / (steps - lengths[0]) / 1e6:.2f} M"
                     for steps in lengths[1:]]
            print(f"  {name:<16} {backend:<7} " + "  ".join(cells)
                  + f"   ({lengths[0]}-step run {counts[lengths[0]] / 1e6:.0f} M)")


def main() -> None:
    global BACKENDS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (1,000 steps: 2)")
    parser.add_argument("--steps", default="20,100,1000")
    parser.add_argument("--against", default=None, help="also run this commit's tree")
    parser.add_argument("--instructions", action="store_true", help="callgrind counts too")
    parser.add_argument("--count-steps", default="20,320",
                        help="run lengths for the instruction counts (a long difference"
                        " outweighs what the start-up's sweep of other processes' ledgers varies)")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="off,native")
    args = parser.parse_args()
    BACKENDS = tuple(args.backends.split(","))
    lengths = sorted(int(s) for s in args.steps.split(","))
    start_load = os.getloadavg()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average"
          f" {start_load[0]:.1f} / {start_load[1]:.1f} / {start_load[2]:.1f}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="io-bench-sbx-") as name:
        tmp = Path(name)
        trees = {"this tree": ROOT}
        if args.against:
            commit, code = export_tree(args.against, tmp)
            trees[f"commit {commit}"] = code
        if not args.skip_timing:
            timing(trees, lengths, args.repeat, tmp)
        if args.instructions:
            counting(trees, sorted(int(s) for s in args.count_steps.split(",")), tmp)
    end_load = os.getloadavg()
    print(f"\nload average at the end {end_load[0]:.1f} / {end_load[1]:.1f};"
          f" {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
