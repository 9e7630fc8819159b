"""Loop overhead of `io run` against local OpenAI- and Anthropic-compatible servers.

Measured the way issues 5 and 14 state it:

* per-step gap: `io run` (the real CLI, a child process) drives N steps of one `exec`
  call of ``echo`` each against a loopback fake (tests/fakes/vendor_server.py, streaming
  on). The fake timestamps the last byte of every reply and the arrival of the next
  request; the gap between them is the harness's own work per step: parsing the
  stream, recording the completion, the policy check, running the tool, recording the
  observation and checkpoint, building and sending the next request (over httpx since
  issue 14). Median per-step gap for 20, 100 and 1,000 steps; flat means the last ten
  steps within 1.3x the first ten, and the 1,000-step median within 1.3x the 100-step one.
  Each step's argv differs (``echo hi <n>``) so the stall detector does not stop the
  run; the tool is still one ``echo``.
* the same with the sandbox on (`[sandbox] backend = "auto"`: bubblewrap where it works).
* start-up plus shut-down: wall time of a trivial one-step `io run` (one request
  answered at once with "done") against the OpenAI-compatible fake, median of several,
  measured side by side with a baseline commit (`--baseline REF`, default: the commit
  before the providers moved to httpx), the two alternating run by run in one process.
* `io --help`: wall time of a cold `python -m io_harness_cli --help`, median of 15,
  printed beside the interpreter's own start in the same environment (`python -c pass`,
  which runs the site-packages `.pth` hooks, and `python -I -S -c pass`), so the figure
  can be read on a machine whose interpreter alone takes most of the budget.
* CPU per step: the child's CPU time (its `echo`s included) for 100 steps minus that for
  20, over 80 - a figure other load on the machine disturbs less than wall time.
* peak RSS of the `io run` child (its VmHWM, read as it exits), for every run.
* streaming: 2,000 small text deltas through each provider (bench/provider_stream.py).

Targets: gap <= 3 ms median, flat to step 1,000 (<= 1.3x), start-up + shut-down
<= 0.25 s, `io --help` <= 100 ms, peak RSS <= 60 MiB, streaming <= 20 us a delta.

Run: python bench/loop_overhead.py [--repeat N] [--skip-sandbox] [--skip-stream]
         [--skip-long] [--baseline REF]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from installed import RSS_REPORT  # noqa: E402

from tests.fakes.vendor_server import (  # noqa: E402
    FakeCall,
    RecordedRequest,
    Reply,
    Turn,
    Vendor,
    start_vendor_server,
    tool_results_in,
)

VENDORS: tuple[Vendor, ...] = ("openai", "anthropic")
MIB = 1024 * 1024


def responder(steps: int) -> Callable[[RecordedRequest], Reply]:
    """`steps` steps of one `echo` call each, then a final answer; stateless."""

    def respond(request: RecordedRequest) -> Reply:
        step = tool_results_in(request)
        if step < steps:
            call = FakeCall(f"call_{step}", "exec", json.dumps({"argv": ["echo", "hi", str(step)]}))
            return Turn(tool_calls=(call,), coalesce=True)
        return Turn(text="done", coalesce=True)

    return respond


def write_workspace(root: Path, vendor: str, base_url: str, backend: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "io.toml").write_text(
        f'[provider]\nkind = "{vendor}"\nmodel = "bench-model"\nbase_url = "{base_url}"\n'
        'api_key = "bench-key"\nstream = true\n\n'
        '[policy]\nallow_exec = ["echo*"]\n\n'
        f'[sandbox]\nbackend = "{backend}"\n\n'
        "[budget]\nmax_steps = 2000\n"
    )
    return root


@dataclass
class RunResult:
    child: Child
    gaps: list[float]


def child_env(store: Path) -> dict[str, str]:
    """The child's environment: its own store, plain output, and compiled bytecode.

    An installed package has its ``.pyc`` files written at install time; a checkout run
    with ``PYTHONDONTWRITEBYTECODE`` would compile every module on every start and
    measure the compiler. The children cache bytecode under the bench's temp dir.
    """
    env = dict(os.environ, IO_STORE=str(store), NO_COLOR="1",
               PYTHONPYCACHEPREFIX=str(store.parent / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


# `python -m io_harness_cli` plus an exit hook that reports the process's peak RSS.
# ``ru_maxrss`` cannot be used: Linux carries the parent's high-water mark into a
# child spawned with vfork, so it would report the bench's own memory. VmHWM belongs
# to the child's own address space.
_BOOT = RSS_REPORT + """
import runpy
runpy.run_module("io_harness_cli", run_name="__main__", alter_sys=True)
"""


@dataclass
class Child:
    wall: float
    cpu: float
    peak_rss: int


def run_io(workspace: Path, store: Path, code: Path | None = None) -> Child:
    """Run `io run` to the end: wall and CPU seconds, peak RSS bytes. `code` is the
    source tree the child imports (default: this checkout)."""
    env = child_env(store)
    env["PYTHONPATH"] = str(code or ROOT)
    report = store.parent / "rss.txt"
    env["IO_BENCH_RSS"] = str(report)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", _BOOT, "run", "bench", "-w", str(workspace), "--json"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        # `python -c` puts the working directory first on sys.path: it must be the tree
        # being measured, or the checkout the bench runs from shadows PYTHONPATH.
        cwd=str(code or ROOT),
    )
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"io run failed ({proc.returncode}): {err.decode()[-2000:]}")
    return Child(wall, _child_cpu(), int(report.read_text()) * 1024)


_cpu_seen = 0.0


def _child_cpu() -> float:
    """CPU seconds of the child just reaped (children's times only ever add up)."""
    global _cpu_seen
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = usage.ru_utime + usage.ru_stime
    spent, _cpu_seen = total - _cpu_seen, total
    return spent


def loop_run(
    vendor: Vendor, steps: int, backend: str, tmp: Path, code: Path | None = None
) -> RunResult:
    with start_vendor_server(vendor, responder=responder(steps)) as fake:
        ws = write_workspace(tmp / f"{vendor}-{backend}-{steps}", vendor, fake.base_url, backend)
        child = run_io(ws, tmp / f"state-{code.name if code else 'this'}.db", code)
        if fake.violations:
            raise SystemExit(f"the fake saw broken invariants: {fake.violations[:3]}")
        received = [r.received_at for r in fake.requests]
        answered = fake.answered_at
    assert len(received) == steps + 1, f"{len(received)} requests for {steps} steps"
    gaps = [(received[i + 1] - answered[i]) * 1000.0 for i in range(steps)]
    return RunResult(child, gaps)


def startup(vendor: Vendor, repeat: int, tmp: Path, trees: dict[str, Path]) -> dict[str, list[Child]]:
    """Trivial one-step runs of each source tree in `trees`, alternating run by run
    (after one each that warms the caches and the store's schema)."""
    walls: dict[str, list[Child]] = {name: [] for name in trees}
    with start_vendor_server(vendor, responder=responder(0)) as fake:
        ws = write_workspace(tmp / f"{vendor}-startup", vendor, fake.base_url, "off")
        for name, code in trees.items():
            run_io(ws, tmp / f"state-{name}.db", code)
        for _ in range(repeat):
            for name, code in trees.items():
                walls[name].append(run_io(ws, tmp / f"state-{name}.db", code))
    return walls


def help_walls(code: Path, tmp: Path, repeat: int = 15,
               argv: tuple[str, ...] = ("-m", "io_harness_cli", "--help")) -> list[float]:
    """Wall seconds of cold `python -m io_harness_cli --help` runs of the tree `code`
    (or of `python ARGV`, e.g. the bare interpreter's `-c pass`)."""
    env = child_env(tmp / "state.db")
    env["PYTHONPATH"] = str(code)
    return walls_of([sys.executable, *argv], env, code, repeat)


def walls_of(argv: list[str], env: dict[str, str], cwd: Path, repeat: int) -> list[float]:
    """Wall seconds of `repeat` runs of `argv`, after one warm-up run."""
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True, cwd=cwd)
    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True, cwd=cwd)
        walls.append(time.perf_counter() - start)
    return walls


