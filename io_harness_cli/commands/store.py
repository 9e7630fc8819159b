"""`io store …`: operations on the store itself (`migrate` copies SQLite into PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from io_harness_cli.commands._common import ConfigOpt, JsonOpt, WorkspaceOpt

app = typer.Typer(help="Operations on the store itself.", no_args_is_help=True,
                  add_completion=False)


@app.command("migrate")
def migrate(
    to: Annotated[str, typer.Option("--to", help="The PostgreSQL store: postgresql://…")],
    source: Annotated[Path | None, typer.Option(
        "--from", help="The SQLite store to copy (default: the configured one).")] = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Copy every run of a SQLite store into a PostgreSQL store, losslessly."""
    _migrate(to, source, workspace, config, json_out)


def _migrate(to: str, source: Path | None, workspace: Path | None, config: Path | None,
             json_out: bool) -> None:
    from harness_core import Store, UsageError, copy_store, is_postgres_url, redact_url
    from io_harness_cli.commands._common import load_config, workspace_path
    from io_harness_cli.output import say, write_json

    if not is_postgres_url(to):
        raise UsageError("--to must be a postgresql:// URL")
    if source is None:
        cfg = load_config(workspace_path(workspace), config)
        source = cfg.store_path
    if not source.is_file():
        raise UsageError(f"no SQLite store at {source}")
    with Store(source) as src, Store(to) as dst:
        report = copy_store(src, dst)
    if json_out:
        write_json({"ok": True, "from": str(source), "to": redact_url(to), "rows": report.rows,
                    "runs": report.runs})
        return
    for table, count in report.rows.items():
        say(f"  {table:<20} {count:>8} rows")
    say(f"io: copied {sum(report.rows.values())} rows of {source} into {redact_url(to)};"
        f" it holds {report.runs} runs")
