"""Human output: the live trace, tables and the recorded trace. All of it on stderr,
except tables a command is asked for (`io runs`, `io config show`), which go to stdout.

rich is imported only when colour is on; plain text needs nothing but the stdlib.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from io_harness_cli.output import use_color

if TYPE_CHECKING:
    from harness_core import Event

__all__ = ["make_renderer", "print_table", "render_plan", "render_trace"]


def _brief(value: Any, width: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "⏎ ")
    return text if len(text) <= width else text[: width - 1] + "…"


class PlainTrace:
    """A line per event, no styling (NO_COLOR or not a terminal)."""

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self._write = write or (lambda line: (sys.stderr.write(line + "\n"), sys.stderr.flush()))
        self._start = time.monotonic()
        self._tokens = False

    def _line(self, text: str) -> None:
        if self._tokens:
            self._write("")
            self._tokens = False
        self._write(f"[{time.monotonic() - self._start:7.2f}s] {text}")

    def __call__(self, event: Event) -> None:  # noqa: C901 - one branch per kind
        kind, d = event.kind.value, event.data
        if kind == "token":
            if not self._tokens:
                sys.stderr.write("  (provisional) ")
                self._tokens = True
            sys.stderr.write(str(d.get("text", "")))
            sys.stderr.flush()
            return
        if kind == "run_started":
            sb = d.get("sandbox") or {}
            self._line(f"run {event.run_id} {'resumed' if d.get('resumed') else 'started'}"
                       f" in {d.get('workspace')} — sandbox {sb.get('backend')}"
                       + (f" (degraded: {sb.get('degraded')})" if sb.get("degraded") else "")
                       + ("" if sb.get("commands_sandboxed", True) else
                          "; commands run unsandboxed"))
        elif kind == "step_started":
            self._line(f"step {d.get('step')}")
        elif kind == "completion":
            usage = d.get("usage") or {}
            self._line(f"  model {d.get('model')} · tokens in {usage.get('prompt_tokens')}"
                       f" out {usage.get('completion_tokens')} · {d.get('latency_ms')} ms")
            if d.get("text"):
                self._line(f"  says: {_brief(d.get('text'))}")
        elif kind == "tool_call":
            self._line(f"  → {d.get('name')} {_brief(d.get('arguments'), 80)}")
        elif kind == "tool_result":
            mark = "✗" if d.get("is_error") else "✓"
            self._line(f"    {mark} {_brief(d.get('output'))}")
        elif kind == "refusal":
            self._line(f"    ⛔ refused {d.get('target')}: {d.get('reason')}"
                       f" [rule {d.get('rule')}, layer {d.get('layer')}]")
        elif kind == "approval":
            if d.get("pending"):
                self._line(f"  ⏸ approval needed: {d.get('target')}")
            else:
                self._line(f"    approval: {d.get('target')} → {d.get('verdict')}"
                           f" by {d.get('decided_by')}")
        elif kind == "verification":
            self._line(f"  gate {d.get('command')}: {'passed' if d.get('passed') else 'FAILED'}"
                       f" (exit {d.get('exit_status')}, sandbox {d.get('sandbox')})")
        elif kind in ("steer", "question", "plan", "stall"):
            self._line(f"  {kind}: {_brief(d)}")
        elif kind == "checkpoint":
            self._line(f"  checkpoint step {d.get('step')}")


class RichTrace(PlainTrace):
    """The same lines, styled with rich on a terminal."""

    def __init__(self) -> None:
        from rich.console import Console

        self._console = Console(stderr=True, highlight=False)
        super().__init__(lambda line: self._console.print(line, markup=False,
                                                          style=self._style(line)))

    @staticmethod
    def _style(line: str) -> str:
        if "⛔" in line or "FAILED" in line or "✗" in line:
            return "red"
        if "passed" in line or "✓" in line:
            return "green"
        if "step " in line and "checkpoint" not in line:
            return "bold"
        if "checkpoint" in line:
            return "dim"
        return ""


def make_renderer(*, color: bool) -> Callable[[Event], None]:
    """The live trace for stderr: rich when colour is on, plain otherwise."""
    return RichTrace() if color else PlainTrace()


def print_table(headers: list[str], rows: list[list[str]], *, title: str = "",
                stdout: bool = True) -> None:
    """A table: rich on a terminal, tab-separated text otherwise."""
    stream = sys.stdout if stdout else sys.stderr
    if use_color(stream):
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title or None)
        for header in headers:
            table.add_column(header)
        for row in rows:
            table.add_row(*row)
        Console(file=stream).print(table)
        return
    stream.write("\t".join(headers) + "\n")
    for row in rows:
        stream.write("\t".join(row) + "\n")


def render_trace(data: dict[str, Any]) -> None:
    """A recorded run, step by step, on stdout."""
    out = sys.stdout.write
    run = data["run"]
    out(f"run {run['run_id']}  status {run['status']}  steps {run['steps']}"
        f"  tokens {run['tokens']}  wall {run['wall_seconds']}s\n")
    out(f"goal: {_brief(run['goal'], 200)}\n")
    sandbox = run.get("sandbox") or {}
    out(f"sandbox: {sandbox.get('backend')} enforced={sandbox.get('enforced')}"
        f" degraded={sandbox.get('degraded')} commands_sandboxed="
        f"{sandbox.get('commands_sandboxed')}\n")
    if run.get("reason"):
        out(f"ended: {run['reason']}\n")
    for step in data["steps"]:
        usage = step["usage"] or {}
        latency = step["latency_ms"]
        took = f"{latency:.1f} ms" if isinstance(latency, (int, float)) else "-"
        out(f"\nstep {step['step']}  {step['model']}  in {usage.get('prompt_tokens')}"
            f" out {usage.get('completion_tokens')}  {took}\n")
        if step["text"]:
            out(f"  says: {_brief(step['text'], 200)}\n")
        for call in step["calls"]:
            out(f"  → {call['name']} {_brief(call['arguments'], 100)}  [{call['state']}]\n")
            if call["observation"] is not None:
                out(f"    {'✗' if call['is_error'] else '✓'} {_brief(call['observation'])}\n")
    if data["refusals"]:
        out("\npolicy events:\n")
        for ev in data["refusals"]:
            out(f"  step {ev['step_index']}: {ev['verdict']} {ev['target']} — {ev['reason']}"
                f" [rule {ev['rule']}, layer {ev['layer']}, by {ev['decided_by']}]\n")
    if data["verifications"]:
        out("\nverification:\n")
        for v in data["verifications"]:
            out(f"  step {v['step_index']}: {v['criterion']} →"
                f" {'passed' if v['passed'] else 'failed'} (exit {v['exit_status']})\n")


def render_plan(items: list[dict[str, Any]]) -> None:
    """The agent's plan, one item a line, on stdout."""
    if not items:
        sys.stdout.write("(no plan)\n")
        return
    marks = {"done": "[x]", "in_progress": "[~]", "pending": "[ ]"}
    for item in items:
        sys.stdout.write(f"{marks.get(str(item.get('status')), '[ ]')} {item.get('content')}\n")
