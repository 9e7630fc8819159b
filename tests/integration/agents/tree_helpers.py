"""Trees of runs driven by one scripted replay, through the library."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_core import (
    AgentDef,
    AgentLimits,
    Budget,
    Policy,
    ProviderConfig,
    RunSpec,
    SandboxConfig,
    ScriptedProvider,
    TaskContract,
    Workspace,
)
from harness_core.sandbox import BackendChoice


def line(text: str = "", *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"text": text, "tool_calls": [{"name": n, "arguments": a} for n, a in calls],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2}}


def spawn(goal: str, agent: str | None = None) -> tuple[str, dict[str, Any]]:
    args: dict[str, Any] = {"goal": goal}
    if agent is not None:
        args["agent"] = agent
    return ("spawn_agent", args)


def provider(tmp: Path, lines: list[dict[str, Any]]) -> ScriptedProvider:
    path = tmp / "replay.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return ScriptedProvider(ProviderConfig(kind="scripted", script=path, model="m-root"))


def spec(ws: Path, *, policy: Policy | None = None, agents: Mapping[str, AgentDef] = {},
         limits: AgentLimits | None = None, budget: Budget | None = None) -> RunSpec:
    return RunSpec(workspace=Workspace(ws), contract=TaskContract(goal="lead the work"),
                   policy=policy or Policy.from_lists(tier="workspace-write",
                                                      allow_exec=["sleep *", "echo *"]),
                   budget=budget or Budget(max_steps=100, max_tokens=None, wall_seconds=None),
                   sandbox=SandboxConfig(backend=BackendChoice.OFF), model="m-root",
                   agents=agents, agent_limits=limits or AgentLimits())


class Recording:
    """A scripted provider (and its children's) that keeps every request, in order."""

    name = "scripted"

    def __init__(self, inner: ScriptedProvider, log: list[tuple[str, Any]], who: str = "root"):
        self.inner, self.log, self.who = inner, log, who

    def plan_tree(self, starts: Any) -> None:
        self.inner.plan_tree(starts)

    def for_child(self, step: int, call_index: int) -> Recording:
        return Recording(self.inner.for_child(step, call_index), self.log,
                         f"{self.who}/{step}.{call_index}")

    def complete(self, request: Any, *, step: int, on_token: Any = None) -> Any:
        self.log.append((self.who, request))
        return self.inner.complete(request, step=step, on_token=on_token)

    def close(self) -> None:
        return None
