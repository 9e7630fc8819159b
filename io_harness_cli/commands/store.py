"""`io store check`: the full, read-only integrity check of the run store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from io_harness_cli.commands._common import ConfigOpt, JsonOpt, WorkspaceOpt

app = typer.Typer(help="Inspect the run store.", no_args_is_help=True, add_completion=False)

PathArg = Annotated[
    Path | None,
    typer.Argument(help="The store file (default: the configured store).", show_default=False),
]


@app.command("check")
def check(path: PathArg = None, workspace: WorkspaceOpt = None, config: ConfigOpt = None,
          json_out: JsonOpt = False) -> None:
    """Check the store fully (header, log, schema, PRAGMA integrity_check) without
    writing it. Exits 0 when it is sound, 1 when it is damaged."""
    from harness_core import check_store
    from io_harness_cli.commands._common import load_config, workspace_path
    from io_harness_cli.exit_codes import ExitCode
    from io_harness_cli.output import write_json

    target = path if path is not None else load_config(workspace_path(workspace),
                                                       config).store_path
    report = check_store(target)
    if json_out:
        write_json(report.to_json())
    elif report.ok:
        typer.echo(f"store {report.path}: ok ({report.runs} runs, {report.size} bytes;"
                   " integrity_check ok)")
    else:
        typer.echo(f"store {report.path}: damaged")
        for problem in report.problems:
            typer.echo(f"  {problem}")
        typer.echo("  io will not write to it; move it aside (keep it for recovery) or"
                   " restore a backup, and io starts a new store there")
    if not report.ok:
        raise typer.Exit(int(ExitCode.FAILED))
