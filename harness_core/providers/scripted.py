"""The scripted provider: a replay of recorded completions, never a model.

Line k of the JSONL script is the k-th completion of the run, counted by step, so a
resumed run continues at the right line. Each line is an object with optional
`text`, `tool_calls` (each `{"name", "arguments", "id"?}`), `usage` and `model`.
A line with no tool calls ends the run. Asking past the last line is an error.

A line with a `summary` key (and optional `usage`, `model`) is not a step: it answers
the compaction io asks for before the step of the next line (`[context] strategy =
"compact"`), so the step count of every other line is unchanged.

One file serves a whole tree of runs (`plan_tree`), in depth-first request order: the
order the requests would come in if the children of one completion ran one after
another. After a line, each of its `spawn_agent` calls that starts a child (in call
order) owns the lines that follow: that child's transcript, which ends with its first
line without tool calls (and holds its own children's transcripts the same way); the
parent's next line comes after. A call the harness refuses before a child starts
(unknown agent, a limit, bad arguments) owns no lines. The split is computed from the
file alone, so parallel children each read their own transcript whatever the timing,
and a resumed run reads the same lines it read before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from harness_core._record import record
from harness_core.errors import ConfigError, ScriptExhausted
from harness_core.messages import ToolCall, Usage
from harness_core.providers._base import (
    CompletionRequest,
    CompletionResponse,
    ProviderAttempt,
    TokenCallback,
)
from harness_core.providers._config import ProviderConfig

__all__ = ["ScriptedProvider", "SpawnStarts"]

SpawnStarts = Callable[[object, int, int], bool]
"""(spawn arguments, the child's depth, children the run spawned so far) → whether the
harness starts a child for that call (`harness_core.agents.spawn_refusal` is None)."""


@record(frozen=False)
class _Transcript:
    """One run's lines, and for a line's spawning calls the children's transcripts."""

    lines: list[dict[str, Any]] = field(default_factory=lambda: [])
    children: dict[tuple[int, int], _Transcript] = field(default_factory=lambda: {})


def _arguments(raw: Any) -> object:
    args = raw.get("arguments", {}) if isinstance(raw, dict) else None
    if isinstance(args, str):
        try:
            return json.loads(args)
        except json.JSONDecodeError:
            return None
    return args


def _split(
    lines: list[dict[str, Any]], pos: int, depth: int, starts: SpawnStarts, *, root: bool
) -> tuple[_Transcript, int]:
    out = _Transcript()
    spawned = 0
    while pos < len(lines):
        line = lines[pos]
        pos += 1
        step = len(out.lines)
        out.lines.append(line)
        calls = line.get("tool_calls") or []
        for index, raw in enumerate(calls):
            if not (isinstance(raw, dict) and raw.get("name") == "spawn_agent"):
                continue
            if starts(_arguments(raw), depth + 1, spawned):
                spawned += 1
                out.children[(step, index)], pos = _split(lines, pos, depth + 1, starts,
                                                          root=False)
        if not calls and not root:
            break
    return out, pos


class ScriptedProvider:
    """Replays `config.script` line by line.

    Raises:
        ConfigError: The script is missing, unreadable or has a malformed line.
    """

    name = "scripted"

    def __init__(self, config: ProviderConfig) -> None:
        if config.script is None:
            raise ConfigError("provider kind 'scripted' needs `script = \"file.jsonl\"`")
        self._path = Path(config.script)
        self._model = config.model or "scripted-replay"
        try:
            text = self._path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the scripted replay {self._path}: {exc.strerror}") from exc
        self._lines: list[dict[str, Any]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"{self._path}:{number}: not a JSON object ({exc.msg})"
                ) from exc
            if not isinstance(value, dict):
                raise ConfigError(f"{self._path}:{number}: each line must be a JSON object")
            self._lines.append(value)
        self._lines = _attach_summaries(self._lines)
        self._all = self._lines
        self._tree: _Transcript | None = None

    def __len__(self) -> int:
        return len(self._lines)

    def plan_tree(self, starts: SpawnStarts) -> None:
        """Split the file into the transcripts of a tree of runs (see the module doc)."""
        self._tree, _ = _split(self._all, 0, 0, starts, root=True)
        self._lines = self._tree.lines

    def for_child(self, step: int, call_index: int) -> ScriptedProvider:
        """The provider of the child spawned by this run's call (`step`, `call_index`).

        Raises:
            ScriptExhausted: The replay holds no transcript for that child.
        """
        child = self._tree.children.get((step, call_index)) if self._tree else None
        if child is None:
            raise ScriptExhausted(
                f"the scripted replay {self._path.name} has no lines for the child spawned by"
                f" step {step + 1}, call {call_index + 1}",
                hint="after a line, each spawn_agent call's child reads the lines that follow")
        view = ScriptedProvider.__new__(ScriptedProvider)
        view._path, view._model, view._lines, view._all, view._tree = (
            self._path, self._model, child.lines, child.lines, child)
        return view

    def complete(
        self, request: CompletionRequest, *, step: int, on_token: TokenCallback | None = None
    ) -> CompletionResponse:
        if request.purpose == "compact":
            return self._summary(request, step, on_token)
        if step >= len(self._lines):
            raise ScriptExhausted(
                f"the scripted replay {self._path.name} has {len(self._lines)} completions;"
                f" step {step + 1} asked for one more",
                hint="add a final line without tool_calls so the replay finishes",
            )
        line = self._lines[step]
        text = str(line.get("text", ""))
        if text and on_token is not None:
            on_token(text)
        calls: list[ToolCall] = []
        for i, raw in enumerate(line.get("tool_calls") or []):
            args = raw.get("arguments", {})
            call_id = str(raw.get("id") or f"call_{step}_{i}")
            if isinstance(args, str):
                try:
                    parsed = json.loads(args)
                except json.JSONDecodeError:
                    calls.append(ToolCall(call_id, str(raw.get("name", "")), {}, args))
                    continue
                args = parsed
            if not isinstance(args, dict):
                calls.append(ToolCall(call_id, str(raw.get("name", "")), {}, json.dumps(args)))
                continue
            calls.append(ToolCall(call_id, str(raw.get("name", "")), args))
        usage = Usage.from_json(line.get("usage") or {})
        model = str(line.get("model") or self._model)
        return CompletionResponse(
            text=text,
            tool_calls=tuple(calls),
            usage=usage,
            model=model,
            provider=self.name,
            stop_reason="tool_use" if calls else "end_turn",
            attempts=(ProviderAttempt(self.name, request.model, True),),
        )

    def _summary(self, request: CompletionRequest, step: int,
                 on_token: TokenCallback | None) -> CompletionResponse:
        line = self._lines[step] if step < len(self._lines) else {}
        summaries = line.get(_SUMMARIES) or []
        if not summaries:
            raise ScriptExhausted(
                f"the scripted replay {self._path.name} has no summary line before step"
                f" {step + 1}, and io asked for a compaction there",
                hint='put a line {"summary": "..."} before the line of that step')
        summary = summaries[0]
        text = str(summary.get("summary", ""))
        if text and on_token is not None:
            on_token(text)
        return CompletionResponse(
            text=text, tool_calls=(), usage=Usage.from_json(summary.get("usage") or {}),
            model=str(summary.get("model") or self._model), provider=self.name,
            stop_reason="end_turn", attempts=(ProviderAttempt(self.name, request.model, True),),
        )

    def close(self) -> None:
        return None


_SUMMARIES = "__summaries__"


def _attach_summaries(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The step lines, each holding the `summary` lines just before it.

    Raises:
        ConfigError: Summary lines after the last step line (no step follows them).
    """
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for line in lines:
        if "summary" in line:
            pending.append(line)
            continue
        out.append({**line, _SUMMARIES: pending} if pending else line)
        pending = []
    if pending:
        raise ConfigError("a scripted replay ends with a summary line: each summary line"
                          " answers the compaction before the step of the line after it")
    return out
