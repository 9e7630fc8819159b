"""`io trace RUN_ID`: one run's steps, tool calls, refusals, usage and sandbox; `--html`
writes the same run (or its whole tree) as one self-contained page."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt, id_arg

if TYPE_CHECKING:
    from harness_core import Config, Store


def trace(
    run_id: Annotated[str, typer.Argument(help="The run (a unique prefix works).",
                                          callback=id_arg)],
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    plan: Annotated[bool, typer.Option("--plan", help="Show only the agent's current plan.")]
    = False,
    html: Annotated[bool, typer.Option(
        "--html", help="Write one self-contained HTML page (the run and its whole tree).")]
    = False,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Where --html writes (default: io-trace-RUN.html; - for stdout).",
        dir_okay=False)] = None,
) -> None:
    """Show what RUN_ID did: each step, each call and its observation, each refusal."""
    from harness_core import UsageError
    from io_harness_cli.commands._load import (
        STORE_AND_PRICES,
        load_config,
        open_store,
        workspace_path,
    )
    from io_harness_cli.output import write_json

    if output is not None and not html:
        raise UsageError("--output is for --html", hint="add --html, or drop --output")
    if html and (plan or json_out):
        raise UsageError("--html cannot be combined with --plan or --json")
    cfg = load_config(workspace_path(workspace), config, STORE_AND_PRICES)
    store = open_store(cfg)
    try:
        record = store.find_run(run_id)
        if html:
            _write_html(store, cfg, record.run_id, output, workspace_path(workspace))
            return
        if plan:
            items = [i.to_json() for i in store.todos(record.run_id)]
            if json_out:
                write_json({"run_id": record.run_id, "plan": items})
            else:
                from io_harness_cli.render import render_plan

                render_plan(items)
            return
        data = _collect(store, record.run_id)
    finally:
        store.close()
    if json_out:
        write_json(data)
        return
    from io_harness_cli.render import render_trace

    render_trace(data)
    _print_compactions(data["compactions"])
    _print_operator(data["operator"])
    _print_gates(data["gates"])
    _print_sweeps(data.get("sweeps", []))
    if len(data["tree"]) > 1:
        _print_tree(data["tree"])
    _print_pause(data["run"])


def _print_pause(run: dict[str, Any]) -> None:
    """What a paused run waits for and the command that gives it, on stdout with the
    rest of the trace (`io trace ID > file` keeps it)."""
    from io_harness_cli.commands._resume_line import resume_command

    pause = run.get("pause") or {}
    command = resume_command(run["root_run_id"], run["status"], pause_kind=pause.get("kind"),
                             reason=run.get("reason"))
    if run["status"] == "paused":
        what = (f"an answer to: {pause.get('question')}" if pause.get("kind") == "question"
                else f"approval of {pause.get('target')} ({pause.get('reason')})")
        sys.stdout.write(f"\npaused at step {pause.get('step')}: waits for {what}\n")
    if command is not None:
        sys.stdout.write(f"continue with: {command}\n")


def _collect(store: Any, run_id: str) -> dict[str, Any]:
    record = store.run(run_id)
    ledger = store.ledger(run_id)
    calls: dict[int, list[dict[str, Any]]] = {}
    for e in ledger:
        calls.setdefault(e.step_index, []).append({
            "call_id": e.call_id, "name": e.name, "arguments": e.arguments_json(),
            "observation": e.observation, "is_error": e.is_error,
            "state": "observed" if e.has_observation else "intent only",
        })
    steps = [{
        "step": s.step_index, "created_at": s.created_at, "text": s.text,
        "provider": s.provider, "model": s.model_served, "usage": s.usage.to_json(),
        "latency_ms": s.latency_ms, "ttft_ms": s.ttft_ms, "calls": calls.get(s.step_index, []),
    } for s in store.steps(run_id)]
    verifications = store.verifications(run_id)
    last_round = verifications[-1].step_index if verifications else None
    data: dict[str, Any] = {
        "run": {
            "run_id": record.run_id, "status": record.status.value, "goal": record.goal,
            "workspace": record.workspace, "created_at": record.created_at,
            "reason": record.reason, "pause": record.pause.to_json() if record.pause else None, "steps": record.steps_used,
            "tokens": record.tokens_used, "wall_seconds": round(record.wall_used, 3),
            "sandbox": record.sandbox, "session_id": record.session_id,
            "parent_run_id": record.parent_run_id, "depth": record.depth,
            "root_run_id": record.root_run_id, "agent": record.agent,
        },
        "tree": _tree(store, record.run_id),
        "steps": steps,
        "refusals": [vars(p) for p in store.policy_events(run_id)],
        "verifications": [v.row_json() for v in verifications],
        "gates": [v.to_json() for v in verifications if v.step_index == last_round],
        "edits": [e.to_json() for e in store.edits(run_id)],
        "attempts": [a.to_json() for a in store.provider_attempts(run_id)],
        "drives": [d.to_json(policy=False) for d in store.drives(run_id)],
        "compactions": [c.to_json() for c in store.compactions(run_id)],
        "snapshots": [s.to_json() for s in store.snapshots(run_id)],
        "operator": [o.to_json() for o in store.operator_inputs(run_id)],
    }
    sweeps = store.sweeps(run_id)
    if sweeps:  # only after a crash; a trace without one keeps its bytes
        data["sweeps"] = sweeps
    return data


def _print_compactions(compactions: list[dict[str, Any]]) -> None:
    """Each compaction: before which step, what it cut, and what its summary cost."""
    if not compactions:
        return
    out = sys.stdout.write
    out("\ncompactions:\n")
    for c in compactions:
        usage = c["usage"]
        out(f"  before step {c['step']}: history {c['size_before']} tokens > threshold"
            f" {c['threshold']}; summary by {c['model']}: prompt {usage['prompt_tokens']}"
            f" + completion {usage['completion_tokens']} tokens\n")


def _print_gates(gates: list[dict[str, Any]]) -> None:
    """The gates report: each gate of the last round, where it ran, and its inputs' fate."""
    import sys

    if not gates:
        return
    out = sys.stdout.write
    out("\ngates report:\n")
    for g in gates:
        took = f"{g['duration_seconds']:.2f}s" if g["duration_seconds"] is not None else "-"
        untouched = {True: "inputs untouched", False: "inputs MODIFIED",
                     None: "inputs not checked"}[g["inputs_untouched"]]
        out(f"  {'passed' if g['passed'] else 'failed'}  {g['command']}  exit {g['exit_status']}"
            f"  {took}  sandbox {g['sandbox'] or '-'}  {untouched}\n")
        if g["modified_inputs"]:
            out("    gate inputs were modified by the agent: "
                + ", ".join(g["modified_inputs"]) + "\n")


