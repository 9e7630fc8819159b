"""What every command shares: options, error handling, and assembling a run from config.

Uses only names `harness_core` exports; imports them inside functions so that
`io --help` stays cheap.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from io_harness_cli.exit_codes import ExitCode, exit_code_for_error
from io_harness_cli.output import error

if TYPE_CHECKING:
    from harness_core import (
        Answer,
        Approver,
        Config,
        HarnessError,
        Policy,
        Responder,
        RunAssembly,
        Store,
    )
    from io_harness_cli.commands._drive import EventOutput

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

T = TypeVar("T")


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
        sys.exit(_close_json_run(int(exit_code_for_error(exc)), exc.message))
    except typer.TyperException as exc:
        sys.exit(_close_json_run(_click_failure(exc), " ".join(str(exc).split())))
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(int(ExitCode.INTERRUPTED))
    except Exception:  # the one outermost frame: anything else is a bug
        sys.stderr.write("io: internal error (this is a bug in io):\n")
        traceback.print_exc()
        sys.exit(int(ExitCode.FAILED))
    sys.exit(code if isinstance(code, int) else 0)


def _close_json_run(code: int, reason: str) -> int:
    """`io run --json` / `io resume --json` always end with a `run_finished` line, even
    when the command line itself was refused before the command could write one."""
    argv = sys.argv[1:]
    drive = sys.modules.get("io_harness_cli.commands._drive")
    if (code != 0 and argv[:1] in (["run"], ["resume"]) and "--json" in argv
            and not getattr(drive, "RUN_FINISHED_WRITTEN", False)):
        from harness_core import EVENT_SCHEMA
        from io_harness_cli.output import write_json

        write_json({"schema": EVENT_SCHEMA, "kind": "run_finished", "run_id": None,
                    "root_run_id": None, "status": "error" if code == ExitCode.USAGE
                    else "errored", "exit_code": code, "reason": reason})
    return code


def _click_failure(exc: typer.TyperException) -> int:
    """Print a command-line parsing failure as one line and return its exit code."""
    code = int(getattr(exc, "exit_code", ExitCode.USAGE))
    format_message = getattr(exc, "format_message", None)
    text = str(format_message()) if callable(format_message) else str(exc)
    if type(exc).__name__ == "NoArgsIsHelpError":  # `io` or `io config` alone: the help
        sys.stderr.write(text + "\n")
        return code
    ctx = getattr(exc, "ctx", None)
    where = getattr(ctx, "command_path", None) or "io"
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


def read_stdin_text(what: str) -> str:
    """Standard input read whole and decoded as UTF-8.

    Raises:
        UsageError: It is not UTF-8 text.
    """
    from harness_core import UsageError

    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} read from stdin is not valid UTF-8 text (byte"
                         f" {exc.start})", hint="pass text encoded as UTF-8") from None


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


def _escape_unencodable_output() -> None:
    """Text that cannot be encoded (a file name that is not UTF-8) is printed escaped,
    as stderr already does, instead of failing the command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors="backslashreplace")


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
    if isinstance(exc, UsageError):
        import click

        ctx = click.get_current_context(silent=True)
        first = sys.argv[1] if len(sys.argv) > 1 else ""
        where = (ctx.command_path if ctx is not None
                 else f"io {first}" if first.replace("-", "").isalpha() and first[:1] != "-"
                 else "io")
        return f"see `{where} --help`"
    return ("`io config check` shows what io reads and where from; `io config schema`"
            " lists every key with its type and bounds")


def environment() -> dict[str, str]:
    """The process environment, read once here and passed down as a mapping."""
    return dict(os.environ)


def workspace_path(workspace: Path | None) -> Path:
    """The workspace directory, which must exist."""
    from harness_core import UsageError

    path = (workspace or Path(".")).expanduser()
    if not path.is_dir():
        raise UsageError(f"workspace {str(path)!r} is not a directory",
                         hint="pass an existing directory with --workspace/-w")
    return path.resolve()


STORE_ONLY = ("store",)
"""The tables a command that only reads or writes the store resolves."""
STORE_AND_PRICES = ("store", "prices")
"""The tables a command that reports recorded costs resolves."""


def load_config(workspace: Path, config: Path | None,
                tables: tuple[str, ...] | None = None) -> Config:
    """Load io.toml once; `tables` limits what is resolved (see `load_config`).

    From here on, everything `io` prints passes through the config's secret redactor.
    """
    from harness_core import load_config as load
    from harness_core import secret_redactor
    from io_harness_cli.output import redact_output

    env = environment()
    loaded = load(workspace, config_file=config, env=env, tables=tables)
    redactor = secret_redactor(loaded, env)
    redact_output(redactor if redactor else None)
    return loaded


