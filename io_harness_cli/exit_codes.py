"""Exit codes: one `IntEnum` and the functions that map outcomes and errors to them.

A run's own ending is mapped by `RunOutcome.exit_code` in `harness_core` (it is recorded
with the run, so `io runs` and `io batch` report the same code); `exit_code_for_outcome`
reads it, and `exit_code_for_error` maps the errors that end a command before or while a
run goes. The table is docs/guide/exit-codes.md; `io --help` prints it (`HELP_TABLE`).
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness_core import RunOutcome, RunRecord

__all__ = ["HELP_TABLE", "ExitCode", "exit_code_for_error", "exit_code_for_outcome",
           "exit_code_for_record", "exit_code_for_status", "why_for_error"]


class ExitCode(IntEnum):
    """What `io` exits with. A CI job may rely on each value."""

    OK = 0
    """The run finished and every configured gate passed (or none is configured:
    `verified: null`); any other command: it succeeded."""
    FAILED = 1
    """Verification failed: the last gate round failed, whatever stopped the run. Also a
    run that failed or errored, and a tool call that was refused or failed."""
    USAGE = 2
    """A usage or configuration error; nothing ran."""
    BUDGET = 3
    """A budget or the stall detector stopped the run, and no gate round failed."""
    PAUSED = 4
    """Paused for an answer or an approval; `io resume` continues it."""
    BUSY = 5
    """Another live process drives this run (or takes a turn of this session)."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C, SIGTERM or `io interrupt`); checkpointed first."""


HELP_TABLE = (
    "Exit codes: 0 finished, every configured gate passed (or none configured) · "
    "1 the last gate round failed, or the run failed · 2 usage or config error · "
    "3 budget or stall stop, no failed gate · 4 paused (`io resume` continues) · "
    "5 busy (another process drives the run) · 130 interrupted."
)
"""The table in one paragraph, for `io --help`."""

_BY_STATUS = {
    "finished": ExitCode.OK,
    "failed": ExitCode.FAILED,
    "errored": ExitCode.FAILED,
    "stopped": ExitCode.BUDGET,
    "paused": ExitCode.PAUSED,
    "interrupted": ExitCode.INTERRUPTED,
    "running": ExitCode.FAILED,
}


def exit_code_for_status(status: str) -> ExitCode:
    """The exit code of a run that ended with `status` when nothing is known of its gates
    (a run recorded before io kept its exit code)."""
    return _BY_STATUS.get(status, ExitCode.FAILED)


def exit_code_for_outcome(outcome: RunOutcome) -> ExitCode:
    """The exit code of a drive of a run (`RunOutcome.exit_code`)."""
    return ExitCode(outcome.exit_code)


def exit_code_for_record(record: RunRecord) -> ExitCode | None:
    """The exit code a recorded run ended with (None while it runs)."""
    if record.status.value == "running":
        return None
    if record.exit_code is not None:
        return ExitCode(record.exit_code)
    return exit_code_for_status(record.status.value)


def exit_code_for_error(exc: BaseException) -> ExitCode:
    """The exit code of an error that ended a command.

    `ConfigError` (and its `UsageError`) and `RunNotFound` → 2; `BudgetExceeded` → 3;
    `RunInUse` and `SessionInUse` → 5; `KeyboardInterrupt` → 130; any other `HarnessError`
    (a store failure, a provider outage) → 1.
    """
    from harness_core import BudgetExceeded, ConfigError, RunInUse, RunNotFound, SessionInUse

    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    if isinstance(exc, (ConfigError, RunNotFound)):
        return ExitCode.USAGE
    if isinstance(exc, BudgetExceeded):
        return ExitCode.BUDGET
    if isinstance(exc, (RunInUse, SessionInUse)):
        return ExitCode.BUSY
    return ExitCode.FAILED


_WHY_OF_ERROR = {
    ExitCode.USAGE: "usage or configuration error",
    ExitCode.BUDGET: "a budget was exceeded",
    ExitCode.BUSY: "busy: another process drives this run",
    ExitCode.INTERRUPTED: "interrupted",
    ExitCode.FAILED: "the run failed",
}


def why_for_error(exc: BaseException) -> str:
    """One line saying why an error gives its exit code (`run_finished`'s `why`)."""
    message = getattr(exc, "message", None) or type(exc).__name__
    return f"{_WHY_OF_ERROR[exit_code_for_error(exc)]}: {message}"
