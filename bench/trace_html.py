"""The HTML trace of a 1,000-step run: how big, how fast to build, how fast to open.

    python bench/trace_html.py [STEPS]

1. Records a STEPS-step run (default 1000) through the real loop and the scripted
   provider: each step asks for two to four calls (a `read_file`, a refused `write_file` every
   fifth step, an `exec` of `echo`, a `todo_write` every tenth), so the page carries
   calls, refusals, plan revisions and outputs in the proportions of a busy run.
2. Times `io trace RUN --html` (the real CLI, a child process) and the page's size.
3. Opens the page in headless Chromium (Debian's, driven by Playwright; never a
   downloaded browser) and reads the page's own Navigation Timing: DOMContentLoaded and
   the load event (the inline script has run and the filters are live), then times one
   filter toggle ("refusals only") and one search inside the page.

Target: the page renders in under 2 s. Timings only here, never in tests.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run"]


def _replay(steps: int) -> str:
    lines = []
    for n in range(steps):
        calls = [{"name": "read_file", "arguments": {"path": "notes.txt", "offset": n + 1}},
                 {"name": "exec", "arguments": {"argv": ["echo", f"step {n}"]}}]
        if n % 5 == 0:
            calls.append({"name": "write_file", "arguments": {"path": f"secrets/{n}",
                                                              "content": "x"}})
        if n % 10 == 0:
            calls.append({"name": "todo_write", "arguments": {"todos": [
                {"content": f"item {i} (as of step {n})", "status": "done" if i < n // 100 else "pending"}
                for i in range(10)]}})
        lines.append(json.dumps({"text": f"Step {n}: reading the notes <again>.",
                                 "tool_calls": calls,
                                 "usage": {"prompt_tokens": 900 + n, "completion_tokens": 40}}))
    lines.append(json.dumps({"text": "done"}))
    return "\n".join(lines) + "\n"


def _record(root: Path, steps: int, env: dict[str, str]) -> tuple[Path, str]:
    ws = root / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("a line of notes\n" * 40)
    (ws / "replay.jsonl").write_text(_replay(steps))
    (ws / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n\n[sandbox]\nbackend = "off"\n\n'
        '[policy]\ndeny_write = ["secrets/**"]\nallow_exec = ["echo*"]\n\n'
        f"[budget]\nmax_steps = {steps + 10}\nmax_tokens = false\n\n[run]\nstall_window = {steps + 10}\n"
        '[prices]\nas_of = "2026-11-01"\n[prices.models."scripted-replay"]\n'
        "input_per_mtok = 3.0\noutput_per_mtok = 15.0\n")
    io = [sys.executable, "-m", "io_harness_cli"]
    done = subprocess.run([*io, "run", "goal", "-w", str(ws), "--json"], env=env,
                          capture_output=True, text=True, check=False)
    last = json.loads(done.stdout.splitlines()[-1])
    if last.get("status") != "finished":
        raise SystemExit(f"the run did not finish: {last}\n{done.stderr[-2000:]}")
    return ws, str(last["run_id"])


def _open(page_path: Path, rounds: int = 5) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    figures: dict[str, list[float]] = {"dcl": [], "load": [], "filter": [], "search": []}
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(
            profile, executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
        for _ in range(rounds):
            page = context.new_page()
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            nav = page.evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0])")
            timing = json.loads(nav)
            figures["dcl"].append(timing["domContentLoadedEventEnd"] / 1000)
            figures["load"].append(timing["loadEventEnd"] / 1000)
            figures["filter"].append(page.evaluate(
                "() => { const t = performance.now();"
                " document.getElementById('f-refusals').click();"
                " return (performance.now() - t) / 1000; }"))
            figures["search"].append(page.evaluate(
                "() => { const q = document.getElementById('q'); const t = performance.now();"
                " q.value = 'step 99'; q.dispatchEvent(new Event('input'));"
                " return (performance.now() - t) / 1000; }"))
            page.close()
        context.close()
    return {k: statistics.median(v) for k, v in figures.items()}


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {**os.environ, "IO_STORE": str(root / "state.db"), "NO_COLOR": "1"}
        began = time.monotonic()
        ws, run_id = _record(root, steps, env)
        recorded = time.monotonic() - began
        out = root / "trace.html"
        times = []
        for _ in range(3):
            began = time.monotonic()
            subprocess.run([sys.executable, "-m", "io_harness_cli", "trace", run_id, "-w",
                            str(ws), "--html", "-o", str(out)], env=env, check=True,
                           capture_output=True)
            times.append(time.monotonic() - began)
        page = _open(out)
        print(f"steps: {steps} (recorded in {recorded:.1f} s)")
        print(f"page size: {out.stat().st_size / 1e6:.2f} MB")
        print(f"io trace --html (whole CLI process, median of 3): {statistics.median(times):.2f} s")
        print(f"Chromium DOMContentLoaded (median of 5): {page['dcl']:.2f} s")
        print(f"Chromium load event, script run, filters live (median of 5): {page['load']:.2f} s")
        print(f"filter 'refusals only' toggle: {page['filter'] * 1000:.0f} ms")
        print(f"search keystroke: {page['search'] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