def open_store(config: Config) -> Store:
    """Open the store, then kill and record what dead `io` processes left running."""
    from harness_core import Store, sweep_leftovers
    from io_harness_cli.output import say

    store = Store(config.store_url or config.store_path)
    for swept in sweep_leftovers(store):
        names = ", ".join(f"{k['pid']} ({k['name']})" for k in swept.killed)
        say(f"io: swept what io process {swept.owner_pid} left running after it died: {names}")
    return store


def assemble(config: Config, workspace: Path, goal: str, store: Store, *,
             interactive: bool, out: EventOutput, policy: Policy | None = None,
             new_id: Callable[[], str] | None = None) -> RunAssembly:
    """The one run builder (`assemble_run`), with terminal approver and responder that
    hold the live view still while they prompt."""
    from harness_core import assemble_run

    run = assemble_run(config, workspace, goal, store=store, env=environment(),
                       on_event=out, approver=make_approver(interactive, out.hold),
                       responder=make_responder(interactive, out.hold), policy=policy,
                       new_id=new_id)
    out.configure(config)
    end_start_up()
    return run


_START_UP_GC = (50_000, 20, 100)
_gc_default: tuple[int, int, int] | None = None


def begin_start_up() -> None:
    """Collect garbage rarely while `io` starts (called first thing by `main`).

    Start-up creates some hundred thousand objects that live as long as the process
    (modules, classes, the config's models) and frees few; the default threshold (a young
    collection every 700 allocations, a full one every 70,000) scans them again and
    again, about 5 % of a one-step run's instructions. Collection is only made rarer,
    never off, so a command that never reaches `end_start_up` still collects.
    """
    global _gc_default
    if _gc_default is None:
        _gc_default = gc.get_threshold()
        gc.set_threshold(*_START_UP_GC)


def end_start_up() -> None:
    """Start-up is over (a run is assembled): move what it built out of the collector's
    sight (`gc.freeze`) and collect as usual from here on, so a long run's full
    collections scan only what its steps made."""
    global _gc_default
    if _gc_default is not None:
        gc.freeze()
        gc.set_threshold(*_gc_default)
        _gc_default = None


Hold = Callable[[], AbstractContextManager[None]]
"""Keeps the terminal still (the live panel down) while the operator is prompted."""


class TtyApprover:
    """Asks the operator on the terminal (stderr prompt, stdin answer)."""

    def __init__(self, hold: Hold | None = None) -> None:
        self._hold = hold or nullcontext

    def decide(self, act: Any, decision: Any) -> Any:
        with self._hold():
            return self._ask(act, decision)

    def _ask(self, act: Any, decision: Any) -> Any:
        from harness_core import ApprovalDecision

        sys.stderr.write(
            f"\nio: approval needed: {act.describe()}\n    {decision.reason}\n"
            "    allow it? [y/N] "
        )
        sys.stderr.flush()
        try:
            line = sys.stdin.readline()
        except (OSError, ValueError):
            return None
        if not line:
            return None
        return ApprovalDecision.APPROVE if line.strip().lower() in ("y", "yes") \
            else ApprovalDecision.DENY


def make_approver(interactive: bool, hold: Hold | None = None) -> Approver | None:
    """A terminal approver when stdin and stderr are TTYs; None pauses the run instead."""
    if interactive and sys.stdin.isatty() and sys.stderr.isatty():
        return TtyApprover(hold)
    return None


class TtyResponder:
    """Puts the agent's question to the operator on the terminal (stderr prompt, stdin
    answer). An empty line or end of input leaves it unanswered: the run pauses."""

    def __init__(self, hold: Hold | None = None) -> None:
        self._hold = hold or nullcontext

    def answer(self, question: str) -> Answer | None:
        with self._hold():
            return self._ask(question)

    def _ask(self, question: str) -> Answer | None:
        from harness_core import Answer, AnsweredBy

        sys.stderr.write(f"\nio: the agent asks: {question}\n"
                         "    your answer (an empty line pauses the run): ")
        sys.stderr.flush()
        try:
            line = sys.stdin.readline()
        except (OSError, ValueError):
            return None
        text = line.strip()
        return Answer(text, AnsweredBy.PERSON) if text else None


def make_responder(interactive: bool, hold: Hold | None = None) -> Responder | None:
    """A terminal responder when stdin and stderr are TTYs; None pauses the run instead."""
    if interactive and sys.stdin.isatty() and sys.stderr.isatty():
        return TtyResponder(hold)
    return None


def sigterm_as_interrupt() -> Callable[[], None]:
    """Treat SIGTERM like Ctrl-C while a run goes; returns a restore function."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore
