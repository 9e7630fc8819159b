"""`io runs`: the workspace's most recent runs (or every workspace's) with their status
and exit code; `--json` writes one object per run with stable fields, for scripts."""

from __future__ import annotations

from typing import Annotated

import typer

from io_harness_cli.commands._options import (
    AllOpt,
    ConfigOpt,
    JsonOpt,
    StatusOpt,
    WorkspaceOpt,
)

FIELDS = ("run_id", "created_at", "updated_at", "status", "exit_code", "steps", "tokens",
          "goal", "workspace", "session_id", "reason", "parent_run_id", "depth",
          "root_run_id", "agent", "pause", "resume")
"""The keys of each `io runs --json` object, in order (docs/guide/ci.md): `pause` is
what a paused run waits for (kind, question, target; null otherwise) and `resume` the
exact command that continues the run (null when it cannot go on)."""


def runs(
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many runs.", min=1,
                                       max=100_000)] = 20,
    all_workspaces: AllOpt = False,
    status: StatusOpt = None,
) -> None:
    """List recent runs, newest first."""
    from harness_core import RunStatus
    from io_harness_cli.commands._load import STORE_ONLY, load_config, open_store, workspace_path
    from io_harness_cli.commands._options import statuses
    from io_harness_cli.commands._resume_line import resume_command
    from io_harness_cli.exit_codes import exit_code_for_record
    from io_harness_cli.output import write_json

    wanted = [RunStatus(s) for s in statuses(status)]
    ws = workspace_path(workspace)
    cfg = load_config(ws, config, STORE_ONLY)
    store = open_store(cfg)
    try:
        records = store.list_runs(limit, workspace=None if all_workspaces else str(ws),
                                  statuses=wanted)
    finally:
        store.close()
    rows: list[dict[str, object]] = []
    for r in records:
        code = exit_code_for_record(r)
        rows.append(dict(zip(FIELDS, (
            r.run_id, r.created_at, r.updated_at, r.status.value,
            None if code is None else int(code), r.steps_used, r.tokens_used, r.goal,
            r.workspace, r.session_id, r.reason, r.parent_run_id, r.depth, r.root_run_id,
            r.agent, r.pause.to_json() if r.pause is not None else None,
            resume_command(r.root_run_id, r.status.value,
                           pause_kind=r.pause.kind if r.pause is not None else None,
                           reason=r.reason) if r.status.value != "running" else None),
            strict=True)))
    if json_out:
        for row in rows:
            write_json(row)
        return
    from io_harness_cli.render import print_table

    where = "every workspace" if all_workspaces else str(ws)
    print_table(["run", "created", "status", "exit", "steps", "tokens", "goal"], [
        [str(row["run_id"]), str(row["created_at"])[:19].replace("T", " "), str(row["status"]),
         "-" if row["exit_code"] is None else str(row["exit_code"]), str(row["steps"]),
         str(row["tokens"]), _short(str(row["goal"]))] for row in rows
    ], title=f"runs in {where}")
    if not rows:
        from io_harness_cli.output import say

        say(f"io: no runs in {where}" + ("" if all_workspaces else "; --all lists every"
                                         " workspace's"))


def _short(text: str, width: int = 60) -> str:
    """The goal's first line, cut to `width`; a tab is a space (it would split the
    tab-separated columns)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = " ".join(line.split("\t"))
    return line if len(line) <= width else line[: width - 1] + "…"
