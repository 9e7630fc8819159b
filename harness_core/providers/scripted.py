"""The scripted provider: a replay of recorded completions, never a model.

Line k of the JSONL script is the k-th completion of the run, counted by step, so a
resumed run continues at the right line. Each line is an object with optional
`text`, `tool_calls` (each `{"name", "arguments", "id"?}`), `usage` and `model`.
A line with no tool calls ends the run. Asking past the last line is an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_core.errors import ConfigError, ScriptExhausted
from harness_core.messages import ToolCall, Usage
from harness_core.providers._base import (
    CompletionRequest,
    CompletionResponse,
    ProviderAttempt,
    TokenCallback,
)
from harness_core.providers._config import ProviderConfig

__all__ = ["ScriptedProvider"]


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

    def __len__(self) -> int:
        return len(self._lines)

    def complete(
        self, request: CompletionRequest, *, step: int, on_token: TokenCallback | None = None
    ) -> CompletionResponse:
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

    def close(self) -> None:
        return None
