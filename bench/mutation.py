"""Mutation testing of the run loop's stops, the policy, the store and the workspace,
with mutmut, one target at a time, each with the tests that exercise it and a time box.

Not a test: it prints figures (mutants killed, survived, timed out, not reached in the
time box) for bench/README.md. A target is a few groups (sources and the tests that
reach them); each group runs in a fresh copy of the checkout (mutmut writes a
`mutants/` tree beside the sources), so the working tree is never touched. Survivors
read and judged equivalent are listed in bench/mutation_equivalent.txt and counted apart.

    python bench/mutation.py                      # every target, 15 minutes each
    python bench/mutation.py policy store --minutes 5
    python bench/mutation.py workspace --survivors  # also list the surviving mutants
    python bench/mutation.py store --only _steps --keep  # one group, its copy kept

On 2 shared cores a full pass is slow (about 1-3 mutants a second): the selections
below keep each target to the tests that reach it, and the time box bounds the rest.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

Group = tuple[list[str], list[str]]
"""(sources to mutate, the tests that reach them): one mutmut pass each, so a mutant runs
only the tests of its own file's selection (and of those, only the ones mutmut saw call
the mutated function)."""

_RUN = "harness_core/run/"
_STORE = "harness_core/store/"
_STORE_TESTS = ["tests/unit/store/test_store.py"]

TARGETS: dict[str, list[Group]] = {
    "run": [
        ([f"{_RUN}_progress.py", f"{_RUN}_budget.py", f"{_RUN}_context.py"],
         ["tests/unit/run/test_stops.py", "tests/unit/run/test_progress_context.py",
          "tests/unit/session/test_stall_resume.py",
          "tests/unit/session/test_context_budget.py", "tests/unit/run/test_mutants_context.py"]),
        ([f"{_RUN}_loop.py", f"{_RUN}_ask.py", f"{_RUN}_act.py", f"{_RUN}_verify.py",
          f"{_RUN}_stop.py", f"{_RUN}_drive_help.py", f"{_RUN}_ledger.py",
          f"{_RUN}_parts.py", f"{_RUN}_open.py"],
         ["tests/unit/run/test_stops.py", "tests/unit/session/test_stall_resume.py",
          "tests/unit/session/test_plan_and_questions.py", "tests/unit/run/test_gate_inputs.py",
          "tests/unit/run/test_mutants_loop.py", "tests/unit/run/test_mutants_loop_resume.py",
          "tests/unit/run/test_mutants_loop_calls.py", "tests/unit/run/test_mutants_loop_gates.py",
          "tests/unit/run/test_mutants_loop_steps.py", "tests/unit/run/test_mutants_loop_drive.py",
          "tests/unit/run/test_mutants_loop_budget.py", "tests/unit/run/test_mutants_loop_tree.py",
          "tests/unit/run/test_mutants_loop_complete.py", "tests/unit/run/test_mutants_loop_mcp.py",
          "tests/unit/run/test_mutants_phases_end.py",
          "tests/unit/run/test_mutants_phases_verify.py",
          "tests/unit/run/test_mutants_phases_act.py",
          "tests/unit/run/test_mutants_phases_compact.py",
          "tests/unit/run/test_mutants_phases_snapshots.py",
          "tests/unit/run/test_mutants_phases_child.py",
          "tests/unit/run/test_mutants_phases_steps.py",
          "tests/unit/run/test_mutants_phases_ask.py",
          "tests/unit/run/test_mutants_phases_mcp.py",
          "tests/unit/run/test_mutants_phases_gates.py",
          "tests/integration/agents/test_tree.py"]),
    ],
    "policy": [(["harness_core/policy"], ["tests/unit/policy"])],
    "store": [
        ([f"{_STORE}_check.py", f"{_STORE}_codec.py"],
         ["tests/unit/store/test_check_faults.py", "tests/unit/store/test_self_check.py",
          *_STORE_TESTS, "tests/unit/run/test_odd_input.py",
          "tests/unit/store/test_mutants_check.py", "tests/unit/store/test_mutants_codec.py",
          "tests/unit/store/test_mutants_more.py", "tests/unit/store/test_mutants_check_more.py"]),
        ([f"{_STORE}_steps.py", f"{_STORE}_checkpoints.py", f"{_STORE}_records.py"],
         [*_STORE_TESTS, "tests/unit/store/test_typed_records.py",
          "tests/unit/store/test_mutants_steps.py", "tests/unit/store/test_mutants_more.py",
          "tests/unit/store/test_mutants_records_more.py"]),
        ([f"{_STORE}_runs.py", f"{_STORE}_store.py"],
         [*_STORE_TESTS, "tests/unit/store/test_mutants_runs.py",
          "tests/unit/store/test_mutants_more.py"]),
        (["harness_core/_held_files.py"], ["tests/unit/store/test_store_in_process.py"]),
        ([f"{_STORE}_sessions.py", f"{_STORE}_questions.py"],
         ["tests/unit/session/test_session_api.py",
          "tests/unit/store/test_mutants_sessions.py", "tests/unit/store/test_mutants_more.py",
          "tests/unit/store/test_mutants_sessions_more.py"]),
    ],
    "sandbox": [(["harness_core/sandbox/_placeholders.py"],
                 ["tests/unit/sandbox/test_ledger_residue.py",
                  "tests/unit/sandbox/test_placeholders.py"])],
    "workspace": [(["harness_core/workspace.py"],
                   ["tests/unit/workspace", "tests/unit/run/test_odd_input.py"])],
}

_EQUIVALENT = Path(__file__).with_name("mutation_equivalent.txt")
"""Survivors read and classified by hand (`key  class: why`, one a line): counted apart."""

_STATUS = {0: "survived", 1: "killed", 3: "killed", 5: "no tests", 33: "no tests",
           34: "skipped", 35: "suspicious", 36: "timeout", 24: "timeout", -24: "timeout",
           152: "timeout", 255: "timeout", -11: "segfault", -9: "segfault"}
"""mutmut's exit codes; "no tests": no selected test calls the mutated function."""


