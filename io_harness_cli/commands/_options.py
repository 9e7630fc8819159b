"""The options and argument checks that every command shares (`-w`, `-c`, `--json`, ids).

Imports typer and the standard library only: a command module imports this at its top,
and `io --help` must stay cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["AllOpt", "ConfigOpt", "JsonOpt", "StatusOpt", "WorkspaceOpt", "id_arg", "statuses"]

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="The workspace directory (default: .).",
                 file_okay=False, dir_okay=True),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Use FILE as the project-scope io.toml."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output on stdout.")]


def id_arg(value: str | None) -> str | None:
    """Typer callback for an id (a run, a session, a turn): not empty, no whitespace or
    control characters, so `io resume ""` is a usage error and never matches every run."""
    if value is None:  # an optional id left out
        return None
    if not value.strip():
        raise typer.BadParameter("must not be empty (`io runs` and `io session list` list ids)")
    if len(value) > 200 or any(ch.isspace() or not ch.isprintable() for ch in value):
        raise typer.BadParameter(f"{value[:40]!r} is not an id")
    return value


AllOpt = Annotated[bool, typer.Option(
    "--all", help="List every workspace's, not only the workspace's (-w, default: .).")]
StatusOpt = Annotated[list[str] | None, typer.Option(
    "--status", help="Only those with this status (repeatable): running, paused, finished,"
    " failed, stopped, interrupted, errored.", metavar="STATUS")]


def statuses(values: list[str] | None) -> list[str]:
    """The `--status` values, checked against the run statuses.

    Raises:
        UsageError: One is not a status.
    """
    from harness_core import RunStatus, UsageError

    known = [s.value for s in RunStatus]
    for value in values or []:
        if value not in known:
            raise UsageError(f"--status {value!r} is not a status",
                             hint="one of: " + ", ".join(known))
    return list(values or [])
