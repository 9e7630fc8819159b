"""Speed of the `shell` tool: planning + checking, and overhead over a bare subprocess.

* plan + check: a typical 5-stage line (pipes, quotes, a cd and two redirects) lexed,
  parsed, resolved through a real `Workspace` and checked through a real `Policy` with
  allow/deny rules, in a loop. Target: >= 20,000 lines/s. Reported cold (every line
  differs, so the parser's cache of recent lines never hits, and the policy meets one
  act it has not decided before: ``head -n <i>``) and warm (the same line again, as a
  run repeating its test command), as the median (and best) of several repeats, since
  other processes load the machine. Then where a cold line's time goes: lexing,
  parsing, checking (each timed alone on distinct lines), `Policy.check` of the line's
  7 acts (remembered, and one act it has not seen) and `Workspace.resolve` of its 3
  paths (7 lstat calls, one per component: src; src, out, defs.txt; src, out, err.txt),
  alone and as one check resolves them (sharing what it found, so 4 lstat calls).
* overhead: the same argv run N times through the `shell` tool (no sandbox: the
  OffLauncher) and directly with `subprocess.run`; the medians and their difference.
  Target: <= 5 ms median overhead.
* the same overhead for a 3-stage pipeline, against the same pipeline built by hand
  with `subprocess.Popen` and pipes.

Run: python bench/shell_plan.py [--lines N] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness_core.clock import SystemClock  # noqa: E402
from harness_core.policy import Act, Decision, Policy, Tier  # noqa: E402
from harness_core.sandbox import (  # noqa: E402
    Backend,
    BackendChoice,
    SandboxSpec,
    Selected,
    launcher,
)
from harness_core.shell import LineChecker, RunPlan, lex, parse, prepare  # noqa: E402
from harness_core.tools import ToolContext  # noqa: E402
from harness_core.tools._shell_tools import Shell  # noqa: E402
from harness_core.workspace import Workspace  # noqa: E402

LINE = ("cd src && grep -n 'def ' app.py | sort -t: -k2 | uniq -c | tr -s ' ' "
        "| head -n {n} > ../out/defs.txt 2> ../out/err.txt")


class _Gate:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def check(self, act: Act) -> Decision:
        return self.policy.check(act)

    def refuse(self, act: Act, reason: str) -> Decision:
        return self.policy.check(act)


def _workspace(root: Path) -> Workspace:
    (root / "src").mkdir(parents=True)
    (root / "out").mkdir()
    (root / "src" / "app.py").write_text("def a():\n    pass\n\ndef b():\n    pass\n")
    return Workspace(root)


def _rates(
    run: Callable[[int], float | None], count: int, repeats: int = 7
) -> tuple[float, float]:
    """(median, best) per second of `run(count)` over `repeats` runs.

    `run` may return the seconds that count (leaving out its own preparation).
    """
    rates: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        counted = run(count)
        elapsed = time.perf_counter() - start if counted is None else counted
        rates.append(count / elapsed)
    return statistics.median(rates), max(rates)


def bench_plan(root: Path, count: int) -> dict[str, tuple[float, float]]:
    workspace = _workspace(root)
    policy = Policy.from_lists(
        tier=Tier.WORKSPACE_WRITE,
        allow_exec=["grep *", "sort *", "uniq *", "tr *", "head *", "pytest*", "git status*"],
        deny_exec=["git push*", "curl *"],
        deny_write=["secrets/**", "**/*.pem"],
        deny_read=["secrets/**"],
    )
    gate = _Gate(policy)
    plan = prepare(LINE.format(n=20), workspace, gate)
    assert isinstance(plan, RunPlan)
    acts = [a for c in plan.chains for p in c.pipelines for s in p.stages for a in s.acts]
    offset = [0]

    def fresh(n: int) -> range:
        base = offset[0]
        offset[0] += n
        return range(base, base + n)

    def cold(n: int) -> None:
        for i in fresh(n):
            prepare(LINE.format(n=i), workspace, gate)

    def warm(n: int) -> None:
        line = LINE.format(n=20)
        for _ in range(n):
            prepare(line, workspace, gate)

    def lex_only(n: int) -> None:
        for i in fresh(n):
            lex(LINE.format(n=i))

    def parse_only(n: int) -> None:
        uncached = parse.__wrapped__  # the parser without its cache of recent lines
        for i in fresh(n):
            uncached(LINE.format(n=i))

    def check_only(n: int) -> float:
        plans = [parse.__wrapped__(LINE.format(n=i)) for i in fresh(n)]
        checker = LineChecker(workspace, gate)
        start = time.perf_counter()
        for item in plans:
            checker.check(item)
        return time.perf_counter() - start

    def policy_only(n: int) -> None:
        for _ in range(n):
            for act in acts:
                policy.check(act)

    def policy_new(n: int) -> None:
        for i in fresh(n):
            policy.check(Act.exec(("head", "-n", str(i))))

    def resolve_only(n: int) -> None:
        for _ in range(n):
            workspace.resolve("src")
            workspace.resolve("../out/defs.txt", cwd="src")
            workspace.resolve("../out/err.txt", cwd="src")

    def resolve_shared(n: int) -> None:
        resolve = workspace.resolve
        for _ in range(n):
            kinds: dict[str, int] = {}  # what one LineChecker.check shares, and no more
            resolve("src", _kinds=kinds)
            resolve("../out/defs.txt", cwd="src", _kinds=kinds)
            resolve("../out/err.txt", cwd="src", _kinds=kinds)

    return {
        "cold": _rates(cold, count),
        "warm": _rates(warm, count),
        "lex": _rates(lex_only, count),
        "parse": _rates(parse_only, count),
        "check": _rates(check_only, count),
        "policy": _rates(policy_only, count),
        "policy_new": _rates(policy_new, count),
        "resolve": _rates(resolve_only, count),
        "resolve_shared": _rates(resolve_shared, count),
    }


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bench_overhead(root: Path, runs: int) -> tuple[float, float, float, float]:
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C"}
    off = launcher(Selected(Backend.OFF, BackendChoice.OFF),
                   SandboxSpec(workdir=root, env=env))
    ctx = ToolContext(workspace=Workspace(root), gate=_Gate(Policy.from_lists(tier=Tier.FULL)),
                      launcher=off, clock=SystemClock())
    tool = Shell()
    shell_one: list[float] = []
    direct_one: list[float] = []
    shell_pipe: list[float] = []
    direct_pipe: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        tool.run({"line": "echo hello"}, ctx)
        shell_one.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run(["echo", "hello"], cwd=root, env=env, capture_output=True,
                       start_new_session=True, check=False)
        direct_one.append(time.perf_counter() - start)
        start = time.perf_counter()
        tool.run({"line": "echo b a | tr ' ' '\\n' | sort"}, ctx)
        shell_pipe.append(time.perf_counter() - start)
        start = time.perf_counter()
        first = subprocess.Popen(["echo", "b", "a"], cwd=root, env=env,
                                 stdout=subprocess.PIPE, start_new_session=True)
        second = subprocess.Popen(["tr", " ", "\n"], cwd=root, env=env, stdin=first.stdout,
                                  stdout=subprocess.PIPE, start_new_session=True)
        assert first.stdout is not None
        first.stdout.close()
        third = subprocess.Popen(["sort"], cwd=root, env=env, stdin=second.stdout,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        assert second.stdout is not None
        second.stdout.close()
        third.communicate()
        first.wait()
        second.wait()
        direct_pipe.append(time.perf_counter() - start)
    return (_median_ms(shell_one), _median_ms(direct_one), _median_ms(shell_pipe),
            _median_ms(direct_pipe))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        rates = bench_plan(Path(temp, "plan"), args.lines)
        cold, warm = rates["cold"], rates["warm"]
        print(f"plan+check, 5-stage line: {cold[0]:,.0f} lines/s cold, {warm[0]:,.0f} lines/s "
              f"warm, medians of 7 (best {cold[1]:,.0f} / {warm[1]:,.0f}) (target >= 20,000)")
        us = {k: 1e6 / median for k, (median, _) in rates.items()}
        print(f"  per line: {us['cold']:.1f} us cold, {us['warm']:.1f} us warm; a cold line: "
              f"lex {us['lex']:.1f} us, lex+parse {us['parse']:.1f} us, check "
              f"{us['check']:.1f} us")
        print(f"  within the check: Policy.check of its 7 acts {us['policy']:.1f} us when "
              f"remembered (+{us['policy_new']:.1f} us for the one new act); "
              f"Workspace.resolve of its 3 paths {us['resolve']:.1f} us alone (7 lstat "
              f"calls), {us['resolve_shared']:.1f} us within one check (4)")
        overhead_root = Path(temp, "run")
        overhead_root.mkdir()
        shell_one, direct_one, shell_pipe, direct_pipe = bench_overhead(overhead_root, args.runs)
        print(f"echo hello: shell {shell_one:.2f} ms, subprocess {direct_one:.2f} ms, "
              f"overhead {shell_one - direct_one:.2f} ms median (target <= 5 ms)")
        print(f"3-stage pipeline: shell {shell_pipe:.2f} ms, hand-built Popen "
              f"{direct_pipe:.2f} ms, overhead {shell_pipe - direct_pipe:.2f} ms median")


if __name__ == "__main__":
    main()
