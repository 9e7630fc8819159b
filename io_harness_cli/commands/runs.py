"""`io runs`: the most recent runs with their status."""

from __future__ import annotations

from typing import Annotated

import typer

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt


def runs(
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many runs.", min=1,
                                       max=100_000)] = 20,
) -> None:
    """List recent runs, newest first."""
    from io_harness_cli.commands._load import STORE_ONLY, load_config, open_store, workspace_path
    from io_harness_cli.exit_codes import exit_code_for_status
    from io_harness_cli.output import write_json

    cfg = load_config(workspace_path(workspace), config, STORE_ONLY)
    store = open_store(cfg)
    try:
        records = store.list_runs(limit)
    finally:
        store.close()
    rows: list[dict[str, object]] = [{
        "run_id": r.run_id, "created_at": r.created_at, "status": r.status.value,
        "exit_code": exit_code_for_status(r.status.value).value if r.status.value != "running"
        else None, "steps": r.steps_used, "tokens": r.tokens_used, "goal": r.goal,
        "workspace": r.workspace, "session_id": r.session_id, "reason": r.reason,
        "parent_run_id": r.parent_run_id, "depth": r.depth, "root_run_id": r.root_run_id,
        "agent": r.agent,
    } for r in records]
    if json_out:
        for row in rows:
            write_json(row)
        return
    from io_harness_cli.render import print_table

    print_table(["run", "created", "status", "steps", "tokens", "goal"], [
        [str(row["run_id"]), str(row["created_at"])[:19].replace("T", " "), str(row["status"]),
         str(row["steps"]), str(row["tokens"]), _short(str(row["goal"]))] for row in rows
    ], title="runs")


def _short(text: str, width: int = 60) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"
