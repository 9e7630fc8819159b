"""Running the `spawn_agent` calls of one completion: children as runs of their own.

The at-most-once rules of the ledger hold for a child as for any call. The call's
intent commits first; then the child's `runs` row is created (keyed by the parent's
step and call index) before the child does anything. A resumed parent that finds the
row continues that child from its own checkpoint and never starts a second one; a
parent that finds only the intent knows the child never started and starts it. The
child's outcome, with what the `child_stop` hooks add to it, becomes the call's observation
when the child ends.

Consecutive `spawn_agent` calls of one completion run at the same time (up to
`[agents] parallel`), each child in its own thread with its own store connection. A
child's question or deferred approval pauses the parent, and so the whole tree, once
every sibling has ended or paused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from harness_core._record import record
from harness_core.agents import spawn_refusal
from harness_core.errors import CheckpointFormatError, HarnessError, RunInUse, StateError
from harness_core.events import Event, EventKind
from harness_core.messages import ToolCall
from harness_core.providers import Provider
from harness_core.run._launchers import Launchers, build_launchers
from harness_core.run._spec import RunOutcome, RunSpec
from harness_core.run._tree import (
    TreeContext,
    child_observation,
    child_spec,
)
from harness_core.store import Pause, RunRecord, RunStatus, Store
from harness_core.store._tree import TreePlace
from harness_core.tool_data import SpawnRefused
from harness_core.tools import ToolOutcome

if TYPE_CHECKING:
    from harness_core.run._drive_state import OperatorReply, Resumption, _Drive
    from harness_core.run._ledger import StepWrites
    from harness_core.run._parts import RunParts

__all__ = ["Actor", "Child", "ChildMaker", "Held", "plan_tree", "run_spawns"]


class Child(Protocol):
    """What `_spawn` needs of a child's runner (`Runner` is one)."""

    def _create(self, spec: RunSpec, launchers: Launchers, *, place: TreePlace | None = None,
               parent_run_id: str | None = None) -> str:
        """Record a new run of `spec` and return its id."""
        ...

    def _drive(self, run_id: str, spec: RunSpec, launchers: Launchers, *,
              resumption: Resumption | None = None, own_launchers: bool = True) -> RunOutcome:
        """Drive run `run_id` to its end."""
        ...

    def resume(self, run_id: str, spec: RunSpec, *, approve: bool | None = None,
               answer: str | None = None, stored_policy: bool = False) -> RunOutcome:
        """Resume run `run_id` (a child: through its parent's drive)."""
        ...


ChildMaker = Callable[[Store, Provider, TreeContext], Child]
"""Makes the runner of a child in `tree` (one per child, on its own store connection)."""


class Actor(Protocol):
    """What `_spawn` needs of the parent's `harness_core.run._act.Actor`."""

    children: ChildMaker

    def observe(self, drive: _Drive, writes: StepWrites, index: int, call: ToolCall,
                outcome: ToolOutcome, *, progress: str | None = None) -> None:
        """Record call `index`'s observation."""
        ...


@record
class Held:
    """Why the parent stops after its children: a pause (with what it waits for) or an
    interrupt."""

    status: RunStatus
    reason: str
    pause: Pause | None = None


@record(frozen=False)
class _Job:
    index: int
    call: ToolCall
    child_id: str
    spec: RunSpec
    provider: Provider
    agent: str | None
    fresh: bool
    reply: OperatorReply | None = None
    """The operator's decision, when this child is the run that waits for it."""
    hold: RunRecord | None = None
    outcome: RunOutcome | None = None
    error: str | None = None
    final: str = ""


