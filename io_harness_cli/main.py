"""The Typer app: registers the commands. Imports typer, the stdlib and `commands/` only.

Every command module imports `harness_core` inside its function, so `io --help` and
`io --version` stay cheap (no httpx, no mcp, no document library). A command line that
names its command first (`io run ...`, `io config show`) is parsed by an app holding
only that command: Typer turns every registered command into a Click command before it
parses anything, and the other thirteen cost every `io run` about 15 ms of start-up.
A command line that names no command at all (`io`, `io --help`, `io --version`, a
misspelt command) can only print the index, the version or an error, so it is parsed by
the index: the same names and help texts, each command without its options (turning the
options of every command into Click's took a third of `io --help`). Anything else gets
the whole app, which `app` also is.

`io --help` and `io --version` alone do not import typer at all: the index's help is
rendered ahead of time into `io_harness_cli/_index_help.py` (`python -m
io_harness_cli.main --write-index-help` rewrites it; tests/integration/cli/
test_help_fast_path.py holds it to what typer prints) and printed as it is when the
terminal is wide enough for Click to render it at the same width.
"""

from __future__ import annotations

import sys

from io_harness_cli import __version__
from io_harness_cli._catalog import _COMMANDS, _GROUPS

# `typing` alone is about half of `io --help`'s instructions (it imports re, enum,
# functools, contextlib ...): the names below are for the type checker only, which
# treats a module-level `TYPE_CHECKING` as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    import typer

def _version(value: bool) -> None:
    import typer

    if value:
        sys.stdout.write(f"io {__version__}\n")
        raise typer.Exit(0)


def _root_callback() -> Any:
    import typer

    def _root(
        version: bool = typer.Option(
            False, "--version", callback=_version, is_eager=True,
            help="Print the version and exit."
        ),
    ) -> None:
        """Run an AI agent inside an explicit, enforced, auditable boundary."""

    return _root


def build_app(names: Iterable[str] | None = None, *, index: bool = False) -> typer.Typer:
    """The `io` app with the commands `names` (default: all of them).

    With `index`, every command and group is there with its name and summary only (no
    module of theirs imported): enough for the help, the version and "No such command",
    and nothing that could run one.
    """
    import importlib

    import typer

    from io_harness_cli.exit_codes import HELP_TABLE

    wanted = set(names) if names is not None else None
    app = typer.Typer(
        name="io",
        help="Run an AI agent inside an explicit, enforced, auditable boundary.",
        epilog=HELP_TABLE,
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_root_callback())
    for name, (module, function, summary) in _COMMANDS.items():
        if index:
            app.command(name, help=summary)(_not_in_index)
        elif wanted is None or name in wanted:
            commands = importlib.import_module(f"io_harness_cli.commands.{module}")
            app.command(name)(getattr(commands, function))
    for name, summary in _GROUPS.items():
        if index:
            app.add_typer(typer.Typer(help=summary), name=name)
        elif wanted is None or name in wanted:
            group = importlib.import_module(f"io_harness_cli.commands.{name}")
            app.add_typer(group.app, name=name)
    return app


def _not_in_index() -> None:
    """Never called: a command line that names a command is not parsed by the index."""
    raise AssertionError("the index of `io` ran a command")


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole app, built when first asked for
        value = build_app()
        globals()["app"] = value
        return value
    raise AttributeError(f"module 'io_harness_cli.main' has no attribute {name!r}")


def _help_width() -> int:
    """The width Click renders help at here: `min(terminal columns, 80) - 2`, at least 50
    (the terminal's columns found as `shutil.get_terminal_size` finds them)."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
        columns = columns or 80
    return max(min(columns, 80) - 2, 50)


def _answered_without_typer(argv: list[str]) -> bool:
    """`io --version`, and `io --help` at the width the stored index was rendered at."""
    if argv == ["--version"]:
        sys.stdout.write(f"io {__version__}\n")
        return True
    if argv == ["--help"]:
        from io_harness_cli._index_help import INDEX_HELP, WIDTH

        if _help_width() == WIDTH:
            reconfigure = getattr(sys.stdout, "reconfigure", None)
            if callable(reconfigure):  # as run_app does: escape what cannot be encoded
                reconfigure(errors="backslashreplace")
            sys.stdout.write(INDEX_HELP)
            return True
    return False


def render_index_help(width: int) -> str:
    """What typer prints for `io --help` at `width` (the index app, as `main` runs it)."""
    import typer

    command = typer.main.get_command(build_app(index=True))
    context = command.make_context("io", ["--help"], resilient_parsing=True,
                                   terminal_width=width)
    return command.get_help(context) + "\n"


def write_index_help() -> None:
    """Rewrite `_index_help.py` from typer's own rendering of the index."""
    from pathlib import Path

    width = 78
    text = render_index_help(width)
    target = Path(__file__).with_name("_index_help.py")
    target.write_text(
        '"""`io --help` as typer prints it at WIDTH columns: written by `python -m '
        'io_harness_cli.main --write-index-help`, never by hand."""\n\n'
        f"WIDTH = {width}\nINDEX_HELP = {text!r}\n", encoding="utf-8")


def main() -> None:
    """Console-script entry point: the one outermost frame."""
    argv = sys.argv[1:]
    if _answered_without_typer(argv):
        return
    from io_harness_cli.commands._entry import run_app
    from io_harness_cli.commands._start_up import begin_start_up

    begin_start_up()
    first = argv[0] if argv else ""
    if first in _COMMANDS or first in _GROUPS:
        run_app(build_app((first,)))
    elif any(arg in _COMMANDS or arg in _GROUPS for arg in argv):
        run_app(build_app())
    else:
        run_app(build_app(index=True))


def console() -> None:
    """The `io` console script and `python -m io_harness_cli`: `main`, then, when it ends
    with an exit code, leave without the interpreter's tear-down (`leave`: the `atexit`
    functions still run and the streams are flushed). `main` itself ends by raising
    `SystemExit`, so a caller that runs it in its own process keeps its process."""
    try:
        main()
    except SystemExit as ended:  # every command ends this way (`run_app`)
        from io_harness_cli.commands._start_up import leave

        leave(ended)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-index-help"]:
        write_index_help()
    else:
        console()
