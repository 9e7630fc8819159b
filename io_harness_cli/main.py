"""The Typer app: registers the commands. Imports typer, the stdlib and `commands/` only.

Every command module imports `harness_core` inside its function, so `io --help` and
`io --version` stay cheap (no httpx, no mcp, no document library). A command line that
names its command first (`io run ...`, `io config show`) is parsed by an app holding
only that command: Typer turns every registered command into a Click command before it
parses anything, and the other thirteen cost every `io run` about 15 ms of start-up.
Anything else (`io --help`, `io --version`, an unknown command) gets the whole app,
which `app` also is.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from typing import Any

import typer

from io_harness_cli import __version__

_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run"),
    "resume": ("resume", "resume"),
    "runs": ("runs", "runs"),
    "trace": ("trace", "trace"),
    "spend": ("spend", "spend"),
    "batch": ("batch", "batch"),
    "tool": ("tool", "tool"),
    "toolchain": ("toolchain", "toolchain"),
    "steer": ("steer", "steer"),
    "interrupt": ("steer", "interrupt"),
}
"""Command name -> (module under `io_harness_cli.commands`, function), in help order."""

_GROUPS = ("config", "templates", "session", "store")
"""Sub-apps (`io config ...`): each module's own `app`, after the commands."""


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"io {__version__}\n")
        raise typer.Exit(0)


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Run an AI agent inside an explicit, enforced, auditable boundary."""


def build_app(names: Iterable[str] | None = None) -> typer.Typer:
    """The `io` app with the commands `names` (default: all of them)."""
    wanted = set(names) if names is not None else None
    app = typer.Typer(
        name="io",
        help="Run an AI agent inside an explicit, enforced, auditable boundary.",
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_root)
    for name, (module, function) in _COMMANDS.items():
        if wanted is None or name in wanted:
            commands = importlib.import_module(f"io_harness_cli.commands.{module}")
            app.command(name)(getattr(commands, function))
    for name in _GROUPS:
        if wanted is None or name in wanted:
            group = importlib.import_module(f"io_harness_cli.commands.{name}")
            app.add_typer(group.app, name=name)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole app, built when first asked for
        value = build_app()
        globals()["app"] = value
        return value
    raise AttributeError(f"module 'io_harness_cli.main' has no attribute {name!r}")


def main() -> None:
    """Console-script entry point: the one outermost frame."""
    from io_harness_cli.commands._common import run_app

    first = sys.argv[1] if len(sys.argv) > 1 else ""
    known = first in _COMMANDS or first in _GROUPS
    run_app(build_app((first,)) if known else build_app())


if __name__ == "__main__":
    main()
