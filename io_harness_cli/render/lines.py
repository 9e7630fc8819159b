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

__all__ = ["FinalText", "Line", "PlainTrace", "RefusedOnce", "RichTrace", "brief", "decided_by",
           "lines_for", "shown"]

Line = tuple[str, str]
"""A line of text and its style (a rich style string; "" for none)."""

STYLE_STEP = "bold"
STYLE_OK = "green"
STYLE_BAD = "red"
STYLE_ASK = "yellow"
STYLE_DIM = "dim"


def shown(value: Any) -> str:
    """`value` as text for a person: "-" for what is not known (never "None")."""
    return "-" if value is None else str(value)


def brief(value: Any, width: int = 100) -> str:
    """`value` on one line, cut to `width` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "⏎ ")
    return text if len(text) <= width else text[: width - 1] + "…"


def decided_by(rule: Any, layer: Any) -> str:
    """`[rule R, layer L]`, leaving out what is not known."""
    parts = [f"{name} {value}" for name, value in (("rule", rule), ("layer", layer))
             if value is not None]
    return f"[{', '.join(parts)}]" if parts else ""


def _run_started(d: dict[str, Any], run_id: str) -> list[Line]:
    sb = d.get("sandbox") or {}
    return [(f"run {run_id} {'resumed' if d.get('resumed') else 'started'}"
             f" in {shown(d.get('workspace'))} — sandbox {shown(sb.get('backend'))}"
             + (f" (degraded: {sb.get('degraded')})" if sb.get("degraded") else "")
             + ("" if sb.get("commands_sandboxed", True) else "; commands run unsandboxed"),
             STYLE_STEP)]


def _completion(d: dict[str, Any], run_id: str) -> list[Line]:
    usage = d.get("usage") or {}
    tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
    tokens = ("tokens not reported" if tokens_in is None and tokens_out is None
              else f"tokens in {shown(tokens_in)} out {shown(tokens_out)}{usage_notes(usage)}")
    latency = d.get("latency_ms")
    out = [(f"  model {shown(d.get('model'))} · {tokens} · "
            + ("-" if latency is None else f"{latency} ms"), "")]
    if d.get("text"):
        out.append((f"  says: {brief(d.get('text'))}", ""))
    return out


def _tool_result(d: dict[str, Any], run_id: str) -> list[Line]:
    bad = bool(d.get("is_error"))
    return [(f"    {'✗' if bad else '✓'} {brief(d.get('output'))}", STYLE_BAD if bad else STYLE_OK)]


def _approval(d: dict[str, Any], run_id: str) -> list[Line]:
    if d.get("pending"):
        return [(f"  ⏸ approval needed: {shown(d.get('target'))}", STYLE_ASK)]
    return [(f"    approval: {shown(d.get('target'))} → {shown(d.get('verdict'))}"
             f" by {shown(d.get('decided_by'))}", STYLE_ASK)]


def _question(d: dict[str, Any], run_id: str) -> list[Line]:
    """A question the run waits on, or the answer it got (never the raw event)."""
    question = brief(shown(d.get("question")))
    if d.get("pending"):
        return [(f"  ⏸ question: {question}", STYLE_ASK)]
    if d.get("answer") is None:
        return [(f"  question: {question}", STYLE_ASK)]
    return [(f"  question: {question} → {brief(d.get('answer'), 80)}"
             f" (answered by {shown(d.get('answered_by'))})", STYLE_ASK)]


def _hook(d: dict[str, Any], run_id: str) -> list[Line]:
    reason = d.get("reason")
    return [(f"    hook {shown(d.get('hook'))} ({shown(d.get('event'))}):"
             f" {shown(d.get('verdict'))}" + (f" — {reason}" if reason else ""),
             STYLE_BAD if d.get("verdict") in ("deny", "error") else STYLE_DIM)]


def _compaction(d: dict[str, Any], run_id: str) -> list[Line]:
    if d.get("phase") == "started":
        return [(f"  compacting the history before step {shown(d.get('step'))}:"
                 f" {shown(d.get('size'))} tokens > threshold {shown(d.get('threshold'))}",
                 STYLE_DIM)]
    if d.get("phase") == "refused":
        return [(f"  compaction refused by a hook: {brief(shown(d.get('reason')))}", STYLE_ASK)]
    usage = d.get("usage") or {}
    return [(f"  compacted: {shown(d.get('size_before'))} → {shown(d.get('size_after'))} tokens,"
             f" {shown(d.get('summarised_messages'))} messages summarised by"
             f" {shown(d.get('model'))} (prompt {shown(usage.get('prompt_tokens'))}"
             f" + completion {shown(usage.get('completion_tokens'))} tokens)", STYLE_DIM)]


def _answer_rejected(d: dict[str, Any], run_id: str) -> list[Line]:
    left = d.get("retries_left")
    then = "the run fails" if left == 0 else f"sent back ({shown(left)} retries left)"
    return [(f"  ✗ answer rejected by the output schema: {brief(shown(d.get('problem')))};"
             f" {then}", STYLE_BAD)]


def _warning(d: dict[str, Any], run_id: str) -> list[Line]:
    text = d.get("text") or d.get("mcp")
    return [(f"  warning: {brief(text if text is not None else d)}", STYLE_ASK)]


def _plan(d: dict[str, Any], run_id: str) -> list[Line]:
    items = d.get("items")
    if not isinstance(items, list):
        return [(f"  plan: {brief(d)}", "")]
    done = sum(1 for i in items if isinstance(i, dict) and i.get("status") == "done")
    return [(f"  plan: {len(items)} items, {done} done", "")]


def _verification(d: dict[str, Any], run_id: str) -> list[Line]:
    passed = bool(d.get("passed"))
    return [(f"  gate {d.get('command')}: {'passed' if passed else 'FAILED'}"
             f" (exit {shown(d.get('exit_status'))}, sandbox {shown(d.get('sandbox'))})",
             STYLE_OK if passed else STYLE_BAD)]


_FORMATS: dict[str, Callable[[dict[str, Any], str], list[Line]]] = {
    "run_started": _run_started,
    "step_started": lambda d, _r: [(f"step {d.get('step')}", STYLE_STEP)],
    "completion": _completion,
    "tool_call": lambda d, _r: [(f"  → {d.get('name')} {brief(d.get('arguments'), 80)}", "")],
    "tool_result": _tool_result,
    "refusal": lambda d, _r: [(f"    ⛔ refused {d.get('target')}: {d.get('reason')}"
                               f" {decided_by(d.get('rule'), d.get('layer'))}", STYLE_BAD)],
    "approval": _approval,
    "verification": _verification,
    "hook": _hook,
    "steer": lambda d, _r: [(f"  steer (operator): {brief(shown(d.get('text')))}", "")],
    "question": _question,
    "plan": _plan,
    "stall": lambda d, _r: [(f"  stall: {brief(shown(d.get('reason') or d.get('call')))}",
                             STYLE_BAD)],
    "warning": _warning,
    "compaction": _compaction,
    "answer_rejected": _answer_rejected,
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


class FinalText:
    """Holds back the `says:` line of a completion that asked for no tool (the model says
    it is done) while the answer will be printed whole on the same terminal (stdout):
    each message is shown once. A step that starts after it (a gate failed) shows the
    held line after all; at the end of the run it is dropped."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._held: list[Line] = []

    def take(self, event: Event, lines: list[Line]) -> list[Line]:
        """The lines to print now for `event`."""
        if not self.enabled:
            return lines
        shown, self._held = (self._held, []) if event.kind.value == "step_started" else ([], self._held)
        if event.kind.value == "completion" and not event.data.get("tool_calls"):
            self._held = lines[1:]
            return shown + lines[:1]
        return shown + lines

    def drop(self) -> None:
        """The run is over: the held text is the answer stdout shows."""
        self._held = []


