"""Start-up, per-step gap and memory of `io run`, side by side with a baseline (issue 24).

One run measures, for this tree and a baseline tree (`--baseline REF`, default: main
before the plain io.toml validator landed), the trees alternating run by run so both see
the same load. Each tree is timed as the README installs it: built into a wheel and
installed into a venv of its own (bench/installed.py), started as its console script
starts, not as a checkout on PYTHONPATH under the developer's site-packages:

* start-up + shut-down: wall and CPU of a one-step `io run` (one request, answered at
  once) against the loopback OpenAI-compatible fake (tests/fakes/vendor_server.py);
* with `--codex`: a one-step `codex exec` of Codex CLI (the npm package @openai/codex at
  a pinned version, installed into a cache folder on first use; its native Rust binary
  is timed, not the node wrapper) against the same fake, speaking the Responses wire
  (bench/codex_cli.py), its runs alternating with io's; wall and CPU the same way, and
  io / Codex beside them (target: io no slower). Each Codex run must send exactly one
  request; one untimed run under strace checks that Codex reaches nothing but the fake;
* `io --help` beside `python3 -c pass` in the same environment (target: <= 1.8x);
* with `--callgrind`: instructions executed (valgrind's callgrind, PYTHONHASHSEED=0) by
  the one-step run and by `--help` - a count the machine's load does not change, for
  before/after comparisons on a shared machine;
* the per-step gap (model's last byte -> next request) at 20, 100 and 1,000 steps of one
  `echo` each, unsandboxed and with the native sandbox (bubblewrap), this tree only;
* peak RSS (VmHWM) of a 20-step run.

Targets (a quiet machine): one-step run <= 0.25 s, peak RSS of a 20-step run <= 36 MiB,
gap <= 2 ms unsandboxed and <= 2.8 ms sandboxed, `io --help` <= 1.8x `python3 -c pass`.

Run: python bench/startup.py [--repeat N] [--baseline REF] [--callgrind] [--skip-long]
         [--skip-sandbox] [--skip-gaps] [--codex [--codex-cache DIR]] [--python PATH]

`--python` installs io with another interpreter of the same minor version (e.g. the
distribution's /usr/bin/python3.11 beside pyenv's): the first line of the output says
which one ran and how its libpython is linked, which moves start-up by about a fifth.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from codex_cli import CODEX_CACHE, CODEX_VERSION, Codex, CodexFake, install_codex  # noqa: E402
from installed import BOOT, Installed, install, interpreter_note, working_tree  # noqa: E402
from loop_overhead import (  # noqa: E402
    MIB,
    ROOT,
    Child,
    RunResult,
    export_tree,
    responder,
    walls_of,
    write_workspace,
)
from loop_overhead import _child_cpu as child_cpu  # noqa: E402

from tests.fakes.vendor_server import start_vendor_server  # noqa: E402

Row = tuple[str, str, str, str]  # figure, this tree, baseline, target


def default_baseline() -> str:
    """The parent of the commit that added the generated validator (main before #24)."""
    added = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%H", "--diff-filter=A", "--",
         "harness_core/config/_plain.py"], capture_output=True, text=True, check=True,
    ).stdout.strip()
    return f"{added}^" if added else "HEAD~1"


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms (best {min(values) * 1000:.0f})"


def run_installed(target: Installed, workspace: Path, store: Path) -> Child:
    """One `io run` of the installed tree to the end: wall and CPU seconds, peak RSS."""
    env = target.env(store)
    report = store.parent / "rss.txt"
    env["IO_BENCH_RSS"] = str(report)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(target.python), "-c", BOOT, "run", "bench", "-w", str(workspace), "--json"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=target.cwd)
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"io run failed ({proc.returncode}): {err.decode()[-2000:]}")
    return Child(wall, child_cpu(), int(report.read_text()) * 1024)


