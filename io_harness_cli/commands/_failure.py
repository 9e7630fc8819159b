"""How a command that failed ends: one `io: error:` line, a hint, and the documented exit
code (never a traceback). Imports typer and the standard library only; nothing of click's,
which typer 0.28 no longer installs."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

import typer

from io_harness_cli.exit_codes import ExitCode, exit_code_for_error
from io_harness_cli.output import error

if TYPE_CHECKING:
    from harness_core import HarnessError

__all__ = ["fail", "hint_for"]


def fail(exc: BaseException) -> NoReturn:
    """Print a `HarnessError` as one line (+hint) and exit with its code."""
    from harness_core import HarnessError

    if isinstance(exc, HarnessError):
        error(exc.message, hint_for(exc))
    raise typer.Exit(int(exit_code_for_error(exc)))


def hint_for(exc: HarnessError) -> str | None:
    """The error's own hint; a usage or configuration error without one (exit 2) gets a
    general one, so every command-line mistake ends with an `io: error:` and a `hint:`."""
    from harness_core import UsageError

    if exc.hint is not None or int(exit_code_for_error(exc)) != int(ExitCode.USAGE):
        return exc.hint
    from io_harness_cli._catalog import command_path

    where = command_path(sys.argv[1:])
    if isinstance(exc, UsageError):
        return f"see `{where} --help`"
    if where == "io config check":  # it is what the operator just ran: point further
        return ("`io config show` prints every value with the file it came from; `io config"
                " schema` lists every key with its type and bounds")
    return ("`io config check` shows what io reads and where from; `io config schema`"
            " lists every key with its type and bounds")