def _config(sources: list[str], tests: list[str]) -> str:
    quoted = ", ".join(f'"{p}"' for p in sources)
    present = [t for t in tests if (ROOT / t).exists()]
    selection = ", ".join(f'"{t}"' for t in [*present, "-x", "-q", "-p", "no:cacheprovider"])
    copied = ", ".join(f'"{p}"' for p in ("harness_core", "io_harness_cli", "tests",
                                            "examples", "docs", "io.toml.example"))
    # `-n 0`: the suite's addopts ask for xdist workers, but mutmut must see each test
    # call the mutated functions in its own process (and a mutant is one process).
    return (f"\n[tool.mutmut]\nsource_paths = [{quoted}]\n"
            f"pytest_add_cli_args_test_selection = [{selection}]\n"
            f'pytest_add_cli_args = ["-n", "0"]\n'
            # a mutant that loops forever is stopped at 4x its tests' time, not mutmut's 15x
            f"timeout_multiplier = 4\n"
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
            status = "not run in the box" if code is None else _STATUS.get(code, "suspicious")
            counts[status] += 1
            if status == "survived":
                survivors.append(key)
    return counts, sorted(survivors)


def _classified() -> dict[str, str]:
    if not _EQUIVALENT.exists():
        return {}
    known: dict[str, str] = {}
    for line in _EQUIVALENT.read_text(encoding="utf-8").splitlines():
        key, _, why = line.partition(" ")
        if key and not key.startswith("#"):
            known[key] = why.strip()
    return known


_SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|FROM|WHERE|VALUES|ORDER BY|LIMIT|JOIN|"
                  r"COALESCE|CREATE|PRAGMA)\b")
_COLUMNS = re.compile(r"^\s*\"\s*\(?(\s*\w+\s*,)+\s*(\w+\s*)?\)?\s*\"")
"""A string literal of column names only (`" run_id, step_index,"`, `" depth, agent)"`), not
prose with a comma."""
_STRICT = re.compile(r",?\s*strict=\w*|,\s*(?=\))")


