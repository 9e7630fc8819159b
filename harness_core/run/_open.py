"""Opening a drive: the state one process's drive of a run works on (its guard, tool
context, history, tree, snapshots and hooks), and the services that open with it (the
caller's extras, the MCP servers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness_core.events import Event, EventKind
from harness_core.run._compact import Compactor
from harness_core.run._context import ContextBudget
from harness_core.run._drive_state import Resumption, _Drive
from harness_core.run._guard import Guard
from harness_core.run._hooks import hook_runner
from harness_core.run._launchers import Launchers
from harness_core.run._parts import RunParts
from harness_core.run._progress import Progress
from harness_core.run._resume import restore_state, stored_conversation
from harness_core.run._snapshots import keeper_for
from harness_core.run._spec import RunSpec
from harness_core.run._tree import root_tree
from harness_core.tools import RunServices, ToolContext

if TYPE_CHECKING:
    from harness_core.mcp import McpSession

__all__ = ["open_drive", "open_extras", "start_mcp"]


def open_drive(parts: RunParts, run_id: str, spec: RunSpec, launchers: Launchers,
               resumption: Resumption | None, own_launchers: bool) -> _Drive:
    """The drive's state: its guard, tool context, history, tree, snapshots, hooks."""
    guard = Guard(spec.policy, store=parts.store, run_id=run_id, approver=parts.approver,
                  emit=parts.emit)
    if own_launchers:
        launchers.attach(guard, parts.store)
    launchers.note_run(run_id, parts.store)
    ctx = ToolContext(
        workspace=spec.workspace, gate=guard, launcher=launchers.commands, clock=parts.clock,
        run_id=run_id, output_cap=spec.output_cap, exec_timeout=spec.exec_timeout,
    )
    ctx.services = RunServices(todos=parts.store, git=spec.git, responder=parts.responder,
                               documents=spec.documents)
    context = ContextBudget(spec.context_max_tokens if spec.context_strategy == "elide"
                            else None)
    compactor = Compactor(parts.store, parts.provider, run_id, spec, parts.emit)
    compactor.open(context, stored_conversation(parts.store.messages(run_id), spec.workspace),
                   parts.store.opening_count(run_id))
    wall_before = resumption.wall_before if resumption else 0.0
    tree = parts.tree or root_tree(
        parts.store, parts.clock, run_id, spec, resumed=resumption is not None,
        wall_before=wall_before, stored_policy=parts.stored_policy,
        cancel=parts.cancel)
    drive = _Drive(run_id, spec, guard, ctx, launchers, context,
                   Progress(spec.stall_window, spec.workspace.fingerprint),
                   parts.clock.monotonic(), wall_before,
                   resumption.tokens_before if resumption else 0, tree, compactor=compactor)
    if parts.tree is None:  # a tree's children change the root's files: its steps'
        drive.snapshots = keeper_for(parts.store, run_id, spec, parts.emit)
    drive.hooks = hook_runner(spec, launchers, parts.store, run_id, guard, parts.emit)
    compactor.hooks = drive.hooks
    if resumption is not None:
        restore_state(parts.store, run_id, parts.provider, drive.progress)
    return drive


def start_mcp(parts: RunParts, drive: _Drive) -> McpSession:
    """Connect the run's MCP servers (each checked by the guard) and offer their tools;
    one that cannot start fails the run (`McpUnavailable`) unless it is optional,
    which is reported and the run goes on without it."""
    from harness_core.mcp import McpSession  # asyncio and the client: only when configured

    def notice(text: str) -> None:  # where a person authorizes a remote server
        parts.emit(Event(EventKind.WARNING, drive.run_id, {"mcp": text}))

    from harness_core.run._mcp_net import mcp_net_decider

    session = McpSession.start(drive.spec.mcp, gate=drive.guard, env=drive.spec.env,
                               workspace=drive.spec.workspace, notice=notice,
                               net=mcp_net_decider(drive.guard))
    drive.toolbox = parts.toolbox.with_tools(session.tools)
    for refusal in session.refusals:
        parts.emit(Event(EventKind.WARNING, drive.run_id, {"mcp": refusal.describe()}))
    for failure in session.failures:
        parts.emit(Event(EventKind.WARNING, drive.run_id, {"mcp": failure.message}))
    return session


def open_extras(parts: RunParts, drive: _Drive) -> list[object]:
    """The caller's extras for this run (`Runner(extras=...)`), put in the tool context."""
    if parts.extras is None:
        return []
    extras = parts.extras(drive.run_id, drive.ctx)
    drive.ctx.extras.update(extras)
    return list(extras.values())
