"""Sandboxed per-command overhead over 100 steps (issue 9; goal: <= 5 ms median extra).

Run: python bench/sandbox_steps.py [--steps 100]

Each case runs `true` `--steps` times through `run_command` with launchers built by
`build_launchers` from a `RunSpec`, as a run builds them (selection, read masks from a
policy with `deny_read`, the store hidden, the egress proxy for `network = true`). The
cases are interleaved step by step so machine load hits each alike. "extra" is the
case's median minus the `off` median. The machine's load average is printed: on a
shared machine every figure moves with it.

Commands start inside one sandbox per run (`harness_core.sandbox._resident`). The
"rebuilt every command" case creates a new file matching `deny_read` before each step,
so every command needs a fresh sandbox (the old one is ended in the background): what a
command costs when the mask set changes at every step. It runs after the other cases,
`--steps / 5` times (at least 10), so its sandbox starts do not load them. The figures measured before the resident sandbox
(a bwrap sandbox per command) are printed beside them; they were taken on the same
machine at another moment, so compare the extras, not the absolute times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from harness_core import Policy, RunSpec, TaskContract, Workspace, build_launchers
from harness_core.errors import SandboxUnavailable
from harness_core.policy import ActKind, Effect, Rule
from harness_core.sandbox import BackendChoice, LaunchRequest, SandboxConfig, run_command

GOAL_MS = 5.0
BEFORE = {  # extra over `off`, ms, a sandbox per command (bench/README.md, load 2.0)
    "floor": 16.88,
    "native": 14.74,
    "native + deny_read masks": 16.14,
    "native + network (proxy)": 39.12,
}


def _spec(root: Path, backend: BackendChoice, *, network: bool, deny: bool) -> RunSpec:
    rules = (Rule(Effect.DENY, ActKind.READ, "secrets/**", "project"),
             Rule(Effect.DENY, ActKind.READ, "**/*.pem", "project")) if deny else ()
    return RunSpec(
        workspace=Workspace(root),
        contract=TaskContract(goal="bench"),
        policy=Policy(tier="full", rules=rules),
        sandbox=SandboxConfig(backend=backend, network=network),
        env={"PATH": os.environ.get("PATH", os.defpath), "HOME": os.environ.get("HOME", "/")},
        store_path=root.parent / "state.db",
    )


def _workspace(root: Path) -> Path:
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "prod.env").write_text("x")
    (root / "src").mkdir()
    for i in range(50):
        (root / "src" / f"m{i}.py").write_text("pass\n")
    (root / "key.pem").write_text("x")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    steps = parser.parse_args().steps
    with tempfile.TemporaryDirectory(prefix="io-bench-steps-", dir="/var/tmp") as scratch:
        root = _workspace(Path(scratch) / "ws")
        # The rebuild case plants a new denied file before each step, in its own workspace.
        churn = _workspace(Path(scratch) / "churn" / "ws")
        cases = {
            "off": (BackendChoice.OFF, False, False),
            "floor": (BackendChoice.FLOOR, False, False),
            "native": (BackendChoice.NATIVE, False, False),
            "native + deny_read masks": (BackendChoice.NATIVE, False, True),
            "native + network (proxy)": (BackendChoice.NATIVE, True, False),
            "native, rebuilt every command": (BackendChoice.NATIVE, False, True),
        }
        built = {}
        for name, (backend, network, deny) in cases.items():
            where = churn if name.endswith("rebuilt every command") else root
            try:
                built[name] = build_launchers(_spec(where, backend, network=network, deny=deny))
            except SandboxUnavailable as exc:
                print(f"{name}: unavailable ({exc})")
        samples: dict[str, list[float]] = {name: [] for name in built}
        load_before = os.getloadavg()[0]
        churning = {n: b for n, b in built.items() if n.endswith("rebuilt every command")}
        for _ in range(steps):
            for name, launchers in built.items():
                if name in churning:
                    continue
                start = time.perf_counter()
                run_command(launchers.commands, LaunchRequest(argv=["true"], cwd=root))
                samples[name].append((time.perf_counter() - start) * 1000)
        # Apart, after the others: its sandbox starts and ends would load them.
        for step in range(max(steps // 5, 10)):
            for name, launchers in churning.items():
                (churn / f"new{step}.pem").write_text("x")  # a new mask: a fresh sandbox
                start = time.perf_counter()
                run_command(launchers.commands, LaunchRequest(argv=["true"], cwd=churn))
                samples[name].append((time.perf_counter() - start) * 1000)
        for launchers in built.values():
            launchers.close()
    load = os.getloadavg()[0]
    print(f"steps per case: {steps}; load average {load_before:.1f} before, {load:.1f} after, "
          f"on {os.cpu_count()} CPUs")
    print(f"{'case':31} {'median ms':>10} {'p90 ms':>8} {'extra ms':>9} {'extra before':>13}")
    base = statistics.median(samples["off"]) if "off" in samples else 0.0
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        before = f"{BEFORE[name]:13.2f}" if name in BEFORE else f"{'':13}"
        print(f"{name:31} {median:10.2f} {p90:8.2f} {median - base:9.2f} {before}")
    for name in ("floor", "native", "native + deny_read masks", "native + network (proxy)"):
        if name in samples:
            extra = statistics.median(samples[name]) - base
            verdict = "meets" if extra <= GOAL_MS else "misses"
            print(f"{name}: extra median {extra:.2f} ms {verdict} the {GOAL_MS:g} ms goal")


if __name__ == "__main__":
    main()