def run_spawns(
    parts: RunParts,
    actor: Actor,
    drive: _Drive,
    writes: StepWrites,
    items: list[tuple[int, ToolCall]],
    reply: OperatorReply | None,
) -> Held | None:
    """Run (or continue) the children of consecutive `spawn_agent` calls of the step of
    `writes`; `reply` is the operator's decision on the pause the tree waits at.

    Returns:
        None when every call has its observation, else why the parent must stop.
    """
    step = writes.step
    store = parts.store
    entries = {e.call_index: e for e in store.ledger(drive.run_id, step)}
    spawned = store.count_children(drive.run_id)
    jobs: list[_Job] = []
    stalled: Held | None = None
    for index, call in items:
        entry = entries.get(index)
        if entry is not None and entry.has_observation:
            continue
        record = store.child_run(drive.run_id, step, index) if entry is not None else None
        if record is not None:
            jobs.append(_continued(parts, drive, step, index, call, record,
                                   reply.for_call(step, index) if reply else None))
            continue
        if entry is None:
            writes.intent(index, call)
        args = call.arguments if call.raw_arguments is None else None
        refusal = spawn_refusal(args, roster=drive.spec.agents, limits=drive.spec.agent_limits,
                                depth=drive.tree.depth + 1, spawned=spawned)
        if refusal is None:  # io's own limits first; then the pre_tool hooks may narrow
            hooked = drive.hooks.pre_tool(step, index, call, can_ask=False)
            refusal = hooked.output if hooked is not None else None
        if refusal is None:
            spawned += 1
            job = _fresh(parts, actor.children, drive, step, index, call)
            if isinstance(job, str):
                refusal = job
            else:
                jobs.append(job)
                continue
        reason, mark = _watch(drive, call) if stalled is None else (None, None)
        actor.observe(drive, writes, index, call, ToolOutcome(
            refusal, is_error=True, data=SpawnRefused(refusal)), progress=mark)
        stalled = stalled or _stalled(parts, drive, call, reason)
    _execute(parts, actor.children, drive, jobs)
    return _settle(parts, actor, drive, writes, jobs) or stalled


def _watch(drive: _Drive, call: ToolCall) -> tuple[str | None, str]:
    """The stall detector sees spawns too: a parent respawning one child is a stall.
    The stall's reason (None: none) and the mark recorded with the call's observation."""
    reason = drive.progress.observe(call.key())
    return reason, drive.progress.last_mark


def _stalled(parts: RunParts, drive: _Drive, call: ToolCall, reason: str | None) -> Held | None:
    if reason is None:
        return None
    parts.emit(Event(EventKind.STALL, drive.run_id, {"call": call.key(), "reason": reason}))
    return Held(RunStatus.STOPPED, reason)


def plan_tree(provider: Provider, spec: RunSpec, *, is_root: bool) -> None:
    """Tell a provider that serves a whole tree from one script (scripted) which
    `spawn_agent` calls will start a child, so it can split the script statically."""
    plan = getattr(provider, "plan_tree", None)
    if not is_root or not callable(plan):
        return

    def starts(arguments: object, depth: int, spawned: int) -> bool:
        return spawn_refusal(arguments, roster=spec.agents, limits=spec.agent_limits,
                             depth=depth, spawned=spawned) is None

    plan(starts)


def _provider_for(parts: RunParts, step: int, index: int) -> Provider:
    for_child = getattr(parts.provider, "for_child", None)
    return for_child(step, index) if callable(for_child) else parts.provider


def _fresh(parts: RunParts, children: ChildMaker, drive: _Drive, step: int, index: int,
           call: ToolCall) -> _Job | str:
    goal = str(call.arguments["goal"])
    name = call.arguments.get("agent")
    agent = drive.spec.agents.get(name) if isinstance(name, str) else None
    try:
        provider = _provider_for(parts, step, index)
    except HarnessError as exc:
        return f"spawn_agent: the child could not start: {exc.message}"
    spec = child_spec(drive.spec, drive.tree, goal=goal, agent=agent)
    child = children(parts.store, provider, drive.tree)
    place = TreePlace(drive.tree.root_run_id, drive.tree.depth + 1, step, index,
                      agent.name if agent else None)
    child_id = child._create(spec, drive.launchers, place=place, parent_run_id=drive.run_id)
    parts.emit(Event(EventKind.SPAWN, drive.run_id, {
        "child_run_id": child_id, "agent": place.agent, "depth": place.depth, "step": step,
        "call_index": index, "goal": goal, "model": spec.model}))
    return _Job(index, call, child_id, spec, provider, place.agent, fresh=True)


def _continued(
    parts: RunParts, drive: _Drive, step: int, index: int, call: ToolCall, record: RunRecord,
    reply: OperatorReply | None,
) -> _Job:
    agent = drive.spec.agents.get(record.agent) if record.agent else None
    spec = child_spec(drive.spec, drive.tree, goal=record.goal, agent=agent, record=record)
    provider = _provider_for(parts, step, index)
    waiting = record.status is RunStatus.PAUSED and reply is None
    return _Job(index, call, record.run_id, spec, provider, record.agent, fresh=False,
                reply=reply, hold=record if waiting else None)


