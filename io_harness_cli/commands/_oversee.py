"""Oversee a run from the CLI (`io run`, `io resume`, `io session turn`): build it, run it,
print the answer and the gates report, write the CI reports, and map how it ended to an
exit code, with a `run_finished` line however it ends. ("Drive" is the core's word for
one process driving a run; the CLI oversees that drive.)"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from harness_core import record
from io_harness_cli.commands._events import EventOutput
from io_harness_cli.commands._failure import hint_for
from io_harness_cli.commands._load import environment
from io_harness_cli.commands._prompts import make_approver, make_responder
from io_harness_cli.commands._start_up import end_start_up
from io_harness_cli.exit_codes import (
    ExitCode,
    exit_code_for_error,
    exit_code_for_outcome,
    why_for_error,
)
from io_harness_cli.output import error, say, write_stdout

if TYPE_CHECKING:
    from harness_core import Config, Policy, RunAssembly, RunOutcome, Store

__all__ = ["EventOutput", "Reports", "assemble", "exit_with", "oversee"]


@record(frozen=False)
class Reports:
    """Where a driven run's results go besides the exit code.

    Attributes:
        last_message: `--output-last-message`: the final answer is written to this file.
        junit: `--junit`: the gate rounds as JUnit XML.
    """

    last_message: Path | None = None
    junit: Path | None = None
    workspace: Path | None = None
    """The run's workspace, once known: no link in it is followed when a report is written."""

    def check(self) -> None:
        """Refuse a file whose directory does not exist, before anything runs.

        Raises:
            UsageError: The directory of a file is missing.
        """
        from harness_core import UsageError

        for flag, path in (("--output-last-message", self.last_message),
                           ("--junit", self.junit)):
            if path is not None and not path.expanduser().parent.is_dir():
                raise UsageError(f"{flag} {str(path)!r}: no directory {str(path.parent)!r}",
                                 hint="create the directory first, or give another path")


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


def oversee(out: EventOutput, body: Callable[[], RunOutcome],
            reports: Reports | None = None) -> int:
    """Run `body`, map its outcome or error to an exit code, always close with run_finished."""
    from harness_core import HarnessError

    restore = _sigterm_as_interrupt()
    try:
        try:
            outcome = body()
        finally:
            out.stop_display()
    except HarnessError as exc:
        code = int(exit_code_for_error(exc))
        status = "error" if code == ExitCode.USAGE else "busy" if code == ExitCode.BUSY \
            else "errored"
        hint = hint_for(exc)
        error(exc.message, hint)
        out.finished = not out.json_mode  # the error line said it all: one message, not two
        out.finish(status, code, exc.message, why_for_error(exc), verified=None)
        return code
    except KeyboardInterrupt:
        out.finish("interrupted", int(ExitCode.INTERRUPTED), "interrupted", "interrupted",
                   verified=None)
        return int(ExitCode.INTERRUPTED)
    except BaseException as exc:
        out.finish("errored", int(ExitCode.FAILED), f"internal error: {type(exc).__name__}",
                   "internal error", verified=None)
        raise
    finally:
        restore()
    return _ended(out, outcome, reports or Reports())


def _ended(out: EventOutput, outcome: RunOutcome, reports: Reports) -> int:
    """Report an outcome: answer, gates, pause, CI files, then the closing line."""
    code = int(exit_code_for_outcome(outcome))
    # A run that waits (paused, interrupted, errored) has no final answer yet: the text of
    # its last committed step is not one, so nothing is printed or written for it.
    answer = outcome.answer if outcome.status.is_terminal else ""
    extra: dict[str, Any] = {"steps": outcome.steps, "verified": outcome.verified,
                             "gates": [g.to_json() for g in outcome.gates],
                             "answer": answer}
    out.run_id = outcome.run_id
    if not out.json_mode:
        _explain_gates(outcome)
        if answer.strip():
            write_stdout(answer.rstrip("\n") + "\n")
    if outcome.pause:
        extra["pause"] = outcome.pause.to_json()
        extra["resume"] = _resume_command(outcome)
        if not out.json_mode:
            _explain_pause(outcome)
    elif outcome.status.value in ("interrupted", "errored", "stopped"):
        extra["resume"] = _resume_command(outcome)
        if not out.json_mode:
            say(f"    continue with: {extra['resume']}")
    if reports.last_message is not None:  # empty while the run waits: never a stale answer
        _write_text(reports.last_message, answer, reports.workspace)
    from io_harness_cli.commands._ci_reports import note_reports, write_ci_reports

    write_ci_reports(out.config, outcome, code, reports.junit, reports.workspace)
    note_reports(out.config, outcome.run_id, [reports.last_message, reports.junit])
    out.finish(outcome.status.value, code, outcome.reason, outcome.why, **extra)
    return code


def _write_text(path: Path, text: str, workspace: Path | None) -> None:
    """Write the answer file, never through a link in the workspace; the run has ended, so
    a failure is a warning, never the exit code (2 would say nothing ran)."""
    from harness_core import HostBoundaryError, write_operator_file

    try:
        write_operator_file(path, text.encode("utf-8", "surrogateescape"), workspace=workspace)
    except HostBoundaryError as exc:
        say(f"io: warning: {exc.message}")


def _explain_gates(outcome: RunOutcome) -> None:
    """The gates report, one line per gate, and which inputs the agent changed."""
    if not outcome.gates and outcome.status.value == "finished":
        say("io: no gates configured: nothing verified the result")
    for gate in outcome.gates:
        g = gate.to_json()
        verdict = "passed" if g["passed"] else "failed"
        untouched = {True: "inputs untouched", False: "inputs MODIFIED",
                     None: "inputs not checked"}[g["inputs_untouched"]]
        took = f"{g['duration_seconds']:.2f}s" if g["duration_seconds"] is not None else "-"
        exit_status = "-" if g["exit_status"] is None else g["exit_status"]
        say(f"io: gate {verdict}: {g['command']} (exit {exit_status}, {took},"
            f" sandbox {g['sandbox'] or '-'}, {untouched})")
        if g["modified_inputs"]:
            say("io: gate inputs were modified by the agent: " + ", ".join(g["modified_inputs"]))


def _resume_command(outcome: RunOutcome) -> str:
    from io_harness_cli.commands._resume_line import resume_command

    pause = outcome.pause
    return resume_command(outcome.run_id, outcome.status.value,
                          pause_kind=pause.kind if pause is not None else None,
                          reason=outcome.reason) or f"io trace {outcome.run_id}"


def _explain_pause(outcome: RunOutcome) -> None:
    pause = outcome.pause
    if pause is None:
        return
    if pause.kind == "question":
        say(f"io: the agent asks: {pause.question}")
        say(f"    answer with: {_resume_command(outcome)}")
    else:
        say(f"io: approval needed: {pause.target} ({pause.reason})")
        say(f"    continue with: {_resume_command(outcome)}   (or --deny)")


def _sigterm_as_interrupt() -> Callable[[], None]:
    """Treat SIGTERM like Ctrl-C while a run goes; returns a restore function."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def exit_with(code: int) -> NoReturn:
    raise typer.Exit(code)
