"""A real `io` runner process that kills itself (SIGKILL) at a named point.

    python crash_runner.py STORE WORKSPACE REPLAY start|resume:RUN_ID POINT STEP

POINT is one of: none, before_request, after_response, mid_commit, after_effect,
mid_write, after_verify (the final answer's checks recorded, the run's end not yet), and
the ledger's write points in their commit order (`harness_core/run/_ledger.py`
`StepWrites`): after_intent, after_observation (the step's first one; the last call's
carries the checkpoint), after_checkpoint (one no observation carried). The run id is printed on stdout first thing. Each provider request is logged
to WORKSPACE/../requests.log as "step" lines, so the test can count them.
"""

from __future__ import annotations

import os
import signal
import sys
import uuid
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
from harness_core.sandbox import BackendChoice


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class Killer:
    def __init__(self, point: str, step: int) -> None:
        self.point, self.step = point, step

    def at(self, point: str, step: int) -> None:
        if self.point == point and self.step == step:
            die()


class KillingProvider:
    name = "scripted"

    def __init__(self, inner: ScriptedProvider, killer: Killer, log: Path) -> None:
        self.inner, self.killer, self.log = inner, killer, log

    def complete(self, request: Any, *, step: int, on_token: Any = None) -> Any:
        self.killer.at("before_request", step)
        with open(self.log, "a") as fh:
            fh.write(f"{step}\n")
        response = self.inner.complete(request, step=step, on_token=on_token)
        self.killer.at("after_response", step)
        return response

    def plan_tree(self, starts: Any) -> None:
        self.inner.plan_tree(starts)

    def for_child(self, step: int, call_index: int) -> KillingProvider:
        return KillingProvider(self.inner.for_child(step, call_index), self.killer, self.log)

    def close(self) -> None:
        return None


class KillingStore(Store):
    killer: Killer
    _armed = False

    def record_completion(self, run_id: str, step: int, **kw: Any) -> None:  # type: ignore[override]
        self._armed = self.killer.point == "mid_commit" and self.killer.step == step
        try:
            super().record_completion(run_id, step, **kw)
        finally:
            self._armed = False

    def record_intent(self, run_id: str, step: int, *args: Any) -> None:  # type: ignore[override]
        super().record_intent(run_id, step, *args)
        self.killer.at("after_intent", step)

    def record_observation(self, run_id: str, step: int, *args: Any, **kw: Any) -> None:  # type: ignore[override]
        super().record_observation(run_id, step, *args, **kw)
        self.killer.at("after_observation", step)

    def record_checkpoint(self, run_id: str, step: int, *args: Any, **kw: Any) -> None:  # type: ignore[override]
        super().record_checkpoint(run_id, step, *args, **kw)
        self.killer.at("after_checkpoint", step)

    def update_checkpoint_state(self, run_id: str, step: int, state: Any) -> None:  # type: ignore[override]
        super().update_checkpoint_state(run_id, step, state)
        self.killer.at("after_verify", step)

    def _tx(self):  # type: ignore[no-untyped-def,override]
        inner = super()._tx()
        store = self

        class _Wrapped:
            def __enter__(self) -> Any:
                return inner.__enter__()

            def __exit__(self, *exc: Any) -> Any:
                if store._armed and exc[0] is None:
                    die()  # inside the transaction, before COMMIT
                return inner.__exit__(*exc)

        return _Wrapped()


class AppendLine:
    spec = ToolSpec("append_line", "Append a line to log.txt",
                    {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]})

    def __init__(self, killer: Killer) -> None:
        self.killer = killer

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        with open(ctx.workspace.abspath("log.txt"), "a") as fh:
            fh.write(args["text"] + "\n")
        step = int(args["text"].split(":")[0])
        self.killer.at("after_effect", step)
        return ToolOutcome(f"appended {args['text']}", changed=True)


def main() -> None:
    store_path, workspace, replay, mode, point, step = sys.argv[1:7]
    killer = Killer(point, int(step))
    if point == "mid_write":
        real_replace = os.replace

        def replace(src: Any, dst: Any, **kw: Any) -> None:
            if "big.txt" in str(dst):
                die()
            real_replace(src, dst, **kw)

        os.replace = replace  # type: ignore[assignment]
    KillingStore.killer = killer
    store = KillingStore(store_path)
    provider = KillingProvider(
        ScriptedProvider(ProviderConfig(kind="scripted", script=Path(replay))), killer,
        Path(workspace).parent / "requests.log")
    toolbox = Toolbox.builtins()
    toolbox.add(AppendLine(killer))
    spec = RunSpec(workspace=Workspace(workspace), contract=TaskContract(goal="append lines"),
                   budget=Budget(max_steps=1000, max_tokens=None, wall_seconds=None),
                   sandbox=SandboxConfig(backend=BackendChoice.OFF), model="scripted")
    first = ["run-crash"] if mode == "start" else []

    def new_id() -> str:  # the root gets a known id; children (made in threads) random ones
        return first.pop() if first else uuid.uuid4().hex[:12]

    runner = Runner(store, provider, toolbox=toolbox, new_id=new_id)  # type: ignore[arg-type]
    if mode == "start":
        outcome = runner.start(spec)
    else:
        outcome = runner.resume(mode.split(":", 1)[1], spec)
    print(outcome.status.value, outcome.steps, flush=True)
    store.close()


if __name__ == "__main__":
    main()
