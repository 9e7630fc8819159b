"""Loop overhead of `io run` against local OpenAI- and Anthropic-compatible servers.

Measured the way issue 5 states it:

* per-step gap: `io run` (the real CLI, a child process) drives N steps of one `exec`
  call of ``echo`` each against a loopback fake (tests/fakes/vendor_server.py, streaming
  on). The fake timestamps the last byte of every reply and the arrival of the next
  request; the gap between them is the harness's own work per step: parsing the
  stream, recording the completion, the policy check, running the tool, recording the
  observation and checkpoint, building and sending the next request. Median per-step
  gap for 20 and 100 steps, and steps 91-100 against steps 1-10 (flat means <= 1.3x).
  Each step's argv differs (``echo hi <n>``) so the stall detector does not stop the
  run; the tool is still one ``echo``.
* the same with the sandbox on (`[sandbox] backend = "auto"`: bubblewrap where it works).
* start-up plus shut-down: wall time of a trivial one-step `io run` (one request
  answered at once with "done"), median of several.
* peak RSS of the `io run` child (``ru_maxrss`` from ``wait4``), for the 100-step run.
* streaming: 2,000 small text deltas through each provider (bench/provider_stream.py).

Targets: gap <= 3 ms median, flat to step 100 (<= 1.3x), start-up + shut-down
<= 0.2 s, peak RSS <= 60 MiB, streaming <= 20 us a delta.

Run: python bench/loop_overhead.py [--repeat N] [--skip-sandbox] [--skip-stream]
"""

from __future__ import annotations

import argparse
import json
import os
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
        "[budget]\nmax_steps = 1000\n"
    )
    return root


@dataclass
class RunResult:
    wall: float
    peak_rss: int
    gaps: list[float]
    exit_code: int


def run_io(workspace: Path, store: Path) -> tuple[float, int, int]:
    """Run `io run` to the end; (wall seconds, peak RSS bytes, exit code)."""
    env = dict(os.environ, IO_STORE=str(store), NO_COLOR="1")
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "io_harness_cli", "run", "bench", "-w", str(workspace), "--json"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"io run failed ({proc.returncode}): {err.decode()[-2000:]}")
    return wall, usage.ru_maxrss * 1024, proc.returncode


def loop_run(vendor: Vendor, steps: int, backend: str, tmp: Path) -> RunResult:
    with start_vendor_server(vendor, responder=responder(steps)) as fake:
        ws = write_workspace(tmp / f"{vendor}-{backend}-{steps}", vendor, fake.base_url, backend)
        wall, rss, code = run_io(ws, tmp / "state.db")
        if fake.violations:
            raise SystemExit(f"the fake saw broken invariants: {fake.violations[:3]}")
        received = [r.received_at for r in fake.requests]
        answered = fake.answered_at
    assert len(received) == steps + 1, f"{len(received)} requests for {steps} steps"
    gaps = [(received[i + 1] - answered[i]) * 1000.0 for i in range(steps)]
    return RunResult(wall, rss, gaps, code)


def startup(vendor: Vendor, repeat: int, tmp: Path) -> tuple[float, float, int]:
    """Trivial one-step runs: (median wall s, best wall s, peak RSS bytes)."""
    with start_vendor_server(vendor, responder=responder(0)) as fake:
        ws = write_workspace(tmp / f"{vendor}-startup", vendor, fake.base_url, "off")
        run_io(ws, tmp / "state.db")  # warm the page cache and the store's schema
        samples = [run_io(ws, tmp / "state.db") for _ in range(repeat)]
    walls = [s[0] for s in samples]
    return statistics.median(walls), min(walls), max(s[1] for s in samples)


def describe(gaps: list[float]) -> str:
    first, last = statistics.median(gaps[:10]), statistics.median(gaps[-10:])
    return (f"median {statistics.median(gaps):6.2f} ms  p90 {_p90(gaps):6.2f} ms  "
            f"first10 {first:6.2f}  last10 {last:6.2f}  ratio {last / first:4.2f}x")


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]


def best_of(vendor: Vendor, steps: int, backend: str, tmp: Path, repeat: int) -> RunResult:
    """The run with the lowest median gap of `repeat` (noise only ever adds time)."""
    runs = [loop_run(vendor, steps, backend, tmp) for _ in range(repeat)]
    return min(runs, key=lambda r: statistics.median(r.gaps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    parser.add_argument("--skip-sandbox", action="store_true")
    parser.add_argument("--skip-stream", action="store_true")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; best of {args.repeat}")
    with tempfile.TemporaryDirectory(prefix="io-bench-") as name:
        tmp = Path(name)
        backends = ["off"] if args.skip_sandbox else ["off", "auto"]
        for backend in backends:
            label = "unsandboxed" if backend == "off" else "sandbox auto"
            print(f"\nper-step gap, model's last byte -> next request ({label}; target <= 3 ms,"
                  " last10/first10 <= 1.3x)")
            for vendor in VENDORS:
                for steps in (20, 100):
                    result = best_of(vendor, steps, backend, tmp, args.repeat)
                    print(f"  {vendor:<10}{steps:>4} steps  {describe(result.gaps)}"
                          f"  peak RSS {result.peak_rss / MIB:5.1f} MiB")
        print("\nstart-up + shut-down, one-step `io run` (target <= 0.2 s)")
        for vendor in VENDORS:
            median, best, rss = startup(vendor, max(5, args.repeat * 3), tmp)
            print(f"  {vendor:<10} median {median:.3f} s  best {best:.3f} s"
                  f"  peak RSS {rss / MIB:5.1f} MiB (target <= 60 MiB)")
    if not args.skip_stream:
        from provider_stream import VENDORS as STREAM_VENDORS
        from provider_stream import bench_vendor

        print("\nstreaming 2,000 small deltas (target <= 20 us/delta)")
        for vendor in STREAM_VENDORS:
            best_us, median_us, parse_us = bench_vendor(vendor, 2000, 9)
            print(f"  {vendor:<10} best {best_us:5.2f} us  median {median_us:5.2f} us"
                  f"  parser only {parse_us:5.2f} us")


if __name__ == "__main__":
    main()
