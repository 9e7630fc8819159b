"""Start-up cost of a sandboxed `true` against a bare `true` (goal: <= 15 ms extra, median).

Run: python bench/sandbox_startup.py [--runs 50]

"bare" is `subprocess.run(["true"])`. Each backend is timed end to end through
`run_command` (selection and the launcher are built once, outside the loop, as a
run does), which includes bwrap, the seccomp pipe, rlimits in the child, the pids
cgroup's creation and removal, and the kill of anything left. The samples are
interleaved so a change in machine load hits every row alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from harness_core.errors import SandboxUnavailable
from harness_core.sandbox import (
    BackendChoice,
    LaunchRequest,
    SandboxConfig,
    SandboxSpec,
    launcher,
    run_command,
    select,
)

GOAL_MS = 15.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    runs = parser.parse_args().runs
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    with tempfile.TemporaryDirectory(prefix="io-bench-") as scratch:
        workdir = Path(scratch)
        request = LaunchRequest(argv=["true"], cwd=workdir)
        cases: dict[str, Callable[[], object]] = {
            "bare": lambda: subprocess.run(["true"], check=True)
        }
        for choice in (BackendChoice.NATIVE, BackendChoice.FLOOR, BackendChoice.OFF):
            try:
                selected = select(SandboxConfig(backend=choice), env=env)
            except SandboxUnavailable as exc:
                print(f"{choice.value}: unavailable ({exc})")
                continue
            bound = launcher(selected, SandboxSpec(workdir=workdir, env=env))
            cases[f"{choice.value} ({selected.backend.value})"] = partial(
                run_command, bound, request
            )
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for case in cases.values():
            case()  # warm caches and the bwrap probe
        for _ in range(runs):
            for name, case in cases.items():
                started = time.perf_counter()
                case()
                samples[name].append((time.perf_counter() - started) * 1000)
    bare = statistics.median(samples["bare"])
    print(f"runs per case: {runs}")
    print(f"{'case':<22}{'median ms':>10}{'p90 ms':>10}{'extra ms':>10}")
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"{name:<22}{median:>10.2f}{p90:>10.2f}{median - bare:>10.2f}")
    native = next((v for k, v in samples.items() if k.startswith("native")), None)
    if native is not None:
        extra = statistics.median(native) - bare
        verdict = "meets" if extra <= GOAL_MS else "misses"
        print(f"native extra median {extra:.2f} ms {verdict} the {GOAL_MS:g} ms goal")


if __name__ == "__main__":
    main()