def _print_operator(inputs: list[dict[str, Any]]) -> None:
    """What the operator told the run, in the order given, and where each landed."""
    import sys

    from harness_core import OperatorInputRecord
    from io_harness_cli.render.lines import brief

    if not inputs:
        return
    out = sys.stdout.write
    out("\noperator input:\n")
    for item in inputs:
        record = OperatorInputRecord(item["kind"], item["created_at"], item["content"],
                                     item["step"], item["void_reason"])
        where = {"landed": f"landed at step {record.step}",
                 "pending": "waiting for a step boundary",
                 "void": f"never landed: {record.void_reason}"}[record.state]
        out(f"  {record.created_at[:19]}Z  {brief(record.describe(), 80)}  ({where})\n")


def _print_sweeps(sweeps: list[dict[str, Any]]) -> None:
    """What later io processes ended (or could not end) after this run's io died."""
    out = sys.stdout.write
    for sweep in sweeps:
        killed = sweep["killed"]
        ended = [k for k in killed if k.get("ended") is not False]
        failed = [k for k in killed if k.get("ended") is False]
        out(f"\nafter io process {sweep['owner_pid']} died, a later io ({sweep['at']}):\n")
        if ended:
            out("  ended: " + ", ".join(f"{k['pid']} {k['name']} ({k['why']})"
                                        for k in ended) + "\n")
        if failed:
            out("  could not end: " + ", ".join(
                f"{k['pid']} {k['name']} ({k['why']}): {k.get('error', '?')}"
                for k in failed) + "\n")


def _tree(store: Any, run_id: str) -> list[dict[str, Any]]:
    """The run and its descendants, depth-first, each with what served it."""
    record = store.run(run_id)
    runs = store.tree_runs(record.root_run_id)
    children: dict[str | None, list[Any]] = {}
    for r in runs:
        children.setdefault(r.parent_run_id if r.depth > 0 else None, []).append(r)
    out: list[dict[str, Any]] = []

    def visit(r: Any) -> None:
        models = sorted({s.model_served for s in store.steps(r.run_id) if s.model_served})
        out.append({"run_id": r.run_id, "parent_run_id": r.parent_run_id if r.depth else None,
                    "depth": r.depth - record.depth, "agent": r.agent, "status": r.status.value,
                    "steps": r.steps_used, "tokens": r.tokens_used, "models": models,
                    "goal": r.goal})
        for child in children.get(r.run_id, []):
            visit(child)

    visit(record)
    return out


def _print_tree(tree: list[dict[str, Any]]) -> None:
    import sys

    out = sys.stdout.write
    out("\ntree:\n")
    for node in tree:
        agent = f" ({node['agent']})" if node["agent"] else ""
        out(f"{'  ' * (node['depth'] + 1)}{node['run_id']}{agent}  {node['status']}"
            f"  steps {node['steps']}  tokens {node['tokens']}"
            f"  model {', '.join(node['models']) or '-'}  {node['goal'][:60]}\n")


def _write_html(store: Store, cfg: Config, run_id: str, output: Path | None,
                workspace: Path) -> None:
    from harness_core import load_tree, write_operator_file
    from io_harness_cli.output import say
    from io_harness_cli.render.html import render_html

    page = render_html(load_tree(store, run_id, prices=cfg.prices))
    if output is not None and str(output) == "-":
        sys.stdout.write(page)
        sys.stdout.flush()
        return
    target = output or Path(f"io-trace-{run_id}.html")
    data = page.encode("utf-8")
    write_operator_file(target, data, workspace=workspace)  # HostBoundaryError: exit 2
    say(f"io: wrote {target} ({len(data):,} bytes)")