def startup_rows(trees: dict[str, Installed], tmp: Path, repeat: int,
                 codex: Codex | None) -> tuple[list[Row], str]:
    """One-step runs of each tree (and of Codex), alternating run by run after one
    untimed run each that warms the caches and the store; the rows, and a note on Codex."""
    runs: dict[str, list[Child]] = {name: [] for name in trees}
    theirs: list[Child] = []
    with ExitStack() as stack:
        fake = stack.enter_context(start_vendor_server("openai", responder=responder(0)))
        ws = write_workspace(tmp / "openai-startup", "openai", fake.base_url, "off")
        for target in trees.values():
            run_installed(target, ws, tmp / f"state-{target.venv.name}.db")
        if codex is not None:
            other = stack.enter_context(CodexFake(codex, tmp / "codex-ws"))
            other.run()
            codex_rss, checked = other.check_run(tmp)
        for _ in range(repeat):
            for name, target in trees.items():
                runs[name].append(run_installed(target, ws, tmp / f"state-{target.venv.name}.db"))
            if codex is not None:
                theirs.append(other.run())
    ours, base = runs.values()
    rows: list[Row] = [
        ("one-step `io run`, wall", _ms([c.wall for c in ours]), _ms([c.wall for c in base]),
         "<= 250 ms"),
        ("one-step `io run`, CPU", _ms([c.cpu for c in ours]), _ms([c.cpu for c in base]), ""),
        ("one-step `io run`, peak RSS", f"{max(c.peak_rss for c in ours) / MIB:.1f} MiB",
         f"{max(c.peak_rss for c in base) / MIB:.1f} MiB", ""),
    ]
    if codex is None:
        return rows, ""
    rows += codex_rows(codex, ours, base, theirs, codex_rss)
    return rows, (f"{codex.label} timed: {' '.join(codex.argv)}; every run sent one request"
                  f" to the fake; network: {checked}")


def codex_rows(codex: Codex, ours: list[Child], base: list[Child], theirs: list[Child],
               rss: int | None) -> list[Row]:
    label = f"one-step `codex exec` ({codex.label})"
    wall = statistics.median(c.wall for c in theirs)
    cpu = statistics.median(c.cpu for c in theirs)

    def ratio(runs: list[Child], field: str, against: float) -> str:
        return f"{statistics.median(getattr(c, field) for c in runs) / against:.2f}x"

    return [
        (f"{label}, wall", _ms([c.wall for c in theirs]), "(same runs)", ""),
        (f"{label}, CPU", _ms([c.cpu for c in theirs]), "(same runs)", ""),
        (f"{label}, peak RSS", "n/a" if rss is None else f"{rss / MIB:.1f} MiB", "", ""),
        ("one-step `io run` / `codex exec`, wall", ratio(ours, "wall", wall),
         ratio(base, "wall", wall), "<= 1.00x"),
        ("one-step `io run` / `codex exec`, CPU", ratio(ours, "cpu", cpu),
         ratio(base, "cpu", cpu), ""),
    ]


def help_rows(trees: dict[str, Installed], tmp: Path, repeat: int) -> list[Row]:
    """`io --help` of each installed tree (its console script, as a user types it) beside
    the same interpreter's `python3 -c pass`."""
    helps: dict[str, list[float]] = {name: [] for name in trees}
    bare: list[float] = []
    for _ in range(repeat):
        for name, target in trees.items():
            env = target.env(tmp / "state-help.db")
            helps[name].extend(walls_of([str(target.venv / "bin" / "io"), "--help"], env,
                                      target.cwd, 3))
            bare.extend(walls_of([str(target.python), "-c", "pass"], env, target.cwd, 3))
    ours, base = helps.values()
    pass_median = statistics.median(bare)
    return [
        ("`io --help`, wall", _ms(ours), _ms(base), ""),
        ("`python3 -c pass`, wall (same run)", _ms(bare), _ms(bare), ""),
        ("`io --help` / `python3 -c pass`", f"{statistics.median(ours) / pass_median:.2f}x",
         f"{statistics.median(base) / pass_median:.2f}x", "<= 1.8x"),
    ]


def _instructions(argv: list[str], env: dict[str, str], cwd: Path, out: Path) -> int:
    """Instructions callgrind counts for one process (its children not followed)."""
    result = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        env={**env, "PYTHONHASHSEED": "0"}, cwd=cwd, capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", result.stderr)
    if result.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed ({result.returncode}): {result.stderr[-1500:]}")
    return int(found.group(1))


def callgrind_rows(trees: dict[str, Installed], tmp: Path) -> list[Row]:
    counts: dict[str, list[int]] = {}
    with start_vendor_server("openai", responder=responder(0)) as fake:
        ws = write_workspace(tmp / "callgrind", "openai", fake.base_url, "off")
        for name, target in trees.items():
            env = target.env(tmp / f"state-cg-{target.venv.name}.db")
            env["IO_BENCH_RSS"] = str(tmp / "rss-cg.txt")
            run = [str(target.python), "-c", BOOT, "run", "bench", "-w", str(ws), "--json"]
            helps = [str(target.python), "-c", BOOT, "--help"]
            subprocess.run(run, env=env, cwd=target.cwd, capture_output=True, check=True)  # warm
            counts[name] = [_instructions(run, env, target.cwd, tmp / "cg.out"),
                            _instructions(helps, env, target.cwd, tmp / "cg.out")]
        first = next(iter(trees.values()))
        bare = _instructions([str(first.python), "-c", "pass"], first.env(tmp / "s.db"),
                             first.cwd, tmp / "cg.out")
    ours, base = counts.values()
    return [
        ("one-step `io run`, instructions (callgrind)", f"{ours[0] / 1e6:,.0f} M",
         f"{base[0] / 1e6:,.0f} M", f"{ours[0] / base[0]:.2f}x baseline"),
        ("`io --help`, instructions (callgrind)", f"{ours[1] / 1e6:,.0f} M",
         f"{base[1] / 1e6:,.0f} M", f"{ours[1] / bare:.2f}x `-c pass` ({bare / 1e6:,.0f} M)"),
    ]


