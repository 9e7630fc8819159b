"""`io store …`: the run store itself: `check` (full, read-only integrity check) and
`migrate` (copy a SQLite store into a PostgreSQL one)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt

app = typer.Typer(help="Check the run store, or copy it into PostgreSQL.", no_args_is_help=True,
                  add_completion=False)

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
    from io_harness_cli.commands._load import load_config, workspace_path
    from io_harness_cli.exit_codes import ExitCode
    from io_harness_cli.output import write_json

    if path is None:
        cfg = load_config(workspace_path(workspace), config)
        if cfg.store_url is not None:
            from harness_core import UsageError, redact_url

            raise UsageError(
                f"io store check checks a SQLite store file; the configured store is"
                f" PostgreSQL ({redact_url(cfg.store_url)})",
                hint="the database server checks its own pages; give a file: io store check PATH")
        target = cfg.store_path
    else:
        target = path
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
    from io_harness_cli.commands._load import load_config, workspace_path
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
