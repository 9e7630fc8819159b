"""Where the loop meets its hooks: building the run's `HookRunner`, and the two call
sites that change the conversation (`run_start` context, a refused stop).

Kept out of `_loop` so the loop's own code stays one screen per concern; the tool-call
sites (`pre_tool`, `post_tool`) are one line each in the loop, `child_stop` one in
`_spawn`. Nothing here writes to the terminal.
"""

from __future__ import annotations

from harness_core.events import EventSink
from harness_core.hooks import HookEvent, HookProcesses, HookRunner
from harness_core.messages import Message
from harness_core.run._guard import Guard
from harness_core.run._launchers import Launchers
from harness_core.run._spec import RunSpec
from harness_core.store import Store

__all__ = ["hook_runner", "refused_stop", "start_messages"]


def hook_runner(spec: RunSpec, launchers: Launchers, store: Store, run_id: str, guard: Guard,
                emit: EventSink) -> HookRunner:
    """The hooks of one drive: project-scope ones in the gates' sandbox, the others on
    the host; a hook's ``ask`` goes to `guard`'s approval flow."""
    processes = HookProcesses(spec.workspace.root, launchers.gates, spec.env)
    return HookRunner(spec.hooks, processes, store=store, run_id=run_id, emit=emit,
                      ask=guard.ask)


def start_messages(hooks: HookRunner, store: Store, run_id: str, step: int, *, goal: str,
                   resumed: bool) -> tuple[str | None, list[Message]]:
    """Run the `run_start` hooks: why the drive must not go on (None: it may), and the
    messages their context adds (already appended to the conversation)."""
    if not hooks.has(HookEvent.RUN_START):
        return None, []
    verdict = hooks.run_start(step, goal=goal, resumed=resumed)
    if verdict.refused is not None:
        return verdict.refused, []
    if not verdict.context:
        return None, []
    message = Message.user(verdict.context)
    store.append_messages(run_id, step, [message])
    return None, [message]


def refused_stop(hooks: HookRunner, store: Store, run_id: str, step: int) -> Message | None:
    """Run the `stop` hooks for `step`, whose model said it is done: the message that
    sends the run on (recorded, with the step marked not done), or None to let it end."""
    if not hooks.has(HookEvent.STOP):
        return None
    record = store.step(run_id, step)
    reason = hooks.stop(step, text=record.text if record is not None else "")
    if reason is None:
        return None
    message = Message.user(f"A stop hook says the task is not done yet:\n{reason}")
    store.refuse_stop(run_id, step, message)
    return message
