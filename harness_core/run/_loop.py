"""The run loop: steps, the ledger, checkpoints, resume, budgets, gates.

A step is one completion plus the tool calls it asked for. The completion commits
before any call runs; each call's intent commits before it runs and its observation
after; the checkpoint (with the budget draw) commits last (`StepWrites` holds that
order). On resume a recorded completion is never requested again, a call with an
observation is replayed from the store, and a call with an intent but no observation
is NOT re-run: the model is told its outcome is unknown (at most once). Nothing here
writes to the terminal.

`Runner` holds the loop's phases as collaborators, each given the runner's `RunParts`:
`Asker` (the completion and what it costs), `Actor` (the step's calls), `Verifier` (the
gates at the final answer) and `Ender` (how a drive ends).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness_core.clock import Clock, SystemClock
from harness_core.errors import HarnessError, UsageError
from harness_core.events import Event, EventKind, EventSink
from harness_core.messages import Message
from harness_core.policy import Approver, Policy
from harness_core.providers import Provider
from harness_core.run._act import INTERRUPTED_OBSERVATION, Actor
from harness_core.run._ask import Asker
from harness_core.run._drive_help import (
    _check_resume_args,
    _close_all,
    _own_start_time,
    _process_alive,
    _sandbox_json,
)
from harness_core.run._drive_state import OperatorReply, Resumption, _Drive, _Stop
from harness_core.run._hooks import start_messages
from harness_core.run._inputs import baseline_json, gate_inputs, protect_gate_inputs
from harness_core.run._launchers import Launchers, build_launchers
from harness_core.run._ledger import StepWrites
from harness_core.run._open import open_drive, open_extras, start_mcp
from harness_core.run._parts import Extras, RunParts
from harness_core.run._prompt import opening_messages
from harness_core.run._spawn import plan_tree
from harness_core.run._spec import RunOutcome, RunSpec
from harness_core.run._stop import Ender, _verdict, has_final_answer
from harness_core.run._tree import (
    SerialApprover,
    SerialResponder,
    TreeContext,
    with_spawn,
)
from harness_core.run._verify import Verifier
from harness_core.shell import HandleRegistry
from harness_core.store import RunStatus, Store
from harness_core.store._tree import TreePlace
from harness_core.tools import Toolbox, default_toolbox
from harness_core.tools._plan_tools import Responder

__all__ = ["INTERRUPTED_OBSERVATION", "Runner"]


class Runner:
    """Drives runs: `start` a new one, `resume` a recorded one.

    Args:
        store: Where every step lands.
        provider: The model provider.
        clock: Time (injected; tests pass a manual clock).
        on_event: Receives events as the run goes.
        approver: Decides `ask` verdicts; None (or an approver answering None) pauses.
        toolbox: The tools offered; defaults to the built-ins.
        new_id: Makes run ids (injected where snapshots must be stable).
        extras: Makes the named services a caller's own tools need, per run.
        responder: Answers `ask_question` in this process; None pauses the run instead.
    """

    def __init__(
        self,
        store: Store,
        provider: Provider,
        *,
        clock: Clock | None = None,
        on_event: EventSink | None = None,
        approver: Approver | None = None,
        toolbox: Toolbox | None = None,
        new_id: Callable[[], str] | None = None,
        extras: Extras | None = None,
        responder: Responder | None = None,
    ) -> None:
        self.parts = RunParts(
            store, provider, clock or SystemClock(), toolbox or default_toolbox(),
            new_id or (lambda: uuid.uuid4().hex[:12]), approver=approver,
            responder=responder, extras=extras, sink=on_event)
        self.ask = Asker(self.parts)
        self.act = Actor(self.parts, self._child)
        self.ender = Ender(self.parts)
        self.verifier = Verifier(self.parts, self.ender)

    @property
    def store(self) -> Store:
        return self.parts.store

    @property
    def provider(self) -> Provider:
        return self.parts.provider

    @property
    def clock(self) -> Clock:
        return self.parts.clock

    @property
    def approver(self) -> Approver | None:
        return self.parts.approver

    @property
    def responder(self) -> Responder | None:
        return self.parts.responder

    @property
    def toolbox(self) -> Toolbox:
        return self.parts.toolbox

    def cancel(self) -> None:
        """Ask the run to stop at the next step boundary (thread-safe)."""
        self.parts.cancel.set()

    def _child(self, store: Store, provider: Provider, tree: TreeContext) -> Runner:
        """The runner of a child in `tree`: this runner's parts, one prompt at a time."""
        parts = self.parts
        approver = SerialApprover(parts.approver, tree.lock) if parts.approver else None
        responder = SerialResponder(parts.responder, tree.lock) if parts.responder else None
        child = type(self)(store, provider, clock=parts.clock, on_event=parts.sink,
                           approver=approver, toolbox=parts.toolbox, new_id=parts.new_id,
                           extras=parts.extras, responder=responder)
        child.parts.tree = tree.below()
        child.parts.cancel = tree.cancel
        child.parts.redact = parts.redact  # the tree's secrets stay out of a child's records
        return child

    # ---- entry points -------------------------------------------------------------

    def start(self, spec: RunSpec) -> RunOutcome:
        """Start a new run of `spec` and drive it until it finishes, stops or pauses."""
        self.parts.keep_secrets(spec)
        inputs = gate_inputs(spec)
        spec = protect_gate_inputs(spec, inputs)
        settings = spec.settings_json()
        settings["gate_inputs"] = baseline_json(spec.workspace, inputs)
        launchers = build_launchers(spec)
        plan_tree(self.provider, spec, is_root=self.parts.tree is None)
        run_id = self._create(spec, launchers, settings=settings)
        return self._drive(run_id, spec, launchers)

    def _create(
        self,
        spec: RunSpec,
        launchers: Launchers,
        *,
        place: TreePlace | None = None,
        parent_run_id: str | None = None,
        settings: dict[str, object] | None = None,
    ) -> str:
        run_id = self.parts.new_id()
        if settings is None:  # a child: its gates' inputs are fingerprinted when it starts
            settings = spec.settings_json()
            settings["gate_inputs"] = baseline_json(spec.workspace, gate_inputs(spec))
        self.store.create_run(
            run_id, goal=spec.contract.goal, workspace=str(spec.workspace.root),
            model=spec.model, settings=settings, policy=spec.policy.to_json(),
            sandbox=_sandbox_json(launchers), messages=opening_messages(spec),
            session_id=spec.session_id, parent_run_id=parent_run_id or spec.parent_run_id,
            owner_pid=os.getpid(), owner_started=_own_start_time(), tree=place,
        )
        self.parts.emit(Event(EventKind.RUN_STARTED, run_id, {
            "goal": spec.contract.goal, "resumed": False, "workspace": str(spec.workspace.root),
            "sandbox": _sandbox_json(launchers),
            "parent_run_id": parent_run_id or spec.parent_run_id,
            "depth": place.depth if place is not None else 0,
        }))
        return run_id

    def resume(
        self,
        run_id: str,
        spec: RunSpec,
        *,
        approve: bool | None = None,
        answer: str | None = None,
        stored_policy: bool = False,
    ) -> RunOutcome:
        """Resume a crashed, interrupted or paused run (a tree: through its root).

        Args:
            run_id: The run (the root, for a tree).
            spec: What it runs under now; its policy bounds every child.
            approve: The operator's decision on a deferred approval the tree waits for.
            answer: The operator's answer to a question the tree waits for.
            stored_policy: Run every run of the tree under the policy it recorded
                instead (`spec.policy` is ignored).

        Raises:
            RunNotFound: No such run.
            RunInUse: Another live process drives it.
            UsageError: A paused run resumed without what it waits for (or with the wrong
                one), or a child's id (a child is resumed through its root).
        """
        self.parts.keep_secrets(spec)
        record = self.store.run(run_id)
        recorded_schema = record.settings.get("answer_schema")
        if spec.answer_schema is None and isinstance(recorded_schema, dict):
            # `io run --output-schema` holds for the whole run: a resume checks the final
            # answer against the schema the run started with.
            spec = replace(spec, answer_schema=recorded_schema)
        if stored_policy:
            self.parts.stored_policy = True
            spec = replace(spec, policy=Policy.from_json(record.policy))
        if record.depth > 0 and self.parts.tree is None:
            raise UsageError(
                f"run {run_id} is a child in the tree of run {record.root_run_id}; a child is"
                " resumed through its root", hint=f"io resume {record.root_run_id}")
        if record.status.is_terminal:
            gates = self.ender.last_gates(run_id)
            answered = has_final_answer(record.status, record.reason)  # as at its end
            return RunOutcome(run_id, record.status, record.reason or record.status.value,
                              record.steps_used, verified=_verdict(gates), gates=gates,
                              answer=self.ender.answer(run_id, spec.answer_schema)
                              if answered else "")
        pause = record.pause if record.status is RunStatus.PAUSED else None
        _check_resume_args(pause, approve, answer)
        spec = protect_gate_inputs(spec)
        seq = self.store.acquire_run(run_id, os.getpid(), _own_start_time(), alive=_process_alive)
        launchers = build_launchers(spec)
        plan_tree(self.provider, spec, is_root=self.parts.tree is None)
        self.store.record_drive(run_id, seq, os.getpid(), spec.policy.to_json(),
                                _sandbox_json(launchers))
        self.store.mark_orphaned_handles(run_id)
        last = self.store.last_checkpoint(run_id)
        self.store.record_operator_input(
            run_id, "resume", {"drive": seq, "stored_policy": stored_policy},
            last.step_index + 1 if last is not None else 0)
        self.parts.emit(Event(EventKind.RUN_STARTED, run_id, {
            "goal": record.goal, "resumed": True, "workspace": str(spec.workspace.root),
            "sandbox": _sandbox_json(launchers), "parent_run_id": record.parent_run_id,
        }))
        resumption = Resumption(OperatorReply(pause, approve, answer),
                                wall_before=record.wall_used, tokens_before=record.tokens_used)
        return self._drive(run_id, spec, launchers, resumption=resumption)

    # ---- the drive ------------------------------------------------------------------

    def _drive(
        self,
        run_id: str,
        spec: RunSpec,
        launchers: Launchers,
        *,
        resumption: Resumption | None = None,
        own_launchers: bool = True,
    ) -> RunOutcome:
        """Drive the run to its end (`resumption`: where a resumed run starts from).
        `own_launchers` is False for a fresh child that runs its commands in its parent's
        sandbox (its policy is the parent's): the sandbox's egress stays decided by the
        parent's guard, and ending the sandbox is the parent's, since a sibling in
        parallel may still have commands in it."""
        drive = open_drive(self.parts, run_id, spec, launchers, resumption, own_launchers)
        # What closes with the drive: its handles, the caller's extras (whatever their
        # names), its MCP session. A list, so an extra named "handles" hides nothing.
        closing: list[object] = [drive.hooks]
        capture_dir = Path(tempfile.mkdtemp(prefix=f"io-{run_id}-"))
        try:
            registry = HandleRegistry(
                run_id=run_id, launcher=launchers.commands, workspace=spec.workspace,
                capture_dir=capture_dir, clock=self.clock, store=self.store)
            closing.append(registry)
            drive.ctx.services.handles = registry
            closing.extend(open_extras(self.parts, drive))
            drive.toolbox = self.toolbox
            if spec.mcp:
                closing.append(start_mcp(self.parts, drive))
            drive.toolbox = with_spawn(drive.toolbox, spec)
            outcome = self._loop(drive, resumption)
        except KeyboardInterrupt:
            outcome = self.ender.end(drive, _Stop(RunStatus.INTERRUPTED, "interrupted (Ctrl-C)"))
        except BaseException as exc:
            reason = str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
            self.ender.end(drive, _Stop(RunStatus.ERRORED, reason))
            raise
        finally:
            _close_all(closing)
            if own_launchers:
                launchers.close()
            shutil.rmtree(capture_dir, ignore_errors=True)
            self.store.release_run(run_id, os.getpid())
        return outcome

    def _loop(self, drive: _Drive, resumption: Resumption | None) -> RunOutcome:
        step, last = 0, None
        reply = resumption.reply if resumption is not None else None
        # A resume inside a step (its completion recorded, its calls not all observed,
        # as when it paused) is not at a step boundary: the queue waits for the next one,
        # so no message lands between a call and its result.
        mid_step = False
        if reply is not None:
            drive.recorded_upto = sys.maxsize
            drive.pending_pause = reply.pause
            last = self.store.last_checkpoint(drive.run_id)
            step = last.step_index + 1 if last is not None else 0
            self.ask.prior_cost(drive, step)
        try:
            self._start_hooks(drive, step, resumed=reply is not None)
        except _Stop as stop:
            return self.ender.end(drive, stop)
        if reply is not None:
            if last is not None and last.state.done:
                ended = self.verifier.resumed_done(drive, last.step_index, last.state.verified)
                if ended is not None:
                    return ended
            mid_step = self.store.step(drive.run_id, step) is not None
        if drive.snapshots is not None:
            drive.snapshots.start(step)
        weight = drive.spec.budget.cache_read_weight
        try:
            while True:
                self._boundary(drive, step, take_inbox=not mid_step)
                mid_step = False
                recorded = (self.store.step(drive.run_id, step)
                            if step <= drive.recorded_upto else None)
                if recorded is None:
                    self.ask.check_budget(drive, step)
                    self.ask.compact(drive, step)
                    response = self.ask.complete(drive, step)
                    calls, tokens = response.tool_calls, response.usage.billed_tokens(weight)
                    self.ask.draw_cost(drive, response.model or drive.spec.model,
                                       response.usage, fresh=True)
                else:
                    calls, tokens = recorded.tool_calls, recorded.usage.billed_tokens(weight)
                    drive.tree.budget.add(steps=1)
                    self.ask.draw_cost(drive, recorded.model_served or drive.spec.model,
                                       recorded.usage)
                assert drive.compactor is not None
                tokens += drive.compactor.billed(step, weight)
                drive.guard.step = step
                writes = StepWrites(self.store, self.clock, drive.run_id, step, tokens=tokens,
                                    started=drive.started, calls=calls)
                self.act.run_step(drive, writes, calls, reply)
                reply = None
                now = writes.checkpoint(done=not calls)
                drive.wall_before += now - drive.started
                drive.started = now
                drive.tokens_used += tokens
                drive.tree.budget.add(tokens=tokens)
                self.parts.emit(Event(EventKind.CHECKPOINT, drive.run_id, {"step": step}))
                ended = self.verifier.done(drive, step) if not calls else None
                if ended is not None:
                    return ended
                step += 1
        except _Stop as stop:
            return self.ender.end(drive, stop)

    def _start_hooks(self, drive: _Drive, step: int, *, resumed: bool) -> None:
        refused, messages = start_messages(drive.hooks, self.store, drive.run_id, step,
                                           goal=drive.spec.contract.goal, resumed=resumed)
        if refused is not None:
            raise _Stop(RunStatus.ERRORED, f"a run_start hook refused the run: {refused}")
        drive.context.extend(messages)

    def _boundary(self, drive: _Drive, step: int, *, take_inbox: bool = True) -> None:
        tree = self.parts.tree
        if self.parts.cancel.is_set():
            raise _Stop(RunStatus.INTERRUPTED, "interrupted by the operator")
        if tree is not None and self.store.interrupt_pending(tree.root_run_id):
            raise _Stop(RunStatus.INTERRUPTED,
                        "interrupted by the operator (io interrupt of the tree's root)")
        if not take_inbox or not self.store.has_inbox(drive.run_id):
            return
        for kind, body in self.store.take_inbox(drive.run_id, step):
            if kind == "interrupt":
                raise _Stop(RunStatus.INTERRUPTED, "interrupted by the operator (io interrupt)")
            if kind == "steer":
                text = str(body.get("text", ""))
                message = Message.user(f"[operator steer] {text}")
                self.store.append_messages(drive.run_id, step, [message])
                drive.context.append(message)
                self.parts.emit(Event(EventKind.STEER, drive.run_id, {"text": text, "step": step}))
