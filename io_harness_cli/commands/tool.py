"""`io tool NAME --args JSON`: one built-in tool call under the loaded policy, no model.

For operators checking what a policy admits, and for scripts. Exit 0 when the tool ran
(whatever a command's own status), 1 when it was refused or failed, 2 on a usage error.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt

if TYPE_CHECKING:
    from harness_core import Store, ToolContext


def _tool_handles(store: Store, ctx: ToolContext, capture_dir: Path) -> Any:
    """A handle registry for one `io tool` call; its handles die when the call ends."""
    from harness_core import HandleRegistry, SystemClock

    return HandleRegistry(run_id="io-tool", launcher=ctx.launcher, workspace=ctx.workspace,
                          capture_dir=capture_dir, clock=SystemClock(), store=store)


def _unapproved(pending: Any) -> Any:
    from harness_core import Refusal, ToolOutcome

    return ToolOutcome(
        f"refused: {pending.act.describe()} needs approval and there is no terminal to ask",
        True, None, Refusal(
            reason="needs approval (approval = \"ask\") and io tool cannot pause",
            act=pending.act.kind.value, target=pending.act.describe(),
            rule=pending.decision.rule, layer=pending.decision.layer))


def tool(
    name: Annotated[str, typer.Argument(help="The built-in tool, e.g. read_file, exec, shell.")],
    args: Annotated[str, typer.Option("--args", help="The tool's arguments as a JSON object.")]
    = "{}",
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Call one tool in the workspace under the loaded policy and print what the model
    would see."""
    from harness_core import (
        TOOL_EXTRAS,
        ApprovalPending,
        Gate,
        HarnessError,
        InvalidToolArguments,
        MissingExtra,
        RunSpec,
        SystemClock,
        ToolCall,
        ToolContext,
        UsageError,
        build_launchers,
        build_run_spec,
        default_toolbox,
        protect_gate_inputs,
    )
    from io_harness_cli.commands._failure import fail
    from io_harness_cli.commands._load import environment, load_config, open_store, workspace_path
    from io_harness_cli.commands._prompts import make_approver

    try:
        try:
            parsed = json.loads(args)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--args is not valid JSON: {exc.msg} at column {exc.colno}") \
                from exc
        if not isinstance(parsed, dict):
            raise UsageError("--args must be a JSON object, e.g. '{\"path\": \"README.md\"}'")
        ws = workspace_path(workspace)
        cfg = load_config(ws, config)
        spec: RunSpec = protect_gate_inputs(build_run_spec(cfg, ws, "io tool", env=environment()))
        toolbox = default_toolbox()
        install = toolbox.unavailable(name)
        if install is not None:
            raise MissingExtra(name, TOOL_EXTRAS[name])
        if name not in toolbox.names():
            raise UsageError(f"unknown tool {name!r}; built-ins: {', '.join(toolbox.names())}")
        launchers = build_launchers(spec)
        gate = Gate(spec.policy, store=None, run_id="", approver=make_approver(not json_out),
                    emit=lambda event: None)
        launchers.attach(gate, None)
        ctx = ToolContext(workspace=spec.workspace, gate=gate, launcher=launchers.commands,
                          clock=SystemClock(), output_cap=spec.output_cap,
                          exec_timeout=spec.exec_timeout)
        ctx.services.git = spec.git
        ctx.services.documents = spec.documents
        store = open_store(cfg) if name.startswith("shell_") else None
        registry = None
        capture = Path(tempfile.mkdtemp(prefix="io-tool-"))
        if store is not None:
            registry = _tool_handles(store, ctx, capture)
            ctx.services.handles = registry
        try:
            outcome = toolbox.call(ToolCall("io-tool", name, parsed), ctx)
        except ApprovalPending as pending:
            outcome = _unapproved(pending)
        except InvalidToolArguments as exc:
            raise UsageError(str(exc)) from exc
        finally:
            if registry is not None:
                registry.close_all()
            launchers.close()
            if store is not None:
                store.close()
            shutil.rmtree(capture, ignore_errors=True)
    except HarnessError as exc:
        fail(exc)
    sandbox = {**launchers.selected.to_json(),
               "commands_sandboxed": launchers.commands_sandboxed}
    raise typer.Exit(_report(name, outcome, json_out, sandbox))


def _report(name: str, outcome: Any, json_out: bool, sandbox: dict[str, Any]) -> int:
    """Print what the model would see (or the JSON object); return the exit code."""
    from io_harness_cli.output import say, write_json

    ran = outcome.refused is None and (
        not outcome.is_error or getattr(outcome.data, "exit_status", None) is not None)
    if json_out:
        if outcome.refused is not None:
            write_json({"ok": False, "tool": name, "refused": outcome.refused.to_json(),
                        "output": outcome.output, "data": {"sandbox": sandbox}})
        else:
            write_json({"ok": ran, "tool": name, "output": outcome.output,
                        "data": {**(outcome.data.to_json() if outcome.data is not None else {}),
                                 "sandbox": sandbox}})
    else:
        import sys

        sys.stdout.write(outcome.output + ("" if outcome.output.endswith("\n") else "\n"))
        if not ran:
            say(f"io: {name} {'was refused' if outcome.refused else 'failed'}")
    return 0 if ran else 1