def loop_installed(target: Installed, steps: int, backend: str, tmp: Path) -> RunResult:
    """`loop_run` of the installed tree: a run of `steps` steps of one `echo` each; the
    child's figures and the per-step gaps the fake saw."""
    with start_vendor_server("openai", responder=responder(steps)) as fake:
        ws = write_workspace(tmp / f"openai-{backend}-{steps}", "openai", fake.base_url, backend)
        child = run_installed(target, ws, tmp / f"state-{target.venv.name}.db")
        if fake.violations:
            raise SystemExit(f"the fake saw broken invariants: {fake.violations[:3]}")
        received = [r.received_at for r in fake.requests]
        answered = fake.answered_at
    assert len(received) == steps + 1, f"{len(received)} requests for {steps} steps"
    return RunResult(child, [(received[i + 1] - answered[i]) * 1000.0 for i in range(steps)])


def gap_rows(target: Installed, tmp: Path, repeat: int, long: bool,
             sandbox: bool) -> list[Row]:
    rows: list[Row] = []
    backends = [("unsandboxed", "off", "<= 2 ms")]
    if sandbox:
        backends.append(("native sandbox", "native", "<= 2.8 ms"))
    for label, backend, target_figure in backends:
        for steps in (20, 100, 1000) if long else (20, 100):
            runs: list[RunResult] = [loop_installed(target, steps, backend, tmp)
                                     for _ in range(repeat if steps < 1000 else 2)]
            floor = [min(v) for v in zip(*(r.gaps for r in runs), strict=True)]
            rows.append((f"per-step gap, {steps} steps, {label}",
                         f"{statistics.median(floor):.2f} ms", "", target_figure))
            if steps == 20 and backend == "off":
                rss = max(r.child.peak_rss for r in runs)
                rows.append(("peak RSS, 20-step run", f"{rss / MIB:.1f} MiB", "", "<= 36 MiB"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure")
    parser.add_argument("--baseline", default=None, help="commit to compare with")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions")
    parser.add_argument("--skip-long", action="store_true", help="no 1,000-step runs")
    parser.add_argument("--skip-sandbox", action="store_true", help="no sandboxed gaps")
    parser.add_argument("--skip-gaps", action="store_true", help="no per-step gaps")
    parser.add_argument("--python", type=Path, default=None,
                        help="the interpreter io is installed with (default: this one)")
    parser.add_argument("--codex", action="store_true",
                        help=f"also time Codex CLI {CODEX_VERSION} (installed with npm if needed)")
    parser.add_argument("--codex-cache", type=Path, default=CODEX_CACHE,
                        help="where --codex installs Codex CLI (default: %(default)s)")
    args = parser.parse_args()
    codex = install_codex(args.codex_cache.expanduser().resolve()) if args.codex else None
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="io-startup-") as name:
        tmp = Path(name)
        commit, baseline = export_tree(args.baseline or default_baseline(), tmp, whole=True)
        trees = {"this tree": install(working_tree(tmp), tmp / "venv-this", args.python),
                 f"baseline {commit}": install(baseline, tmp / f"venv-{commit}", args.python)}
        python_note = interpreter_note(trees["this tree"].python)
        rows, codex_note = startup_rows(trees, tmp, max(9, args.repeat * 2), codex)
        rows += help_rows(trees, tmp, args.repeat)
        if args.callgrind:
            rows += callgrind_rows(trees, tmp)
        if not args.skip_gaps:
            rows += gap_rows(trees["this tree"], tmp, args.repeat, not args.skip_long,
                             not args.skip_sandbox)
    end = os.getloadavg()
    print(f"{python_note}, {os.cpu_count()} cpus, load average"
          f" {load[0]:.1f} at the start and {end[0]:.1f} at the end; {args.repeat} runs a"
          " figure (medians; per-step gaps are the median of each step's minimum)")
    print(f"{codex_note}\n" if codex_note else "")
    print(f"| figure | this tree | baseline {commit} | target |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