class RefusedOnce:
    """Prints a refusal once: the observation of a call whose refusal already had its
    `⛔ refused` line (`✗ refused: …`) is left out. A refusal that had no line of its
    own (the shell lexer refuses without a policy event) keeps its observation line."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def take(self, event: Event, lines: list[Line]) -> list[Line]:
        """The lines to print now for `event`."""
        kind = event.kind.value
        if kind == "refusal":
            self._said.add(event.run_id)
        elif kind == "tool_call":
            self._said.discard(event.run_id)
        elif kind == "tool_result" and event.data.get("refused") and event.run_id in self._said:
            self._said.discard(event.run_id)
            return []
        return lines


class PlainTrace:
    """A line per event, no styling (NO_COLOR, TERM=dumb, or not a terminal)."""

    def __init__(self, write: Callable[[str, str], None] | None = None, *,
                 answer_shown: bool = False) -> None:
        self._write = write or (lambda line, _style: (sys.stderr.write(line + "\n"),
                                                      sys.stderr.flush()))
        self._final = FinalText(answer_shown)
        self._refused = RefusedOnce()
        self._start = time.monotonic()
        self._root: str | None = None

    def __call__(self, event: Event) -> None:
        # Streamed tokens are not written: lines cannot be taken back, and the committed
        # step's `says:` line follows (the live panel shows them, and clears them).
        self._root = self._root or event.run_id
        lines = self._refused.take(event, lines_for(event, self._root))
        if event.run_id == self._root:
            lines = self._final.take(event, lines)
        for text, style in lines:
            self._write(f"[{time.monotonic() - self._start:7.2f}s] {text}", style)

    def stop(self) -> None:
        """The run is over: drop a held final text (the live view also clears a panel)."""
        self._final.drop()


class RichTrace(PlainTrace):
    """The same lines, each styled by its event's kind."""

    def __init__(self, *, answer_shown: bool = False) -> None:
        from rich.console import Console
        from rich.text import Text

        console = Console(stderr=True, highlight=False)
        super().__init__(lambda line, style: console.print(Text(line, style=style)),
                         answer_shown=answer_shown)


def usage_notes(usage: dict[str, Any]) -> str:
    """What a usage's in/out figures leave out: cache reads and writes, and whether
    the counts are io's estimate (the provider reported none)."""
    notes = ""
    read, written = usage.get("cache_read_tokens"), usage.get("cache_write_tokens")
    if read or written:
        notes += f" (cache read {read or 0}, written {written or 0})"
    if usage.get("estimated"):
        notes += " estimated (not reported)"
    return notes
