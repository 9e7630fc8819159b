"""Sandboxed per-command overhead over 100 steps (issue 9; goal: <= 5 ms median extra).

Run: python bench/sandbox_steps.py [--steps 100]

Each case runs `true` `--steps` times through `run_command` with launchers built by
`build_launchers` from a `RunSpec`, as a run builds them (selection, read masks from a
policy with `deny_read`, the store hidden, the egress proxy for `network = true`). The
cases are interleaved step by step so machine load hits each alike. "extra" is the
case's median minus the `off` median. The machine's load average is printed: on a
shared machine every figure moves with it.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    steps = parser.parse_args().steps
    with tempfile.TemporaryDirectory(prefix="io-bench-steps-", dir="/var/tmp") as scratch:
        root = Path(scratch) / "ws"
        (root / "secrets").mkdir(parents=True)
        (root / "secrets" / "prod.env").write_text("x")
        (root / "src").mkdir()
        for i in range(50):
            (root / "src" / f"m{i}.py").write_text("pass\n")
        (root / "key.pem").write_text("x")
        cases = {
            "off": (BackendChoice.OFF, False, False),
            "floor": (BackendChoice.FLOOR, False, False),
            "native": (BackendChoice.NATIVE, False, False),
            "native + deny_read masks": (BackendChoice.NATIVE, False, True),
            "native + network (proxy)": (BackendChoice.NATIVE, True, False),
        }
        built = {}
        for name, (backend, network, deny) in cases.items():
            try:
                built[name] = build_launchers(_spec(root, backend, network=network, deny=deny))
            except SandboxUnavailable as exc:
                print(f"{name}: unavailable ({exc})")
        request = LaunchRequest(argv=["true"], cwd=root)
        samples: dict[str, list[float]] = {name: [] for name in built}
        for _ in range(steps):
            for name, launchers in built.items():
                start = time.perf_counter()
                run_command(launchers.commands, request)
                samples[name].append((time.perf_counter() - start) * 1000)
        for launchers in built.values():
            launchers.close()
    load = os.getloadavg()[0]
    print(f"steps per case: {steps}; load average {load:.1f} on {os.cpu_count()} CPUs")
    print(f"{'case':28} {'median ms':>10} {'p90 ms':>8} {'extra ms':>9}")
    base = statistics.median(samples["off"]) if "off" in samples else 0.0
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"{name:28} {median:10.2f} {p90:8.2f} {median - base:9.2f}")
    if "native" in samples:
        extra = statistics.median(samples["native"]) - base
        verdict = "meets" if extra <= GOAL_MS else "misses"
        print(f"native extra median {extra:.2f} ms {verdict} the {GOAL_MS:g} ms goal")


if __name__ == "__main__":
    main()