def _execute(parts: RunParts, children: ChildMaker, drive: _Drive, jobs: list[_Job]) -> None:
    live = [job for job in jobs if job.hold is None]
    for job in jobs:
        if job.hold is not None:
            rec = job.hold
            job.outcome = RunOutcome(rec.run_id, rec.status, rec.reason or "paused",
                                     rec.steps_used, rec.pause)
    workers = min(drive.spec.agent_limits.parallel, len(live))
    if workers <= 1:
        for job in live:
            _drive_job(children, drive, job, parts.store)
        return
    # Imported here: `concurrent.futures` brings in `logging` (~5 ms of every run's
    # start-up), and only children run in parallel need it.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="io-child") as pool:
        futures = [pool.submit(_in_thread, parts, children, drive, job) for job in live]
        try:
            for future in futures:
                future.result()
        except BaseException:
            drive.tree.cancel.set()
            raise


def _in_thread(parts: RunParts, children: ChildMaker, drive: _Drive, job: _Job) -> None:
    store = parts.store.reopen()
    try:
        _drive_job(children, drive, job, store)
    finally:
        store.close()


def _drive_job(children: ChildMaker, drive: _Drive, job: _Job, store: Store) -> None:
    child = children(store, job.provider, drive.tree)
    try:
        if job.fresh:
            own = _needs_own_sandbox(drive, job)
            launchers = build_launchers(job.spec) if own else drive.launchers
            job.outcome = child._drive(job.child_id, job.spec, launchers, own_launchers=own)
        else:
            reply = job.reply
            job.outcome = child.resume(job.child_id, job.spec,
                                       approve=reply.approve if reply else None,
                                       answer=reply.answer if reply else None)
    except (RunInUse, StateError, CheckpointFormatError):
        raise
    except HarnessError as exc:
        job.error = exc.message
        record = store.run(job.child_id)
        job.outcome = RunOutcome(job.child_id, record.status, exc.message, record.steps_used)
    steps = store.steps(job.child_id)
    job.final = steps[-1].text if steps else ""


def _needs_own_sandbox(drive: _Drive, job: _Job) -> bool:
    """Whether a fresh child needs a sandbox of its own: when its parent's sandbox has an
    egress proxy and the child's policy is not the parent's (an agent's `deny_net`), since
    one proxy decides every connection of its sandbox through one guard."""
    return (drive.launchers.egress is not None
            and job.spec.policy.to_json() != drive.spec.policy.to_json())


def _settle(parts: RunParts, actor: Actor, drive: _Drive, writes: StepWrites,
            jobs: list[_Job]) -> Held | None:
    step = writes.step
    held: Held | None = None
    interrupted = False
    for job in sorted(jobs, key=lambda j: j.index):
        outcome = job.outcome
        assert outcome is not None
        if outcome.status is RunStatus.PAUSED:
            held = held or Held(RunStatus.PAUSED, f"paused: child {job.child_id} waits",
                                _tree_pause(step, job, outcome.pause))
            continue
        if outcome.status is RunStatus.INTERRUPTED:
            interrupted = True
            continue
        parts.emit(Event(EventKind.SPAWN, drive.run_id, {
            "child_run_id": job.child_id, "agent": job.agent, "step": step,
            "call_index": job.index, "status": outcome.status.value, "steps": outcome.steps,
            "verified": outcome.verified}))
        reason, mark = _watch(drive, job.call) if held is None else (None, None)
        seen = drive.hooks.child_stop(step, job.index, {
            "run_id": job.child_id, "agent": job.agent, "status": outcome.status.value,
            "reason": outcome.reason, "steps": outcome.steps, "verified": outcome.verified,
            "final": job.final}, child_observation(outcome, job.agent, job.final))
        actor.observe(drive, writes, job.index, job.call, seen, progress=mark)
        held = held or _stalled(parts, drive, job.call, reason)
    if interrupted:
        return Held(RunStatus.INTERRUPTED, "interrupted while children ran")
    return held


def _tree_pause(step: int, job: _Job, child: Pause | None) -> Pause:
    """The parent's pause: what the waiting run (maybe deeper) waits for, and where."""
    base = child if child is not None else Pause(kind="approval")
    return replace(base, step=step, call_index=job.index, call_id=job.call.id,
                   tool="spawn_agent", child_run_id=job.child_id,
                   waiting_run_id=base.waiting_run_id or job.child_id)
