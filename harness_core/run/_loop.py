"""The run loop: steps, the ledger, checkpoints, resume, budgets, gates.

A step is one completion plus the tool calls it asked for. The completion commits
before any call runs; each call's intent commits before it runs and its observation
after; the checkpoint (with the budget draw) commits last. On resume a recorded
completion is never requested again, a call with an observation is replayed from the
store, and a call with an intent but no observation is NOT re-run: the model is told
its outcome is unknown (at most once). Nothing here writes to the terminal.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness_core.errors import HarnessError, UsageError
from harness_core.events import Event, EventKind
from harness_core.messages import Message
from harness_core.policy import Policy
from harness_core.run._act import INTERRUPTED_OBSERVATION, _ActPhase
from harness_core.run._ask import _AskPhase
from harness_core.run._compact import Compactor
from harness_core.run._context import ContextBudget
from harness_core.run._drive_help import (
    _check_resume_args,
    _close_all,
    _own_start_time,
    _process_alive,
    _sandbox_json,
)
from harness_core.run._drive_state import _Drive, _StepEnd, _Stop
from harness_core.run._guard import Guard
from harness_core.run._hooks import hook_runner, start_messages
from harness_core.run._inputs import baseline_json, gate_inputs, protect_gate_inputs
from harness_core.run._launchers import Launchers, build_launchers
from harness_core.run._progress import Progress
from harness_core.run._prompt import opening_messages
from harness_core.run._resume import restore_state, stored_conversation
from harness_core.run._snapshots import keeper_for
from harness_core.run._spawn import plan_tree
from harness_core.run._spec import RunOutcome, RunSpec
from harness_core.run._stop import _verdict, has_final_answer
from harness_core.run._tree import root_tree, with_spawn
from harness_core.run._verify import _VerifyPhase
from harness_core.shell import HandleRegistry
from harness_core.store import CheckpointState, Pause, RunStatus
from harness_core.store._tree import TreePlace
from harness_core.tools import RunServices, ToolContext

__all__ = ["INTERRUPTED_OBSERVATION", "Runner"]


class Runner(_ActPhase, _AskPhase, _VerifyPhase):
    """Drives runs: `start` a new one, `resume` a recorded one.

    Args:
        store: Where every step lands.
        provider: The model provider.
        clock: Time (injected; tests pass a manual clock).
        on_event: Receives events as the run goes.
        approver: Decides `ask` verdicts; None (or an approver answering None) pauses.
        toolbox: The tools offered; defaults to the built-ins.
        new_id: Makes run ids (injected where snapshots must be stable).
        responder: Answers `ask_question` in this process; None pauses the run instead.
    """

    # ---- entry points -------------------------------------------------------------

    def start(self, spec: RunSpec) -> RunOutcome:
        """Start a new run of `spec` and drive it until it finishes, stops or pauses."""
        self._keep_secrets(spec)
        inputs = gate_inputs(spec)
        spec = protect_gate_inputs(spec, inputs)
        settings = spec.settings_json()
        settings["gate_inputs"] = baseline_json(spec.workspace, inputs)
        launchers = build_launchers(spec)
        plan_tree(self.provider, spec, is_root=self._tree is None)
        run_id = self._create(spec, launchers, settings=settings)
        return self._drive(run_id, spec, launchers, resumed=False, approve=None, answer=None)

    def _create(
        self,
        spec: RunSpec,
        launchers: Launchers,
        *,
        place: TreePlace | None = None,
        parent_run_id: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> str:
        run_id = self._new_id()
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
        self._emit(Event(EventKind.RUN_STARTED, run_id, {
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
        self._keep_secrets(spec)
        record = self.store.run(run_id)
        recorded_schema = record.settings.get("answer_schema")
        if spec.answer_schema is None and isinstance(recorded_schema, dict):
            # `io run --output-schema` holds for the whole run: a resume checks the final
            # answer against the schema the run started with.
            spec = replace(spec, answer_schema=recorded_schema)
        if stored_policy:
            self._stored_policy = True
            spec = replace(spec, policy=Policy.from_json(record.policy))
        if record.depth > 0 and self._tree is None:
            raise UsageError(
                f"run {run_id} is a child in the tree of run {record.root_run_id}; a child is"
                " resumed through its root", hint=f"io resume {record.root_run_id}")
        if record.status.is_terminal:
            gates = self._last_gates(run_id)
            answered = has_final_answer(record.status, record.reason)  # as at its end
            return RunOutcome(run_id, record.status, record.reason or record.status.value,
                              record.steps_used, verified=_verdict(gates), gates=gates,
                              answer=self._answer(run_id, spec.answer_schema) if answered else "")
        pause = record.pause if record.status is RunStatus.PAUSED else None
        _check_resume_args(pause, approve, answer)
        spec = protect_gate_inputs(spec)
        seq = self.store.acquire_run(run_id, os.getpid(), _own_start_time(), alive=_process_alive)
        launchers = build_launchers(spec)
        plan_tree(self.provider, spec, is_root=self._tree is None)
        self.store.record_drive(run_id, seq, os.getpid(), spec.policy.to_json(),
                                _sandbox_json(launchers))
        self.store.mark_orphaned_handles(run_id)
        last = self.store.last_checkpoint(run_id)
        self.store.record_operator_input(
            run_id, "resume", {"drive": seq, "stored_policy": stored_policy},
            last.step_index + 1 if last is not None else 0)
        self._emit(Event(EventKind.RUN_STARTED, run_id, {
            "goal": record.goal, "resumed": True, "workspace": str(spec.workspace.root),
            "sandbox": _sandbox_json(launchers), "parent_run_id": record.parent_run_id,
        }))
        return self._drive(run_id, spec, launchers, resumed=True, approve=approve, answer=answer,
                           pause=pause, wall_before=record.wall_used,
                           tokens_before=record.tokens_used)

    # ---- the drive ------------------------------------------------------------------

    def _drive(
        self,
        run_id: str,
        spec: RunSpec,
        launchers: Launchers,
        *,
        resumed: bool,
        approve: bool | None,
        answer: str | None,
        pause: Pause | None = None,
        wall_before: float = 0.0,
        tokens_before: int = 0,
        own_launchers: bool = True,
    ) -> RunOutcome:
        """Drive the run to its end. `own_launchers` is False for a fresh child that runs
        its commands in its parent's sandbox (its policy is the parent's): the sandbox's
        egress stays decided by the parent's guard, and ending the sandbox is the parent's,
        since a sibling in parallel may still have commands in it."""
        guard = Guard(spec.policy, store=self.store, run_id=run_id, approver=self.approver,
                    emit=self._emit)
        if own_launchers:
            launchers.attach(guard, self.store)
        launchers.note_run(run_id, self.store)
        ctx = ToolContext(
            workspace=spec.workspace, gate=guard, launcher=launchers.commands, clock=self.clock,
            run_id=run_id, output_cap=spec.output_cap, exec_timeout=spec.exec_timeout,
        )
        ctx.services = RunServices(todos=self.store, git=spec.git, responder=self.responder,
                                   documents=spec.documents)
        context = ContextBudget(spec.context_max_tokens if spec.context_strategy == "elide"
                                else None)
        compactor = Compactor(self.store, self.provider, run_id, spec, self._emit)
        compactor.open(context, stored_conversation(self.store.messages(run_id), spec.workspace),
                       self.store.opening_count(run_id))
        tree = self._tree or root_tree(self.store, self.clock, run_id, spec, resumed=resumed,
                                       wall_before=wall_before, stored_policy=self._stored_policy,
                                       cancel=self._cancel)
        drive = _Drive(run_id, spec, guard, ctx, launchers, context,
                       Progress(spec.stall_window, spec.workspace.fingerprint),
                       self.clock.monotonic(), wall_before, tokens_before, tree,
                       compactor=compactor)
        if self._tree is None:  # a tree's children change the root's files: its steps'
            drive.snapshots = keeper_for(self.store, run_id, spec, self._emit)
        drive.hooks = hook_runner(spec, launchers, self.store, run_id, guard, self._emit)
        compactor.hooks = drive.hooks
        if resumed:
            restore_state(self.store, run_id, self.provider, drive.progress)
        # What closes with the drive: its handles, the caller's extras (whatever their
        # names), its MCP session. A list, so an extra named "handles" hides nothing.
        closing: list[Any] = [drive.hooks]
        capture_dir = Path(tempfile.mkdtemp(prefix=f"io-{run_id}-"))
        try:
            registry = HandleRegistry(
                run_id=run_id, launcher=launchers.commands, workspace=spec.workspace,
                capture_dir=capture_dir, clock=self.clock, store=self.store)
            closing.append(registry)
            ctx.services.handles = registry
            closing.extend(self._open_extras(drive).values())
            drive.toolbox = self.toolbox
            if spec.mcp:
                closing.append(self._start_mcp(drive))
            drive.toolbox = with_spawn(drive.toolbox, spec)
            outcome = self._loop(drive, resumed=resumed, pause=pause, approve=approve,
                                 answer=answer)
        except KeyboardInterrupt:
            outcome = self._end(drive, _Stop(RunStatus.INTERRUPTED, "interrupted (Ctrl-C)"))
        except BaseException as exc:
            reason = str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
            self._end(drive, _Stop(RunStatus.ERRORED, reason))
            raise
        finally:
            _close_all(closing)
            if own_launchers:
                launchers.close()
            shutil.rmtree(capture_dir, ignore_errors=True)
            self.store.release_run(run_id, os.getpid())
        return outcome

    def _start_mcp(self, drive: _Drive) -> Any:
        """Connect the run's MCP servers (each checked by the guard) and offer their tools;
        one that cannot start fails the run (`McpUnavailable`) unless it is optional,
        which is reported and the run goes on without it."""
        from harness_core.mcp import McpSession  # asyncio and the client: only when configured

        def notice(text: str) -> None:  # where a person authorizes a remote server
            self._emit(Event(EventKind.WARNING, drive.run_id, {"mcp": text}))

        from harness_core.run._mcp_net import mcp_net_decider

        session = McpSession.start(drive.spec.mcp, gate=drive.guard, env=drive.spec.env,
                                   workspace=drive.spec.workspace, notice=notice,
                                   net=mcp_net_decider(drive.guard))
        drive.toolbox = self.toolbox.with_tools(session.tools)
        for refusal in session.refusals:
            self._emit(Event(EventKind.WARNING, drive.run_id, {"mcp": refusal.describe()}))
        for failure in session.failures:
            self._emit(Event(EventKind.WARNING, drive.run_id, {"mcp": failure.message}))
        return session

    def _open_extras(self, drive: _Drive) -> dict[str, Any]:
        if self._extras is None:
            return {}
        extras = self._extras(drive.run_id, drive.ctx)
        drive.ctx.extras.update(extras)
        return extras

    def _loop(
        self,
        drive: _Drive,
        *,
        resumed: bool,
        pause: Pause | None,
        approve: bool | None,
        answer: str | None,
    ) -> RunOutcome:
        step, last = 0, None
        # A resume inside a step (its completion recorded, its calls not all observed,
        # as when it paused) is not at a step boundary: the queue waits for the next one,
        # so no message lands between a call and its result.
        mid_step = False
        if resumed:
            drive.recorded_upto = sys.maxsize
            drive.pending_pause = pause
            last = self.store.last_checkpoint(drive.run_id)
            step = last.step_index + 1 if last is not None else 0
            self._prior_cost(drive, step)
        try:
            self._start_hooks(drive, step, resumed=resumed)
        except _Stop as stop:
            return self._end(drive, stop)
        if resumed:
            if last is not None and last.state.done:
                ended = self._resumed_done(drive, last.step_index, last.state.verified)
                if ended is not None:
                    return ended
            mid_step = self.store.step(drive.run_id, step) is not None
        if drive.snapshots is not None:
            drive.snapshots.start(step)
        try:
            while True:
                self._boundary(drive, step, take_inbox=not mid_step)
                mid_step = False
                recorded = (self.store.step(drive.run_id, step)
                            if step <= drive.recorded_upto else None)
                if recorded is None:
                    self._check_budget(drive, step)
                    self._compact(drive, step)
                    response = self._complete(drive, step)
                    calls = response.tool_calls
                    tokens = response.usage.billed_tokens(drive.spec.budget.cache_read_weight)
                    self._draw_cost(drive, response.model or drive.spec.model, response.usage,
                                    fresh=True)
                else:
                    calls = recorded.tool_calls
                    tokens = recorded.usage.billed_tokens(
                        drive.spec.budget.cache_read_weight)
                    drive.tree.budget.add(steps=1)
                    self._draw_cost(drive, recorded.model_served or drive.spec.model,
                                    recorded.usage)
                assert drive.compactor is not None
                tokens += drive.compactor.billed(step, drive.spec.budget.cache_read_weight)
                drive.guard.step = step
                drive.step_end = _StepEnd(step, tokens) if calls else None
                self._run_calls_kept(drive, step, calls, pause=pause, approve=approve,
                                     answer=answer)
                pause, approve, answer = None, None, None
                done = not calls
                end, drive.step_end = drive.step_end, None
                if end is not None and end.at is not None:
                    now = end.at  # committed with the last call's observation
                else:
                    now = self.clock.monotonic()
                    self.store.record_checkpoint(
                        drive.run_id, step, CheckpointState(step, done=done),
                        tokens=tokens,
                        wall_seconds=now - drive.started,
                    )
                drive.wall_before += now - drive.started
                drive.started = now
                drive.tokens_used += tokens
                drive.tree.budget.add(tokens=tokens)
                self._emit(Event(EventKind.CHECKPOINT, drive.run_id, {"step": step}))
                ended = self._done(drive, step) if done else None
                if ended is not None:
                    return ended
                step += 1
        except _Stop as stop:
            return self._end(drive, stop)

    def _start_hooks(self, drive: _Drive, step: int, *, resumed: bool) -> None:
        refused, messages = start_messages(drive.hooks, self.store, drive.run_id, step,
                                           goal=drive.spec.contract.goal, resumed=resumed)
        if refused is not None:
            raise _Stop(RunStatus.ERRORED, f"a run_start hook refused the run: {refused}")
        drive.context.extend(messages)

    def _boundary(self, drive: _Drive, step: int, *, take_inbox: bool = True) -> None:
        if self._cancel.is_set():
            raise _Stop(RunStatus.INTERRUPTED, "interrupted by the operator")
        if self._tree is not None and self.store.interrupt_pending(self._tree.root_run_id):
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
                self._emit(Event(EventKind.STEER, drive.run_id, {"text": text, "step": step}))
