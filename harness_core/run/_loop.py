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
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_core.clock import Clock, SystemClock
from harness_core.documents import default_toolbox, reload_media
from harness_core.errors import HarnessError, ProviderError, ToolError, UsageError
from harness_core.events import Event, EventKind, EventSink
from harness_core.hooks import HookRunner
from harness_core.messages import Message, ToolCall, ToolResult, Usage, escape_surrogates
from harness_core.policy import Approver, Policy
from harness_core.providers import (
    CompletionRequest,
    CompletionResponse,
    Provider,
    ProviderAttempt,
)
from harness_core.redaction import RedactingSink, SecretRedactor
from harness_core.run._answer import ANSWER_RETRIES, answer_problem
from harness_core.run._compact import Compactor
from harness_core.run._context import ContextBudget
from harness_core.run._gate import Gate
from harness_core.run._hooks import hook_runner, refused_stop, start_messages
from harness_core.run._inputs import (
    baseline_json,
    gate_inputs,
    inputs_changed,
    protect_gate_inputs,
)
from harness_core.run._launchers import Launchers, build_launchers
from harness_core.run._progress import Progress
from harness_core.run._prompt import opening_messages
from harness_core.run._resume import restore_state
from harness_core.run._snapshots import SnapshotKeeper
from harness_core.run._spawn import plan_tree, run_spawns
from harness_core.run._spec import RunOutcome, RunSpec
from harness_core.run._tree import TreeContext, root_tree, with_spawn
from harness_core.shell import HandleRegistry
from harness_core.store import (
    CheckpointState,
    InputsFate,
    Pause,
    RunStatus,
    Store,
    VerificationRecord,
)
from harness_core.store._tree import TreePlace
from harness_core.tool_data import AnswerData, FileWritten, PlanData
from harness_core.tools import PauseRequested, RunServices, Toolbox, ToolContext, ToolOutcome
from harness_core.tools._plan_tools import Responder
from harness_core.verification import run_gates

if TYPE_CHECKING:
    import psutil
else:
    from harness_core._lazy import psutil  # imported on its first use

__all__ = ["INTERRUPTED_OBSERVATION", "Runner"]

INTERRUPTED_OBSERVATION = (
    "interrupted: the harness stopped while this call was running, so its outcome is"
    " unknown. It was not run again. Check the workspace before deciding whether to repeat it."
)


def _process_alive(pid: int, started: float | None) -> bool:
    try:
        proc = psutil.Process(pid)
        if started is None:
            return proc.is_running()
        return abs(proc.create_time() - started) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _own_start_time() -> float:
    from harness_core.sandbox._started import process_started

    started = process_started(os.getpid())
    return started if started is not None else float(psutil.Process(os.getpid()).create_time())


class _Stop(Exception):  # noqa: N818 - internal control flow
    def __init__(self, status: RunStatus, reason: str, pause: Pause | None = None):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.pause = pause


@dataclass
class _StepEnd:
    """A step's checkpoint, written with its last call's observation when it can be."""

    step: int
    tokens: int
    armed: bool = False
    """The step's last call is next, on the sequential path (not a spawn)."""
    at: float | None = None
    """When the checkpoint was written with the observation (None: not yet)."""


