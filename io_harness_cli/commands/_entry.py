"""The one outermost frame of `io`: parse, run the command, and turn whatever ends it into
one message and a documented exit code.

Imports typer and the standard library at module level; `harness_core` inside functions.
"""

from __future__ import annotations

import sys
import traceback

import typer

from io_harness_cli.commands._failure import hint_for
from io_harness_cli.exit_codes import ExitCode, exit_code_for_error, why_for_error
from io_harness_cli.output import error

__all__ = ["check_argv", "run_app"]


def run_app(app: typer.Typer) -> None:
    """Run the Typer app; the only place where an unexpected exception is caught.

    Typer runs without its own error printing, so every way a command line can be wrong
    (bytes that are not UTF-8, an unknown option, a number out of range, an empty id)
    ends the same way: one `io: error:` line, a hint, exit 2, never a traceback.
    """
    from harness_core import HarnessError

    _escape_unencodable_output()
    try:
        check_argv(sys.argv[1:])
        code = app(prog_name="io", standalone_mode=False)
    except HarnessError as exc:
        error(exc.message, hint_for(exc))
        sys.exit(_close_json_run(int(exit_code_for_error(exc)), exc.message,
                                 why_for_error(exc)))
    except typer.TyperException as exc:
        text = " ".join(str(exc).split())
        sys.exit(_close_json_run(_parse_failure(exc), text, f"usage: {text}"))
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(int(ExitCode.INTERRUPTED))
    except BrokenPipeError:  # stdout closed by its reader (`io runs | head`): not an error
        from io_harness_cli.output import drop

        drop(sys.stdout)
        sys.exit(0)
    except Exception:  # the one outermost frame: anything else is a bug
        sys.stderr.write("io: internal error (this is a bug in io):\n")
        traceback.print_exc()
        sys.exit(int(ExitCode.FAILED))
    sys.exit(code if isinstance(code, int) else 0)


def _close_json_run(code: int, reason: str, why: str) -> int:
    """`io run --json` / `io resume --json` always end with a `run_finished` line, even
    when the command line itself was refused before the command could write one."""
    argv = sys.argv[1:]
    events = sys.modules.get("io_harness_cli.commands._events")
    if (code != 0 and argv[:1] in (["run"], ["resume"]) and "--json" in argv
            and not getattr(events, "RUN_FINISHED_WRITTEN", False)):
        from harness_core import EVENT_SCHEMA
        from io_harness_cli.output import write_json

        write_json({"schema": EVENT_SCHEMA, "kind": "run_finished", "run_id": None,
                    "root_run_id": None, "status": "error" if code == ExitCode.USAGE
                    else "errored", "exit_code": code, "reason": reason, "why": why,
                    "verified": None})
    return code


def _parse_failure(exc: typer.TyperException) -> int:
    """Print a command-line parsing failure as one line and return its exit code."""
    code = int(getattr(exc, "exit_code", ExitCode.USAGE))
    format_message = getattr(exc, "format_message", None)
    text = str(format_message()) if callable(format_message) else str(exc)
    if type(exc).__name__ == "NoArgsIsHelpError":  # `io` or `io config` alone: the help
        sys.stderr.write(text + "\n")
        return code
    ctx = getattr(exc, "ctx", None)
    where = getattr(ctx, "command_path", None)
    if not where:  # an option's missing value is reported without a context
        from io_harness_cli._catalog import command_path

        where = command_path(sys.argv[1:])
    error(" ".join(text.split()), f"see `{where} --help`")
    return code


def check_argv(argv: list[str]) -> None:
    """Refuse command-line arguments that are not UTF-8 text.

    Raises:
        UsageError: An argument holds bytes that are not UTF-8 (Python hands them over
            as lone surrogates); the message says which one.
    """
    from harness_core import UsageError

    for position, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
            raise UsageError(f"argument {position} ({shown[:60]!r}) is not valid UTF-8 text",
                             hint="pass text encoded as UTF-8") from None


def _escape_unencodable_output() -> None:
    """Text that cannot be encoded (a file name that is not UTF-8) is printed escaped,
    as stderr already does, instead of failing the command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors="backslashreplace")
