"""The Typer app: registers the commands. Imports typer, the stdlib and `commands/` only.

Every command module imports `harness_core` inside its function, so `io --help` and
`io --version` stay cheap (no httpx, no mcp, no document library).
"""

from __future__ import annotations

import sys

import typer

from io_harness_cli import __version__
from io_harness_cli.commands import batch as batch_cmd
from io_harness_cli.commands import config as config_cmd
from io_harness_cli.commands import resume as resume_cmd
from io_harness_cli.commands import run as run_cmd
from io_harness_cli.commands import runs as runs_cmd
from io_harness_cli.commands import session as session_cmd
from io_harness_cli.commands import spend as spend_cmd
from io_harness_cli.commands import steer as steer_cmd
from io_harness_cli.commands import store as store_cmd
from io_harness_cli.commands import templates as templates_cmd
from io_harness_cli.commands import tool as tool_cmd
from io_harness_cli.commands import toolchain as toolchain_cmd
from io_harness_cli.commands import trace as trace_cmd

app = typer.Typer(
    name="io",
    help="Run an AI agent inside an explicit, enforced, auditable boundary.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"io {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Run an AI agent inside an explicit, enforced, auditable boundary."""


app.command("run")(run_cmd.run)
app.command("resume")(resume_cmd.resume)
app.command("runs")(runs_cmd.runs)
app.command("trace")(trace_cmd.trace)
app.command("spend")(spend_cmd.spend)
app.command("batch")(batch_cmd.batch)
app.command("tool")(tool_cmd.tool)
app.command("toolchain")(toolchain_cmd.toolchain)
app.command("steer")(steer_cmd.steer)
app.command("interrupt")(steer_cmd.interrupt)
app.add_typer(config_cmd.app, name="config")
app.add_typer(templates_cmd.app, name="templates")
app.add_typer(session_cmd.app, name="session")
app.add_typer(store_cmd.app, name="store")


def main() -> None:
    """Console-script entry point: the one outermost frame."""
    from io_harness_cli.commands._common import run_app

    run_app(app)


if __name__ == "__main__":
    main()