@dataclass
class _Drive:
    run_id: str
    spec: RunSpec
    gate: Gate
    ctx: ToolContext
    launchers: Launchers
    context: ContextBudget
    progress: Progress
    started: float
    wall_before: float
    tokens_used: int
    tree: TreeContext
    changed: set[str] = field(default_factory=lambda: set())
    verified: bool | None = None
    toolbox: Toolbox = field(default_factory=Toolbox)
    cost_used: float = 0.0
    unpriced_warned: bool = False
    recorded_upto: int = -1
    """The highest step that may already be recorded (a fresh drive: none; a resumed one:
    any). Steps past it were never recorded, so the loop does not ask the store."""
    step_end: _StepEnd | None = None
    compactor: Compactor | None = None
    snapshots: SnapshotKeeper | None = None
    hooks: HookRunner = field(init=False)
    answer_retries: int = 0
    pending_pause: Pause | None = None
    """The pause this drive resumed, until its call takes the operator's decision: a
    drive that stops before then leaves the run paused, never "outcome unknown"."""


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
        extras: Callable[[str, ToolContext], dict[str, Any]] | None = None,
        responder: Responder | None = None,
    ) -> None:
        self.store = store
        self.provider = provider
        self.clock = clock or SystemClock()
        self._emit_fn = on_event
        self.approver = approver
        self.toolbox = toolbox or default_toolbox()
        self._new_id = new_id or (lambda: uuid.uuid4().hex[:12])
        self._extras = extras
        self.responder = responder
        self._cancel = threading.Event()
        self._tree: TreeContext | None = None
        self._stored_policy = False
        self._redact: SecretRedactor | None = None

    def cancel(self) -> None:
        """Ask the run to stop at the next step boundary (thread-safe)."""
        self._cancel.set()

    def _guard(self, spec: RunSpec) -> None:
        """Keep the spec's secrets out of every record: the store's writes, the events,
        and the tool output the model (and so the record) sees (#22)."""
        redact = SecretRedactor((*spec.secrets, *spec.provider_keys))
        if not redact:
            return
        self._redact = redact
        self.store.redact_with(redact)
        if self._emit_fn is not None and not isinstance(self._emit_fn, RedactingSink):
            self._emit_fn = RedactingSink(self._emit_fn, redact)

    def _emit(self, event: Event) -> None:
        if self._emit_fn is None:
            return
        tree = self._tree
        if tree is None:
            self._emit_fn(event)
            return
        with tree.lock:  # children in parallel: one event at a time, tagged with the root
            self._emit_fn(replace(event, root_run_id=tree.root_run_id))

    # ---- entry points -------------------------------------------------------------

    def start(self, spec: RunSpec) -> RunOutcome:
        """Start a new run of `spec` and drive it until it finishes, stops or pauses."""
        self._guard(spec)
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
        self._guard(spec)
        record = self.store.run(run_id)
        if stored_policy:
            self._stored_policy = True
            spec = replace(spec, policy=Policy.from_json(record.policy))
        if record.depth > 0 and self._tree is None:
            raise UsageError(
                f"run {run_id} is a child in the tree of run {record.root_run_id}; a child is"
                " resumed through its root", hint=f"io resume {record.root_run_id}")
        if record.status.is_terminal:
            gates = self._last_gates(run_id)
            return RunOutcome(run_id, record.status, record.reason or record.status.value,
                              record.steps_used, verified=_verdict(gates), gates=gates,
                              answer=self._last_text(run_id))
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
            "goal": record.goal, "resumed": True, "workspace": record.workspace,
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
        egress stays decided by the parent's gate, and ending the sandbox is the parent's,
        since a sibling in parallel may still have commands in it."""
        gate = Gate(spec.policy, store=self.store, run_id=run_id, approver=self.approver,
                    emit=self._emit)
        if own_launchers:
            launchers.attach(gate, self.store)
        launchers.note_run(run_id, self.store)
        ctx = ToolContext(
            workspace=spec.workspace, gate=gate, launcher=launchers.commands, clock=self.clock,
            run_id=run_id, output_cap=spec.output_cap, exec_timeout=spec.exec_timeout,
        )
        ctx.services = RunServices(todos=self.store, git=spec.git, responder=self.responder,
                                   documents=spec.documents)
        context = ContextBudget(spec.context_max_tokens if spec.context_strategy == "elide"
                                else None)
        compactor = Compactor(self.store, self.provider, run_id, spec, self._emit)
        compactor.open(context, reload_media(self.store.messages(run_id), spec.workspace),
                       self.store.opening_count(run_id))
        tree = self._tree or root_tree(self.store, self.clock, run_id, spec, resumed=resumed,
                                       wall_before=wall_before, stored_policy=self._stored_policy,
                                       cancel=self._cancel)
        drive = _Drive(run_id, spec, gate, ctx, launchers, context,
                       Progress(spec.stall_window, spec.workspace.fingerprint),
                       self.clock.monotonic(), wall_before, tokens_before, tree,
                       compactor=compactor)
        if self._tree is None:  # a tree's children change the root's files: its steps'
            drive.snapshots = SnapshotKeeper(
                self.store, run_id, spec.workspace.root, spec.snapshot_dir,
                spec.snapshot_max_bytes, frozenset(spec.protected_paths), self._emit)
        drive.hooks = hook_runner(spec, launchers, self.store, run_id, gate, self._emit)
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
        """Connect the run's MCP servers (each checked by the gate) and offer their tools;
        one that cannot start fails the run (`McpUnavailable`) unless it is optional,
        which is reported and the run goes on without it."""
        from harness_core.mcp import McpSession  # asyncio and the client: only when configured

        def notice(text: str) -> None:  # where a person authorizes a remote server
            self._emit(Event(EventKind.WARNING, drive.run_id, {"mcp": text}))

        from harness_core.run._mcp_net import mcp_net_decider

        session = McpSession.start(drive.spec.mcp, gate=drive.gate, env=drive.spec.env,
                                   workspace=drive.spec.workspace, notice=notice,
                                   net=mcp_net_decider(drive.gate))
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
            if last is not None and last.state.done and last.state.verified is None:
                ended = self._done(drive, last.step_index)
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
                drive.gate.step = step
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

    def _draw_cost(self, drive: _Drive, model: str, usage: Usage, *, fresh: bool = False) -> None:
        """Add a completion's derived cost (never stored; prices are the operator's); a
        `fresh` one (not replayed) is drawn from the tree's budget too."""
        if drive.spec.cost_of is None or drive.spec.budget.max_cost_usd is None:
            return
        cost = drive.spec.cost_of(model, usage)
        if cost is not None:
            drive.cost_used += cost
            if fresh:
                drive.tree.budget.add(cost=cost)
        elif not drive.unpriced_warned:
            drive.unpriced_warned = True
            self._emit(Event(EventKind.WARNING, drive.run_id, {
                "text": f"model {model!r} has no price in [prices] (or reported no usage):"
                        " its calls do not count against max_cost_usd"}))

    def _prior_cost(self, drive: _Drive, before_step: int) -> None:
        if drive.spec.cost_of is None or drive.spec.budget.max_cost_usd is None:
            return
        for record in self.store.steps(drive.run_id):
            if record.step_index < before_step:
                self._draw_cost(drive, record.model_served or drive.spec.model,
                                record.usage)
        for summary in drive.compactor.records if drive.compactor else ():
            if summary.step_index < before_step:
                self._draw_cost(drive, summary.model_served, summary.usage)

    def _compact(self, drive: _Drive, step: int) -> None:
        """Summarise the history first when this step's request would pass the
        `compact` strategy's threshold (a recorded step of its own; `_compact`)."""
        assert drive.compactor is not None
        try:
            made = drive.compactor.before_request(step, drive.context)
        except ProviderError as exc:
            raise _Stop(RunStatus.ERRORED, f"provider (compaction): {exc}") from exc
        if made is not None:
            self._draw_cost(drive, made.model_served, made.usage, fresh=True)

    def _check_budget(self, drive: _Drive, step: int) -> None:
        budget = drive.spec.budget
        if budget.max_cost_usd is not None and drive.cost_used >= budget.max_cost_usd:
            raise _Stop(RunStatus.STOPPED,
                        f"budget: the cost budget of ${budget.max_cost_usd:g} is spent"
                        f" (${drive.cost_used:.4f} derived from [prices])")
        if budget.max_steps is not None and step >= budget.max_steps:
            raise _Stop(RunStatus.STOPPED, f"budget: the step budget of {budget.max_steps} is spent")
        if budget.max_tokens is not None and drive.tokens_used >= budget.max_tokens:
            raise _Stop(RunStatus.STOPPED,
                        f"budget: the token budget of {budget.max_tokens} is spent"
                        f" ({drive.tokens_used} used)")
        elapsed = drive.wall_before + (self.clock.monotonic() - drive.started)
        if budget.wall_seconds is not None and elapsed >= budget.wall_seconds:
            raise _Stop(RunStatus.STOPPED,
                        f"budget: the wall-clock budget of {budget.wall_seconds:g}s is spent")
        spent = drive.tree.budget.take_step(budget, self.clock.monotonic())
        if spent is not None:
            raise _Stop(RunStatus.STOPPED, spent)

    def _complete(self, drive: _Drive, step: int) -> CompletionResponse:
        self._emit(Event(EventKind.STEP_STARTED, drive.run_id, {"step": step}))
        spec = drive.spec
        request = CompletionRequest(
            model=spec.model, messages=drive.context.view(), tools=drive.toolbox.specs(),
            max_tokens=spec.max_tokens, web=spec.web,
        )

        def on_token(text: str) -> None:
            self._emit(Event(EventKind.TOKEN, drive.run_id, {"text": text, "step": step}))

        began = self.clock.monotonic()
        try:
            response = self.provider.complete(request, step=step, on_token=on_token)
            # Anthropic's `pause_turn`: the vendor stopped a long server-tool turn early and
            # expects it continued. Ask again (what it said so far as the assistant's
            # prefix) and keep one merged completion for the step, so the step is not
            # mistaken for "done" and the record stays one row per step.
            for _ in range(_MAX_PAUSE_TURNS):
                if response.stop_reason != "pause_turn" or response.tool_calls:
                    break
                prefix = response.text.rstrip()
                messages = request.messages + ((Message.assistant(prefix),) if prefix else ())
                more = self.provider.complete(replace(request, messages=messages), step=step,
                                              on_token=on_token)
                response = _continued(response, more)
        except ProviderError as exc:
            failed = exc.attempts or tuple(getattr(self.provider, "last_attempts", ()) or ())
            self.store.record_failed_attempts(drive.run_id, step, [
                ProviderAttempt.of(a) for a in failed])
            raise _Stop(RunStatus.ERRORED, f"provider: {exc}") from exc
        latency = response.latency_ms or (self.clock.monotonic() - began) * 1000.0
        self.store.record_completion(
            drive.run_id, step, text=response.text, tool_calls=response.tool_calls,
            provider=response.provider or self.provider.name, model_requested=spec.model,
            model_served=response.model or spec.model, usage=response.usage,
            latency_ms=latency, ttft_ms=response.ttft_ms, stop_reason=response.stop_reason,
            attempts=response.attempts, citations=response.citations,
            server_tool_calls=response.server_tool_calls, carry=response.carry,
        )
        drive.context.append(Message.assistant(response.text, response.tool_calls))
        if drive.compactor is not None:
            drive.compactor.counted(response.usage, len(request.messages))
        self._emit(Event(EventKind.COMPLETION, drive.run_id, {
            "step": step, "text": response.text, "model": response.model,
            "provider": response.provider or self.provider.name, "request_model": spec.model,
            "usage": response.usage.to_json(), "latency_ms": round(latency, 3),
            "ttft_ms": response.ttft_ms, "tool_calls": len(response.tool_calls),
        }))
        return response

    def _run_calls_kept(self, drive: _Drive, step: int, calls: tuple[ToolCall, ...],
                        **resume: Any) -> None:
        """`_run_calls` between the workspace snapshots of `io rewind` and `io undo`."""
        keeper = drive.snapshots if calls else None
        if keeper is None:
            self._run_calls(drive, step, calls, **resume)
            return
        keeper.before(step)
        try:
            self._run_calls(drive, step, calls, **resume)
        finally:
            keeper.after(step)

    def _run_calls(
        self,
        drive: _Drive,
        step: int,
        calls: tuple[ToolCall, ...],
        *,
        pause: Pause | None,
        approve: bool | None,
        answer: str | None,
    ) -> None:
        entries = ({e.call_index: e for e in self.store.ledger(drive.run_id, step)}
                   if step <= drive.recorded_upto else {})
        index = 0
        while index < len(calls):
            if calls[index].name == "spawn_agent":
                end = index
                while end < len(calls) and calls[end].name == "spawn_agent":
                    end += 1
                if pause is not None and pause.step == step and index <= pause.call_index < end:
                    drive.pending_pause = None  # the decision goes to the child that waits
                held = run_spawns(self, drive, step, list(enumerate(calls))[index:end],
                                  pause=pause, approve=approve, answer=answer)
                if held is not None:
                    if held.status is RunStatus.INTERRUPTED and self._tree is None:
                        self.store.consume_interrupt(drive.run_id, step)
                    raise _Stop(held.status, held.reason, held.pause)
                index = end
                continue
            if index == len(calls) - 1 and drive.step_end is not None:
                drive.step_end.armed = True
            self._run_call(drive, step, index, calls[index], entries.get(index),
                           pause=pause, approve=approve, answer=answer)
            index += 1

    def _run_call(
        self,
        drive: _Drive,
        step: int,
        index: int,
        call: ToolCall,
        entry: Any,
        *,
        pause: Pause | None,
        approve: bool | None,
        answer: str | None,
    ) -> None:
        if entry is not None and entry.has_observation:
            return
        if entry is not None:
            paused_here = (pause is not None and pause.step == step
                           and pause.call_index == index)
            if not paused_here:
                if drive.toolbox.can_resume(call.name):  # a durable marker decides
                    self._execute(drive, step, index, call, resumed=True)
                else:
                    self._observe(drive, step, index, call,
                                  ToolOutcome(INTERRUPTED_OBSERVATION, is_error=True))
                return
            assert pause is not None
            self._apply_decision(drive, pause, call, approve=approve, answer=answer)
            if pause.kind == "question":
                self._answered(drive, step, index, call, answer or "")
                return
            drive.gate.preset(pause.target or "", approve=bool(approve),
                              by="operator")
        else:
            self.store.record_intent(drive.run_id, step, index, call)
        self._execute(drive, step, index, call)

    def _apply_decision(self, drive: _Drive, pause: Pause, call: ToolCall, *,
                        approve: bool | None, answer: str | None) -> None:
        """Record the operator's decision on the paused call as it applies; from here
        the call runs (or is answered), so a stop is no longer a pause lost."""
        drive.pending_pause = None
        content: dict[str, Any]
        if pause.kind == "question":
            kind, content = "answer", {"question": str(call.arguments.get("question", "")),
                                       "answer": answer or ""}
        else:
            kind = "approve" if approve else "deny"
            content = {"act": pause.act, "target": pause.target or "",
                       "call_id": pause.call_id}
        self.store.record_operator_input(drive.run_id, kind, content, pause.step)

    def _answered(self, drive: _Drive, step: int, index: int, call: ToolCall, text: str) -> None:
        self.store.answer_question(drive.run_id, step, index, text, "person")
        self._emit(Event(EventKind.QUESTION, drive.run_id, {
            "step": step, "question": call.arguments.get("question"), "answer": text,
            "answered_by": "person",
        }))
        self._observe(drive, step, index, call, ToolOutcome(
            f"The operator answered: {text}", data=AnswerData(text, "person")))

    def _execute(self, drive: _Drive, step: int, index: int, call: ToolCall, *,
                 resumed: bool = False) -> None:
        self._emit(Event(EventKind.TOOL_CALL, drive.run_id, {
            "step": step, "call_id": call.id, "name": call.name, "arguments": call.arguments,
        }))
        drive.ctx.call_ref = f"{drive.run_id}/{step}/{index}"
        try:
            outcome = (drive.hooks.pre_tool(step, index, call)
                       or drive.hooks.post_tool(step, index, call, drive.toolbox.call(
                           call, drive.ctx, resumed=resumed)))
        except PauseRequested as pause:
            if pause.kind == "question":
                self.store.record_question(drive.run_id, step, index, call.id,
                                           str(pause.payload.get("question", "")))
            payload = Pause.from_json({**pause.payload, "kind": pause.kind, "step": step,
                                       "call_index": index, "call_id": call.id,
                                       "tool": call.name})
            raise _Stop(RunStatus.PAUSED, f"paused for {pause.kind}", payload) from None
        except ToolError as exc:
            outcome = ToolOutcome(f"error: {exc}", is_error=True)
        self._report_plan_tool(drive, step, index, call, outcome)
        stalled = drive.progress.observe(call.key())
        if stalled is not None and drive.step_end is not None:
            drive.step_end.armed = False  # the run stops in this step: no checkpoint for it
        self._observe(drive, step, index, call, outcome, progress=drive.progress.last_mark)
        if stalled is not None:
            self._emit(Event(EventKind.STALL, drive.run_id, {"call": call.key(), "reason": stalled}))
            raise _Stop(RunStatus.STOPPED, stalled)

    def _report_plan_tool(
        self, drive: _Drive, step: int, index: int, call: ToolCall, outcome: ToolOutcome
    ) -> None:
        data = outcome.data
        if outcome.is_error:
            return
        if call.name == "todo_write" and isinstance(data, PlanData):
            self._emit(Event(EventKind.PLAN, drive.run_id, {
                "step": step, "items": [t.to_json() for t in data.todos],
                "revision": data.revision}))
        elif call.name == "ask_question" and isinstance(data, AnswerData):
            question = data.question or ""
            self.store.record_question(drive.run_id, step, index, call.id, question,
                                       answer=data.answer, answered_by=data.answered_by)
            self._emit(Event(EventKind.QUESTION, drive.run_id, {
                "step": step, "question": question, "answer": data.answer,
                "answered_by": data.answered_by}))

    def _observe(
        self, drive: _Drive, step: int, index: int, call: ToolCall, outcome: ToolOutcome,
        *, progress: str | None = None,
    ) -> None:
        # What the model and the trace see is valid UTF-8 whatever a tool returned; the
        # exact names stay in `data`, which the store keeps losslessly.
        output = escape_surrogates(outcome.output)
        result = ToolResult(call.id, call.name, self._redact(output) if self._redact else output,
                            outcome.is_error, outcome.media)
        edits = outcome.data.edits if isinstance(outcome.data, FileWritten) else ()
        for edit in edits:
            drive.changed.add(edit.path)
        end = drive.step_end
        if end is not None and end.armed and end.step == step:
            # The step's last call: its observation and the step's checkpoint commit
            # together (one transaction where there were two, the same order of effects).
            end.armed, end.at = False, self.clock.monotonic()
            self.store.record_observation(
                drive.run_id, step, index, result, data=outcome.data, refused=outcome.refused,
                edits=edits, checkpoint=CheckpointState(step, done=False), tokens=end.tokens,
                wall_seconds=end.at - drive.started, progress=progress)
        else:
            self.store.record_observation(drive.run_id, step, index, result, data=outcome.data,
                                          refused=outcome.refused, edits=edits,
                                          progress=progress)
        drive.context.append(Message.tool(result))
        self._emit(Event(EventKind.TOOL_RESULT, drive.run_id, {
            "step": step, "call_id": call.id, "name": call.name, "output": result.output,
            "is_error": outcome.is_error,
            "refused": outcome.refused.to_json() if outcome.refused else None,
        }))

    def _done(self, drive: _Drive, step: int) -> RunOutcome | None:
        """The model says it is done: run the gates. A root that fails one goes on (the
        failure is its next observation); a child ends, and its parent sees the verdict.
        A stop hook that refuses the end sends the run on before the answer and the gates
        are checked."""
        going_on = refused_stop(drive.hooks, self.store, drive.run_id, step)
        if going_on is not None:
            drive.context.append(going_on)
            return None
        schema = drive.spec.answer_schema
        if schema is not None and self._tree is None:
            problem = answer_problem(self._last_text(drive.run_id), schema)
            if problem is not None:
                return self._bad_answer(drive, step, problem)
        if self._verify(drive, step):
            said = "every gate passed" if drive.verified else "no gates configured"
            return self._end(drive, _Stop(RunStatus.FINISHED, f"done; {said}"))
        if self._tree is None:
            return None
        return self._end(drive, _Stop(RunStatus.FAILED,
                                      "done, but a gate failed (the parent decides what next)"))

    def _bad_answer(self, drive: _Drive, step: int, problem: str) -> RunOutcome | None:
        """A final answer that does not match `--output-schema`: back to the model while
        retries last, then the run fails (exit 1) with the reason."""
        drive.answer_retries += 1
        if drive.answer_retries > ANSWER_RETRIES:
            return self._end(drive, _Stop(
                RunStatus.FAILED, f"the final answer does not match the output schema after"
                f" {ANSWER_RETRIES} retries: {problem}"))
        message = Message.user(f"Your final answer does not match the required JSON Schema:"
                               f" {problem}\nReply with only the corrected JSON value.")
        self.store.append_messages(drive.run_id, step, [message])
        drive.context.append(message)
        return None

    def _last_text(self, run_id: str) -> str:
        """The text of the run's last committed completion ("" when it has none)."""
        last = self.store.last_checkpoint(run_id)
        record = self.store.step(run_id, last.step_index) if last is not None else None
        return record.text if record is not None else ""

    def _verify(self, drive: _Drive, step: int) -> bool:
        contract = drive.spec.contract
        changed = sorted(drive.changed | {e.edit.path for e in self.store.edits(drive.run_id)})
        baseline = self.store.run(drive.run_id).settings.get("gate_inputs")
        handles = drive.ctx.services.handles  # nothing of the agent's runs past here
        if handles is not None and handles.end_running():
            self._emit(Event(EventKind.WARNING, drive.run_id, {
                "text": "background handles still running were ended before the gates"}))
        # Before any gate runs: a gate's own writes (caches, reports) are not the agent's.
        fates = [self._gate_inputs_fate(drive, baseline, index, c.command or c.kind.value)
                 for index, c in enumerate(contract.verify)]
        results = run_gates(contract, drive.spec.workspace, drive.launchers.gates, changed=changed,
                            clock=self.clock, documents=drive.spec.documents)
        sandbox = drive.launchers.selected.backend.value
        failures: list[str] = []
        for result, inputs in zip(results, fates, strict=True):
            self.store.record_verification(
                drive.run_id, step, result.criterion, result.passed, result.exit_status,
                result.output, duration_seconds=result.duration_seconds, sandbox=sandbox,
                inputs=inputs)
            self._emit(Event(EventKind.VERIFICATION, drive.run_id, {
                "step": step, "command": result.criterion, "passed": result.passed,
                "exit_status": result.exit_status, "output": result.output[-2000:],
                "sandbox": sandbox, "duration_seconds": round(result.duration_seconds, 3),
                "inputs_untouched": inputs.untouched if inputs else None,
                "modified_inputs": list(inputs.modified) if inputs else [],
            }))
            if not result.passed:
                failures.append(f"$ {result.criterion}\n(exit {result.exit_status})\n"
                                f"{result.output[-4000:]}")
        passed = not failures
        drive.verified = passed if results else None
        self.store.update_checkpoint_state(
            drive.run_id, step, CheckpointState(step, done=True, verified=passed))
        if not passed:
            message = Message.user("Verification failed; the task is not done yet.\n\n"
                                   + "\n\n".join(failures))
            self.store.append_messages(drive.run_id, step, [message])
            drive.context.append(message)
        return passed

    def _gate_inputs_fate(
        self, drive: _Drive, baseline: Any, index: int, criterion: str
    ) -> InputsFate | None:
        """What became of gate `index`'s inputs since the run started (warned when changed)."""
        entries = baseline if isinstance(baseline, list) else None
        change = inputs_changed(drive.spec.workspace, entries, index)
        if change is None or entries is None:
            return None
        if change.modified:
            self._emit(Event(EventKind.WARNING, drive.run_id, {
                "text": f"gate inputs were modified by the agent ({criterion}): "
                        + ", ".join(change.modified),
                "gate": criterion, "modified_inputs": list(change.modified),
                "editable": change.editable}))
        patterns = entries[index].get("inputs", [])
        return InputsFate(None if patterns is None else tuple(patterns), change.editable,
                          change.untouched, tuple(change.modified))

    def _last_gates(self, run_id: str) -> tuple[VerificationRecord, ...]:
        """The last round of gates the run recorded (its gates report)."""
        records = self.store.verifications(run_id)
        if not records:
            return ()
        last = records[-1].step_index
        return tuple(r for r in records if r.step_index == last)

    def _end(self, drive: _Drive, stop: _Stop) -> RunOutcome:
        waiting = drive.pending_pause
        if waiting is not None and stop.status is not RunStatus.PAUSED:
            # The drive stopped before the paused call took the operator's decision: the
            # run still waits for it (nothing ran, so nothing is "outcome unknown").
            stop = _Stop(RunStatus.PAUSED, f"paused for {waiting.kind} (the resume stopped"
                         f" before it was applied: {stop.reason})", waiting)
        self._void_queue(drive.run_id, stop.status)
        now = self.clock.monotonic()
        self.store.add_wall(drive.run_id, now - drive.started)
        drive.started = now
        gates = self._last_gates(drive.run_id)
        steps = self.store.run(drive.run_id).steps_used
        outcome = RunOutcome(drive.run_id, stop.status, stop.reason, steps, stop.pause,
                             _verdict(gates), gates, self._last_text(drive.run_id))
        self.store.set_status(drive.run_id, stop.status, reason=stop.reason, pause=stop.pause,
                              exit_code=outcome.exit_code)
        if stop.status is RunStatus.PAUSED and stop.pause is not None:
            kind = EventKind.QUESTION if stop.pause.kind == "question" else EventKind.APPROVAL
            self._emit(Event(kind, drive.run_id, {"pending": True, **stop.pause.to_json()}))
        self._emit(Event(EventKind.RUN_FINISHED, drive.run_id, {
            "status": stop.status.value, "reason": stop.reason, "steps": steps}))
        return outcome


    def _void_queue(self, run_id: str, status: RunStatus) -> None:
        """Messages that can no longer land where they were aimed: an interrupt for a run
        that stopped anyway, and, once it has ended, a steer it will never read."""
        if status is RunStatus.RUNNING:
            return
        self.store.void_inbox(run_id, ["interrupt"],
                              f"the run {status.value} before its next step boundary")
        if status.is_terminal:
            self.store.void_inbox(run_id, ["steer"],
                                  f"the run {status.value} before its next step boundary")


