"""A provider that answers from a list and keeps every request, and a spec builder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_core import (
    Budget,
    CompletionRequest,
    CompletionResponse,
    Event,
    RunSpec,
    SandboxConfig,
    TaskContract,
    ToolCall,
    Usage,
    Workspace,
)
from harness_core.sandbox import BackendChoice

Line = tuple[str, list[tuple[str, dict[str, Any]]]]


class RecordingProvider:
    """Answers step k of every run with `lines[k]`; `requests` keeps what it was sent.

    It plays the part of the shipped scripted provider (which has no request log); the
    loop cannot tell them apart.
    """

    name = "recording"

    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        self.requests.append(request)
        text, calls = self.lines[min(step, len(self.lines) - 1)]
        if on_token is not None and text:
            on_token(text)
        return CompletionResponse(
            text=text,
            tool_calls=tuple(ToolCall(f"call_{step}_{i}", name, args)
                             for i, (name, args) in enumerate(calls)),
            usage=Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12),
            model="recorded", provider=self.name)

    def close(self) -> None:
        return None


def spec_for(workspace: Path, goal: str, **overrides: Any) -> RunSpec:
    """A spec that runs without a sandbox backend, for library tests."""
    fields: dict[str, Any] = {
        "workspace": Workspace(workspace),
        "contract": TaskContract(goal=goal),
        "budget": Budget(max_steps=50, max_tokens=None, wall_seconds=None),
        "sandbox": SandboxConfig(backend=BackendChoice.OFF),
        "model": "recorded",
    }
    fields.update(overrides)
    return RunSpec(**fields)


class Events:
    """An event sink that keeps what it receives."""

    def __init__(self) -> None:
        self.seen: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.seen.append(event)