def export_tree(ref: str, tmp: Path, *, whole: bool = False) -> tuple[str, Path]:
    """The source of commit `ref` exported under `tmp`, and its short hash: the two
    packages, or with `whole` every file of the commit (enough to build and install)."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", ref],
                            capture_output=True, text=True, check=True).stdout.strip()
    target = tmp / (f"tree-{commit}-full" if whole else f"tree-{commit}")
    if not target.exists():
        target.mkdir()
        paths = [] if whole else ["harness_core", "io_harness_cli"]
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, *paths],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return commit, target


def baseline_tree(ref: str | None, tmp: Path) -> tuple[str, Path]:
    """The source of commit `ref` (default: the parent of the commit that deleted the
    standard-library HTTP client), exported under `tmp`; returns its short hash too."""
    if ref is None:
        deleted = subprocess.run(
            ["git", "-C", str(ROOT), "log", "-1", "--format=%H", "--diff-filter=D", "--",
             "harness_core/providers/_transport.py"],
            capture_output=True, text=True, check=True).stdout.strip()
        ref = f"{deleted}^" if deleted else "HEAD~1"
    return export_tree(ref, tmp)


def describe(runs: list[RunResult]) -> str:
    """Figures from the per-step minimum over the runs (noise only ever adds time),
    and the plain median over every step of every run beside it."""
    floor = [min(values) for values in zip(*(r.gaps for r in runs), strict=True)]
    every = [g for r in runs for g in r.gaps]
    first, last = statistics.median(floor[:10]), statistics.median(floor[-10:])
    n = len(floor)
    return (f"median {statistics.median(floor):5.2f} ms (all runs {statistics.median(every):5.2f},"
            f" p90 {_p90(every):5.2f})  steps 1-10 {first:5.2f}  {n - 9}-{n} {last:5.2f}"
            f"  ratio {last / first:4.2f}x")


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]




def gaps_section(args: argparse.Namespace, tmp: Path) -> None:
    backends = ["off"] if args.skip_sandbox else ["off", "auto"]
    for backend in backends:
        label = "unsandboxed" if backend == "off" else "sandbox auto"
        print(f"\nper-step gap, model's last byte -> next request ({label}; target <= 3 ms,"
              " last ten steps <= 1.3x the first ten)")
        lengths = (20, 100) if args.skip_long or backend != "off" else (20, 100, 1000)
        for vendor in VENDORS:
            cpu: dict[int, float] = {}
            medians: dict[int, float] = {}
            for steps in lengths:
                repeat = args.repeat if steps < 1000 else max(1, min(args.repeat, 2))
                runs = [loop_run(vendor, steps, backend, tmp) for _ in range(repeat)]
                rss = max(r.child.peak_rss for r in runs)
                cpu[steps] = min(r.child.cpu for r in runs)
                medians[steps] = statistics.median(
                    min(v) for v in zip(*(r.gaps for r in runs), strict=True))
                print(f"  {vendor:<10}{steps:>5} steps  {describe(runs)}"
                      f"  peak RSS {rss / MIB:4.1f} MiB")
            # CPU is less disturbed by other load than wall time: what 80 more steps
            # cost the child (and its `echo`s), per step.
            print(f"  {vendor:<10}CPU per step (100-step run minus 20-step run, / 80):"
                  f" {(cpu[100] - cpu[20]) / 80 * 1000:.2f} ms")
            if 1000 in medians:
                print(f"  {vendor:<10}1,000-step median / 100-step median:"
                      f" {medians[1000] / medians[100]:.2f}x (flat: <= 1.3x)")
                # The same question in CPU time, which load disturbs less: what each of
                # steps 101-1,000 cost against each of steps 21-100.
                late = (cpu[1000] - cpu[100]) / 900
                print(f"  {vendor:<10}CPU per step, steps 101-1,000: {late * 1000:.2f} ms"
                      f" ({late / ((cpu[100] - cpu[20]) / 80):.2f}x steps 21-100)")


_PROVIDER_BOOT = """
import time
start = time.process_time()
from harness_core.clock import SystemClock
from harness_core.providers import ProviderConfig, build_provider
config = ProviderConfig(kind="openai", model="m", api_key="k", base_url="http://127.0.0.1:9/v1")
build_provider(config, env={}, clock=SystemClock()).close()
print(time.process_time() - start)
"""


def provider_startup(trees: dict[str, Path], repeat: int = 15) -> None:
    """CPU time of import + build + close of an OpenAI provider (plain-http URL) in a
    fresh interpreter per tree, alternating: what the providers alone add to a run's
    start-up (CPU time, which other load on the machine inflates less than wall time)."""
    print("\nHTTP provider start-up, CPU of import and build in a fresh interpreter, median"
          f" of {repeat}, the trees alternating")
    walls: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(repeat):
        for name, code in trees.items():
            env = dict(os.environ, PYTHONPATH=str(code))
            out = subprocess.run([sys.executable, "-c", _PROVIDER_BOOT], env=env, cwd=code,
                                 capture_output=True, text=True, check=True).stdout
            walls[name].append(float(out))
    for name, values in walls.items():
        print(f"  {name:<18} median {statistics.median(values) * 1000:.0f} ms"
              f"  best {min(values) * 1000:.0f} ms")


def compare_gaps(tmp: Path, trees: dict[str, Path], repeat: int) -> None:
    """The 100-step unsandboxed gap of each tree, runs alternating, in this one process."""
    print("\nper-step gap, 100 steps, unsandboxed, side by side (OpenAI-compatible fake)")
    runs: dict[str, list[RunResult]] = {name: [] for name in trees}
    for _ in range(repeat):
        for name, code in trees.items():
            runs[name].append(loop_run("openai", 100, "off", tmp, code))
    for name, results in runs.items():
        print(f"  {name:<18} {describe(results)}")


def startup_section(args: argparse.Namespace, tmp: Path) -> None:
    commit, baseline = baseline_tree(args.baseline, tmp)
    if args.against is None:
        trees = {"this tree": ROOT, f"baseline {commit}": baseline}
    else:
        ours, code = export_tree(args.against, tmp)
        trees = {f"commit {ours}": code, f"baseline {commit}": baseline}
    if args.compare_gaps:
        compare_gaps(tmp, trees, args.repeat)
    extra = {f"commit {c}": path for c, path in (export_tree(r, tmp) for r in args.also)}
    provider_startup({**trees, **extra})
    print(f"\nstart-up + shut-down, one-step `io run` against the OpenAI-compatible fake"
          f" (target <= 0.25 s), side by side with {commit}")
    children = startup("openai", max(9, args.repeat * 3), tmp, trees)
    for name, runs in children.items():
        walls = [c.wall for c in runs]
        print(f"  {name:<18} wall median {statistics.median(walls):.3f} s"
              f"  best {min(walls):.3f} s  CPU median"
              f" {statistics.median(c.cpu for c in runs):.3f} s  peak RSS"
              f" {max(c.peak_rss for c in runs) / MIB:4.1f} MiB (target <= 60 MiB)")
    ours, theirs = (statistics.median(c.wall for c in runs) for runs in children.values())
    ours_cpu, theirs_cpu = (statistics.median(c.cpu for c in runs) for runs in children.values())
    print(f"  ratio this tree / baseline: wall {ours / theirs:.2f}x, CPU {ours_cpu / theirs_cpu:.2f}x")
    print("\n`io --help`, cold, median of 15, the trees alternating (target <= 100 ms),"
          " beside the interpreter alone in the same environment")
    bare = {"python -c pass (site, .pth files)": ("-c", "pass"),
            "python -I -S -c pass (bare)": ("-I", "-S", "-c", "pass")}
    helps: dict[str, list[float]] = {name: [] for name in (*trees, *bare)}
    for _ in range(5):
        for name, code in trees.items():
            helps[name].extend(help_walls(code, tmp, repeat=3))
        for name, argv in bare.items():
            helps[name].extend(help_walls(ROOT, tmp, repeat=3, argv=argv))
    for name, walls in helps.items():
        print(f"  {name:<36} median {statistics.median(walls) * 1000:.0f} ms"
              f"  best {min(walls) * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure")
    parser.add_argument("--skip-sandbox", action="store_true")
    parser.add_argument("--skip-stream", action="store_true")
    parser.add_argument("--skip-long", action="store_true", help="no 1,000-step runs")
    parser.add_argument("--skip-gaps", action="store_true", help="start-up and --help only")
    parser.add_argument("--compare-gaps", action="store_true",
                        help="also time the 100-step gap of the baseline, side by side")
    parser.add_argument("--also", action="append", default=[],
                        help="another commit for the provider start-up figure")
    parser.add_argument("--against", default=None,
                        help="time this commit instead of the working tree (isolates a change)")
    parser.add_argument("--baseline", default=None,
                        help="commit to time start-up against (default: the one before httpx)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {load:.1f};"
          f" {args.repeat} runs per figure")
    with tempfile.TemporaryDirectory(prefix="io-bench-") as name:
        tmp = Path(name)
        if not args.skip_gaps:
            gaps_section(args, tmp)
        startup_section(args, tmp)
    if not args.skip_stream:
        from provider_stream import bench_vendor

        print("\nstreaming 2,000 small deltas (target <= 20 us/delta)")
        for vendor in ("anthropic", "openai", "openrouter", "openai-responses"):
            best_us, median_us, parse_us = bench_vendor(vendor, 2000, 9)
            print(f"  {vendor:<16} best {best_us:5.2f} us  median {median_us:5.2f} us"
                  f"  parser only {parse_us:5.2f} us")


if __name__ == "__main__":
    main()