def _verdict(gates: tuple[VerificationRecord, ...]) -> bool | None:
    """Whether the last gate round passed (None: no round ran)."""
    return all(g.passed for g in gates) if gates else None


_MAX_PAUSE_TURNS = 8
"""Continuations of one `pause_turn` step before the step is taken as it stands."""


def _continued(first: CompletionResponse, more: CompletionResponse) -> CompletionResponse:
    """One step's completion from a paused turn and its continuation."""
    def add(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    usage = Usage(*(add(getattr(first.usage, f.name), getattr(more.usage, f.name))
                    for f in fields(Usage)))
    return replace(
        more, text=first.text + more.text, usage=usage,
        latency_ms=first.latency_ms + more.latency_ms,
        ttft_ms=first.ttft_ms if first.ttft_ms is not None else more.ttft_ms,
        citations=first.citations + more.citations,
        server_tool_calls=first.server_tool_calls + more.server_tool_calls,
        attempts=first.attempts + more.attempts,
    )


def _sandbox_json(launchers: Launchers) -> dict[str, Any]:
    out = launchers.selected.to_json()
    out["commands_sandboxed"] = launchers.commands_sandboxed
    return out


def _close_all(services: list[Any]) -> None:
    for value in services:
        close = getattr(value, "close_all", None) or getattr(value, "close", None)
        if callable(close):
            close()


def _check_resume_args(
    pause: Pause | None, approve: bool | None, answer: str | None
) -> None:
    kind = pause.kind if pause else None
    if kind == "approval" and approve is None:
        raise UsageError(
            f"the run is paused for an approval of {pause.target if pause else ''!s}",
            hint="resume it with --approve or --deny",
        )
    if kind == "question" and answer is None:
        raise UsageError(
            f"the run is paused for an answer to: {pause.question if pause else ''!s}",
            hint="resume it with --answer TEXT",
        )
    if kind != "approval" and approve is not None:
        raise UsageError("--approve/--deny given, but the run is not waiting for an approval")
    if kind != "question" and answer is not None:
        raise UsageError("--answer given, but the run is not waiting for an answer")

