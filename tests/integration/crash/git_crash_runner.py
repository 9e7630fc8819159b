"""A real `io` runner process that commits with git_commit and kills itself (SIGKILL)
at the commit's intent/observation boundary.

    python git_crash_runner.py STORE WORKSPACE REPLAY start|resume:RUN_ID POINT

POINT: none | after_intent (the intent is durable, the commit has not run) |
before_observation (the commit landed, its observation is not recorded).
"""

from __future__ import annotations

import os
import signal
import sys
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
    ToolCall,
    Workspace,
)
from harness_core.sandbox import BackendChoice


class KillingStore(Store):
    point = "none"

    def record_intent(self, run_id: str, step: int, call_index: int, call: ToolCall) -> None:
        super().record_intent(run_id, step, call_index, call)
        if self.point == "after_intent" and call.name == "git_commit":
            os.kill(os.getpid(), signal.SIGKILL)

    def record_observation(self, run_id: str, step: int, call_index: int, result: Any,
                           **kw: Any) -> None:
        if self.point == "before_observation" and result.name == "git_commit":
            os.kill(os.getpid(), signal.SIGKILL)
        super().record_observation(run_id, step, call_index, result, **kw)


def main() -> None:
    store_path, workspace, replay, mode, point = sys.argv[1:6]
    KillingStore.point = point
    store = KillingStore(store_path)
    provider = ScriptedProvider(ProviderConfig(kind="scripted", script=Path(replay)))
    spec = RunSpec(workspace=Workspace(workspace), contract=TaskContract(goal="commit"),
                   budget=Budget(max_steps=20, max_tokens=None, wall_seconds=None),
                   sandbox=SandboxConfig(backend=BackendChoice.OFF), model="scripted")
    runner = Runner(store, provider, new_id=lambda: "run-git")
    outcome = runner.start(spec) if mode == "start" else runner.resume(mode.split(":")[1], spec)
    print(outcome.status.value, outcome.steps, flush=True)
    store.close()


if __name__ == "__main__":
    main()
