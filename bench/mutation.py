"""Mutation testing of the run loop's stops, the policy, the store and the workspace,
with mutmut, one target at a time, each with the tests that exercise it and a time box.

Not a test: it prints figures (mutants killed, survived, timed out, not reached in the
time box) for bench/README.md. Each target runs in a fresh copy of the checkout (mutmut
writes a `mutants/` tree beside the sources), so the working tree is never touched.

    python bench/mutation.py                      # every target, 15 minutes each
    python bench/mutation.py policy store --minutes 5
    python bench/mutation.py workspace --survivors  # also list the surviving mutants

On 2 shared cores a full pass is slow (about 1-3 mutants a second): the selections
below keep each target to the tests that reach it, and the time box bounds the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TARGETS: dict[str, tuple[list[str], list[str]]] = {
    # name: (sources to mutate, the tests that exercise them)
    "run": (["harness_core/run/_progress.py", "harness_core/run/_budget.py",
             "harness_core/run/_context.py"],
            ["tests/unit/run/test_stops.py", "tests/unit/run/test_progress_context.py",
             "tests/unit/session/test_stall_resume.py",
             "tests/unit/session/test_context_budget.py"]),
    "policy": (["harness_core/policy"], ["tests/unit/policy"]),
    "store": (["harness_core/store/_check.py", "harness_core/store/_codec.py"],
              ["tests/unit/store/test_check_faults.py", "tests/unit/store/test_self_check.py",
               "tests/unit/store/test_store.py",
               "tests/unit/run/test_odd_input.py"]),
    "workspace": (["harness_core/workspace.py"],
                  ["tests/unit/workspace", "tests/unit/run/test_odd_input.py"]),
}

_STATUS = {0: "survived", 1: "killed", 3: "killed", 5: "no tests", 33: "skipped",
           34: "skipped", 35: "suspicious", 36: "timeout", 24: "timeout", -24: "timeout",
           152: "timeout", 255: "timeout", -11: "segfault"}


def _config(sources: list[str], tests: list[str]) -> str:
    quoted = ", ".join(f'"{p}"' for p in sources)
    selection = ", ".join(f'"{t}"' for t in [*tests, "-x", "-q", "-p", "no:cacheprovider"])
    copied = ", ".join(f'"{p}"' for p in ("harness_core", "io_harness_cli", "tests",
                                            "examples", "docs", "io.toml.example"))
    return (f"\n[tool.mutmut]\nsource_paths = [{quoted}]\n"
            f"pytest_add_cli_args_test_selection = [{selection}]\n"
            f"also_copy = [{copied}]\n")


def _copy_checkout(into: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _tally(work: Path) -> tuple[Counter[str], list[str]]:
    counts: Counter[str] = Counter()
    survivors: list[str] = []
    for meta in (work / "mutants").rglob("*.meta"):
        data = json.loads(meta.read_text())
        for key, code in data.get("exit_code_by_key", {}).items():
            status = "not reached" if code is None else _STATUS.get(code, "suspicious")
            counts[status] += 1
            if status == "survived":
                survivors.append(key)
    return counts, sorted(survivors)


def run_target(name: str, minutes: float, show: bool) -> Counter[str]:
    sources, tests = TARGETS[name]
    with tempfile.TemporaryDirectory(prefix=f"io-mutation-{name}-") as tmp:
        work = Path(tmp)
        _copy_checkout(work)
        with open(work / "pyproject.toml", "a", encoding="utf-8") as handle:
            handle.write(_config(sources, tests))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        started = time.monotonic()
        try:
            subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", "2"],
                           cwd=work, env=env, capture_output=True, timeout=minutes * 60)
            boxed = False
        except subprocess.TimeoutExpired:
            boxed = True
        elapsed = time.monotonic() - started
        counts, survivors = _tally(work)
    total = sum(counts.values())
    print(f"{name}: {total} mutants in {elapsed:.0f}s{' (time box hit)' if boxed else ''}: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if show:
        for key in survivors:
            print(f"  survived: {key}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"of: {', '.join(TARGETS)} (default all)")
    parser.add_argument("--minutes", type=float, default=15.0, help="time box per target")
    parser.add_argument("--survivors", action="store_true", help="list surviving mutants")
    args = parser.parse_args()
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; pick from {', '.join(TARGETS)}")
    for name in args.targets or list(TARGETS):
        run_target(name, args.minutes, args.survivors)


if __name__ == "__main__":
    main()
