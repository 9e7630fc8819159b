"""Exit codes: one `IntEnum` and the one function that maps outcomes and errors to them."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode", "exit_code_for_error", "exit_code_for_status"]


class ExitCode(IntEnum):
    """What `io` exits with. A CI job may rely on each value."""

    OK = 0
    """Finished and every verification gate passed (or the command succeeded)."""
    FAILED = 1
    """Finished with a failed gate, the run failed, or a tool call was refused/failed."""
    USAGE = 2
    """A usage or configuration error; nothing ran."""
    BUDGET = 3
    """A budget or the stall detector stopped the run."""
    PAUSED = 4
    """Paused for an answer or an approval; `io resume` continues it."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C, SIGTERM or `io interrupt`); checkpointed first."""


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
    """The exit code of a run that ended with `status` (a `RunStatus` value)."""
    return _BY_STATUS.get(status, ExitCode.FAILED)


def exit_code_for_error(exc: BaseException) -> ExitCode:
    """The exit code of an error that ended a command.

    `ConfigError` (and its `UsageError`) and `RunNotFound` → 2; `BudgetExceeded` → 3;
    `KeyboardInterrupt` → 130; any other `HarnessError` (a store failure, a run in use,
    a provider outage) → 1.
    """
    from harness_core import BudgetExceeded, ConfigError, RunNotFound

    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    if isinstance(exc, (ConfigError, RunNotFound)):
        return ExitCode.USAGE
    if isinstance(exc, BudgetExceeded):
        return ExitCode.BUDGET
    return ExitCode.FAILED