@functools.cache
def _functions(path: Path) -> dict[str, str]:
    """Every function of a mutated module (mutmut writes each mutant as one), by name."""
    if not path.exists():
        return {}
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    return {node.name: "\n".join(lines[node.lineno - 1:node.end_lineno])
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def _changed_lines(work: Path, key: str) -> tuple[list[str], list[str]]:
    """The lines a mutant changes: (original, mutated), read from mutmut's own tree."""
    module, _, name = key.rpartition(".")
    functions = _functions(work / "mutants" / (module.replace(".", "/") + ".py"))
    original = functions.get(name.rsplit("__mutmut_", 1)[0] + "__mutmut_orig", "")
    mutated = functions.get(name, "")
    diff = [line for line in difflib.unified_diff(original.splitlines()[1:],
                                                  mutated.splitlines()[1:], lineterm="", n=0)
            if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    return ([line[1:] for line in diff if line[:1] == "-"],
            [line[1:] for line in diff if line[:1] == "+"])


def _auto_class(work: Path, key: str) -> str | None:
    """Survivors judged by rule, not by hand: the letter case of SQL text (SQLite and
    PostgreSQL fold unquoted keywords and names), and `zip(..., strict=True)` loosened
    where both sides come from one statement (a row and its column names)."""
    before, after = _changed_lines(work, key)
    if not before or len(before) != len(after):
        return None
    pairs = list(zip(before, after, strict=True))
    if all(a != b and a.lower() == b.lower() and (_SQL.search(a) or _COLUMNS.match(a))
           for a, b in pairs):
        return "equivalent: letter case of SQL text"
    if all("strict=True" in a and _STRICT.sub("", a) == _STRICT.sub("", b)
           for a, b in pairs):
        return "equivalent: zip strict= where both sides have one length by construction"
    return None


def run_group(sources: list[str], tests: list[str], minutes: float, keep: bool = False
              ) -> tuple[Counter[str], list[str], dict[str, str], bool]:
    """One mutmut pass over `sources` with `tests`, in a throw-away copy of the checkout
    (`keep`: left in place, its path printed, for `mutmut show` on the survivors)."""
    work = Path(tempfile.mkdtemp(prefix="io-mutation-"))
    if keep:
        print(f"  kept: {work}", flush=True)
    try:
        _copy_checkout(work)
        with open(work / "pyproject.toml", "a", encoding="utf-8") as handle:
            handle.write(_config(sources, tests))
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "IO_TEST_POSTGRES_URL")}
        # Each mutant is a pytest session with its own base temp; one killed at its
        # time box keeps its lock and pytest leaves the folder for three days. Thousands
        # of them filled the disk here: they go in the copy's folder, removed below.
        (work / "tmp").mkdir()
        env["TMPDIR"] = str(work / "tmp")
        # its own process group, so the time box ends mutmut's forked children too
        child = subprocess.Popen([sys.executable, "-m", "mutmut", "run", "--max-children", "2"],
                                 cwd=work, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            child.wait(timeout=minutes * 60)
            boxed = False
        except subprocess.TimeoutExpired:
            boxed = True
        finally:
            if child.poll() is None or boxed:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        counts, survivors = _tally(work)
        auto = {key: why for key in survivors if (why := _auto_class(work, key))}
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return counts, survivors, auto, boxed


def run_target(name: str, minutes: float, show: bool, only: str | None = None,
               keep: bool = False) -> Counter[str]:
    """Every group of `name`, each with its own time box; prints a line per group and
    the target's total (survivors listed in bench/mutation_equivalent.txt counted as
    `equivalent`, not `survived`)."""
    known = _classified()
    total: Counter[str] = Counter()
    for sources, tests in TARGETS[name]:
        if only is not None and not any(only in source for source in sources):
            continue
        started = time.monotonic()
        counts, survivors, auto, boxed = run_group(sources, tests, minutes, keep)
        judged = {**auto, **{k: known[k] for k in survivors if k in known}}
        classified = list(judged)
        if classified:  # counted by their class: equivalent, wording, unreachable, ...
            counts["survived"] -= len(classified)
            counts.update(judged[key].partition(":")[0] for key in classified)
        total.update(counts)
        label = ", ".join(s.removeprefix("harness_core/") for s in sources)
        print(f"{name} [{label}]: {sum(counts.values())} mutants in"
              f" {time.monotonic() - started:.0f}s{' (time box hit)' if boxed else ''}: "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v), flush=True)
        if show:
            for key in survivors:
                print(f"  survived: {key}" + (f"  ({judged[key]})" if key in judged else ""),
                      flush=True)
    print(f"{name}: {sum(total.values())} mutants: "
          + ", ".join(f"{k} {v}" for k, v in sorted(total.items()) if v), flush=True)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"of: {', '.join(TARGETS)} (default all)")
    parser.add_argument("--minutes", type=float, default=15.0, help="time box per target")
    parser.add_argument("--survivors", action="store_true", help="list surviving mutants")
    parser.add_argument("--only", help="only the groups whose sources contain this text")
    parser.add_argument("--keep", action="store_true",
                        help="keep each group's copy (for `mutmut show KEY` there)")
    args = parser.parse_args()
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; pick from {', '.join(TARGETS)}")
    for name in args.targets or list(TARGETS):
        run_target(name, args.minutes, args.survivors, args.only, args.keep)


if __name__ == "__main__":
    main()
