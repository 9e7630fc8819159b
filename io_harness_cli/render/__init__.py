"""Human output: the live trace, tables and the recorded trace. All of it on stderr,
except tables a command is asked for (`io runs`, `io config show`), which go to stdout.

rich is imported only when colour is on; plain text needs nothing but the stdlib. The
live view is `render.live`, the trace lines `render.lines`, the HTML page `render.html`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from io_harness_cli.output import use_color
from io_harness_cli.render.lines import brief as _brief
from io_harness_cli.render.lines import decided_by as _decided_by
from io_harness_cli.render.lines import shown as _shown
from io_harness_cli.render.lines import usage_notes

if TYPE_CHECKING:
    from harness_core import Event

__all__ = ["make_renderer", "print_table", "render_plan", "render_trace"]


def make_renderer(*, color: bool, live: bool = False,
                  answer_shown: bool = False) -> Callable[[Event], None]:
    """The human trace for stderr: the live panel on a colour terminal, rich lines when
    colour is forced off a terminal, plain lines otherwise. `answer_shown`: the final
    answer will be printed on the same terminal (stdout), so its `says:` line is not."""
    if color and live:
        from io_harness_cli.render.live import LiveTrace

        return LiveTrace(answer_shown=answer_shown)
    from io_harness_cli.render.lines import PlainTrace, RichTrace

    return RichTrace(answer_shown=answer_shown) if color else PlainTrace(answer_shown=answer_shown)


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
    out(f"sandbox: {_shown(sandbox.get('backend'))}  enforced: {_listed(sandbox.get('enforced'))}"
        f"  degraded: {_listed(sandbox.get('degraded'))}  commands sandboxed:"
        f" {_yes_no(sandbox.get('commands_sandboxed'))}\n")
    mechanisms = sandbox.get("mechanisms") or {}
    for name in ("reads", "secrets", "net"):
        why = mechanisms.get(name)
        if isinstance(why, str) and why.startswith("none:"):
            out(f"  not enforced: {name}: {why[5:].strip()}\n")
    if run.get("reason"):
        out(f"ended: {run['reason']}\n")
    for step in data["steps"]:
        usage = step["usage"] or {}
        latency = step["latency_ms"]
        took = f"{latency:.1f} ms" if isinstance(latency, (int, float)) else "-"
        out(f"\nstep {step['step']}  {_shown(step['model'])}  in"
            f" {_shown(usage.get('prompt_tokens'))} out {_shown(usage.get('completion_tokens'))}"
            f"{usage_notes(usage)}  {took}\n")
        if step["text"]:
            out(f"  says: {_brief(step['text'], 200)}\n")
        for call in step["calls"]:
            out(f"  → {call['name']} {_brief(call['arguments'], 100)}  [{call['state']}]\n")
            if call["observation"] is not None:
                out(f"    {'✗' if call['is_error'] else '✓'} {_brief(call['observation'])}\n")
    if data["refusals"]:
        out("\npolicy events:\n")
        for ev in data["refusals"]:
            by = _decided_by(ev["rule"], ev["layer"]).rstrip("]")
            by = f"{by}, by {ev['decided_by']}]" if by else f"[by {ev['decided_by']}]"
            out(f"  step {_shown(ev['step_index'])}: {ev['verdict']} {ev['target']} —"
                f" {ev['reason']} {by}\n")
    _render_verifications(data["verifications"])


def _listed(value: Any) -> str:
    """A list as words for a person ("fs, net"), never a Python repr."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "none"
    return _shown(value)


def _yes_no(value: Any) -> str:
    return "-" if value is None else "yes" if value else "no"


_GATE_TAIL = 20
"""Lines of a failed gate's output the readable trace shows (its end, where the
failure usually is); `io trace --json` and `--html` carry the whole of it."""


def _render_verifications(verifications: list[dict[str, Any]]) -> None:
    """Every gate round; a failed gate with the end of what it printed."""
    if not verifications:
        return
    out = sys.stdout.write
    out("\nverification:\n")
    for v in verifications:
        out(f"  step {v['step_index']}: {v['criterion']} →"
            f" {'passed' if v['passed'] else 'failed'} (exit {_shown(v['exit_status'])})\n")
        if not v["passed"]:
            out(_gate_output(str(v.get("output") or "")))


def _gate_output(output: str) -> str:
    lines = output.rstrip("\n").splitlines()
    if not lines:
        return "    (the gate printed nothing)\n"
    cut = len(lines) - _GATE_TAIL
    head = f"    … {cut} earlier lines (io trace --json has them)\n" if cut > 0 else ""
    return head + "".join(f"    │ {line}\n" for line in lines[-_GATE_TAIL:])


def render_plan(items: list[dict[str, Any]]) -> None:
    """The agent's plan, one item a line, on stdout."""
    if not items:
        sys.stdout.write("(no plan)\n")
        return
    marks = {"done": "[x]", "in_progress": "[~]", "pending": "[ ]"}
    for item in items:
        sys.stdout.write(f"{marks.get(str(item.get('status')), '[ ]')} {item.get('content')}\n")
