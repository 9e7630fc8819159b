"""The trace as lines: one or more per event, each with a style named by the event's kind.

A line's style comes from what happened (a refusal, a failed gate, a tool result marked
as an error), never from the words on the line: a model that writes "FAILED" or "✗" in
its answer gets a plain line. `PlainTrace` writes the lines without style; `RichTrace`
styles them with rich (colour on, but no live panel: `FORCE_COLOR` off a terminal).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_core import Event

__all__ = ["Line", "PlainTrace", "RichTrace", "brief", "lines_for"]

Line = tuple[str, str]
"""A line of text and its style (a rich style string; "" for none)."""

STYLE_STEP = "bold"
STYLE_OK = "green"
STYLE_BAD = "red"
STYLE_ASK = "yellow"
STYLE_DIM = "dim"


def brief(value: Any, width: int = 100) -> str:
    """`value` on one line, cut to `width` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "⏎ ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _run_started(d: dict[str, Any], run_id: str) -> list[Line]:
    sb = d.get("sandbox") or {}
    return [(f"run {run_id} {'resumed' if d.get('resumed') else 'started'}"
             f" in {d.get('workspace')} — sandbox {sb.get('backend')}"
             + (f" (degraded: {sb.get('degraded')})" if sb.get("degraded") else "")
             + ("" if sb.get("commands_sandboxed", True) else "; commands run unsandboxed"),
             STYLE_STEP)]


def _completion(d: dict[str, Any], run_id: str) -> list[Line]:
    usage = d.get("usage") or {}
    out = [(f"  model {d.get('model')} · tokens in {usage.get('prompt_tokens')}"
            f" out {usage.get('completion_tokens')} · {d.get('latency_ms')} ms", "")]
    if d.get("text"):
        out.append((f"  says: {brief(d.get('text'))}", ""))
    return out


def _tool_result(d: dict[str, Any], run_id: str) -> list[Line]:
    bad = bool(d.get("is_error"))
    return [(f"    {'✗' if bad else '✓'} {brief(d.get('output'))}", STYLE_BAD if bad else STYLE_OK)]


def _approval(d: dict[str, Any], run_id: str) -> list[Line]:
    if d.get("pending"):
        return [(f"  ⏸ approval needed: {d.get('target')}", STYLE_ASK)]
    return [(f"    approval: {d.get('target')} → {d.get('verdict')} by {d.get('decided_by')}",
             STYLE_ASK)]


def _verification(d: dict[str, Any], run_id: str) -> list[Line]:
    passed = bool(d.get("passed"))
    return [(f"  gate {d.get('command')}: {'passed' if passed else 'FAILED'}"
             f" (exit {d.get('exit_status')}, sandbox {d.get('sandbox')})",
             STYLE_OK if passed else STYLE_BAD)]


_FORMATS: dict[str, Callable[[dict[str, Any], str], list[Line]]] = {
    "run_started": _run_started,
    "step_started": lambda d, _r: [(f"step {d.get('step')}", STYLE_STEP)],
    "completion": _completion,
    "tool_call": lambda d, _r: [(f"  → {d.get('name')} {brief(d.get('arguments'), 80)}", "")],
    "tool_result": _tool_result,
    "refusal": lambda d, _r: [(f"    ⛔ refused {d.get('target')}: {d.get('reason')}"
                               f" [rule {d.get('rule')}, layer {d.get('layer')}]", STYLE_BAD)],
    "approval": _approval,
    "verification": _verification,
    "hook": lambda d, _r: [(f"    hook {d.get('hook')} ({d.get('event')}): {d.get('verdict')}"
                            f" — {d.get('reason')}",
                            STYLE_BAD if d.get("verdict") in ("deny", "error") else STYLE_DIM)],
    "steer": lambda d, _r: [(f"  steer: {brief(d)}", "")],
    "question": lambda d, _r: [(f"  question: {brief(d)}", STYLE_ASK)],
    "plan": lambda d, _r: [(f"  plan: {brief(d)}", "")],
    "stall": lambda d, _r: [(f"  stall: {brief(d)}", STYLE_BAD)],
    "warning": lambda d, _r: [(f"  warning: {brief(d)}", STYLE_ASK)],
    "spawn": lambda d, _r: [(
        f"  ↳ child {d.get('child_run_id')} "
        + (f"ended: {d.get('status')} after {d.get('steps')} steps" if d.get("status")
           else f"started (depth {d.get('depth')}, agent {d.get('agent') or '-'})"),
        STYLE_BAD if d.get("status") in ("failed", "errored") else STYLE_STEP)],
    "checkpoint": lambda d, _r: [(f"  checkpoint step {d.get('step')}", STYLE_DIM)],
}


def lines_for(event: Event, root: str | None = None) -> list[Line]:
    """The trace lines of `event` (none for kinds without a line, such as `token`).

    A line of a run other than `root` (a child of a tree) starts with the child's id.
    """
    fmt = _FORMATS.get(event.kind.value)
    lines = fmt(event.data, event.run_id) if fmt is not None else []
    if root is not None and event.run_id != root:
        lines = [(f"[{event.run_id[:8]}] {text}", style) for text, style in lines]
    return lines


class PlainTrace:
    """A line per event, no styling (NO_COLOR, TERM=dumb, or not a terminal)."""

    def __init__(self, write: Callable[[str, str], None] | None = None) -> None:
        self._write = write or (lambda line, _style: (sys.stderr.write(line + "\n"),
                                                      sys.stderr.flush()))
        self._start = time.monotonic()
        self._tokens = False
        self._root: str | None = None

    def __call__(self, event: Event) -> None:
        self._root = self._root or event.run_id
        if event.kind.value == "token":
            if not self._tokens:
                sys.stderr.write("  (provisional) ")
                self._tokens = True
            sys.stderr.write(str(event.data.get("text", "")))
            sys.stderr.flush()
            return
        for text, style in lines_for(event, self._root):
            if self._tokens:
                self._write("", "")
                self._tokens = False
            self._write(f"[{time.monotonic() - self._start:7.2f}s] {text}", style)

    def stop(self) -> None:
        """Nothing to tear down (the live view has a panel to clear)."""


class RichTrace(PlainTrace):
    """The same lines, each styled by its event's kind."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.text import Text

        console = Console(stderr=True, highlight=False)
        super().__init__(lambda line, style: console.print(Text(line, style=style)))
