"""A real runner process for kill -9 tests of hooks.

    python hook_crash_runner.py STORE WORKSPACE REPLAY start|resume:RUN_ID HOOKS_JSON

HOOKS_JSON is a list of [event, program, name] (user-scope hooks: on the host). The
`work` tool touches WORKSPACE/work.started and, when asked to wait, waits until it is
killed; after a crash its `resume` reports the work as done (a resumable tool), so the
resumed run reaches the call's hooks again.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from harness_core import (
    Budget,
    ProviderConfig,
    Runner,
    RunSpec,
    SandboxConfig,
    ScriptedProvider,
    Store,
    TaskContract,
    Toolbox,
    ToolContext,
    ToolOutcome,
    ToolSpec,
    Workspace,
)
from harness_core.hooks import HookConfig, HookEvent
from harness_core.sandbox import BackendChoice


class Work:
    spec = ToolSpec("work", "Do some work", {
        "type": "object", "properties": {"wait": {"type": "boolean"}}, "required": []})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        Path(ctx.workspace.abspath("work.started")).touch()
        while args.get("wait"):
            time.sleep(0.05)  # the subject under test waits to be killed; the test polls
        return ToolOutcome("worked", changed=True)

    def resume(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome("resumed: the work was already done")


def main() -> None:
    store_path, workspace, replay, mode, hooks_json = sys.argv[1:6]
    hooks = tuple(HookConfig(HookEvent(event), (sys.executable, program), name=name,
                             scope="user") for event, program, name in json.loads(hooks_json))
    toolbox = Toolbox.builtins()
    toolbox.add(Work())
    spec = RunSpec(workspace=Workspace(workspace), contract=TaskContract(goal="work"),
                   budget=Budget(max_steps=100, max_tokens=None, wall_seconds=None),
                   sandbox=SandboxConfig(backend=BackendChoice.OFF), model="scripted",
                   hooks=hooks)
    provider = ScriptedProvider(ProviderConfig(kind="scripted", script=Path(replay)))
    with Store(store_path) as store:
        runner = Runner(store, provider, toolbox=toolbox, new_id=lambda: "run-hooks")
        if mode == "start":
            outcome = runner.start(spec)
        else:
            outcome = runner.resume(mode.split(":", 1)[1], spec)
        print(outcome.status.value, outcome.steps, flush=True)


if __name__ == "__main__":
    main()
