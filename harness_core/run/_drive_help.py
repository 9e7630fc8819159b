"""Small helpers of the runner's entry points: whether a run's recorded owner still
lives, what the sandbox looks like in the record, closing a drive's services, and the
check of a resume's arguments against what the run waits for."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from harness_core.errors import UsageError
from harness_core.run._launchers import Launchers
from harness_core.store import Pause

if TYPE_CHECKING:
    import psutil
else:
    from harness_core._lazy import psutil  # imported on its first use

__all__ = ["_check_resume_args", "_close_all", "_own_start_time", "_process_alive",
           "_sandbox_json"]


def _process_alive(pid: int, started: float | None) -> bool:
    try:
        proc = psutil.Process(pid)
        if started is None:
            return proc.is_running()
        return abs(proc.create_time() - started) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _own_start_time() -> float:
    from harness_core.sandbox._started import process_started

    started = process_started(os.getpid())
    return started if started is not None else float(psutil.Process(os.getpid()).create_time())


def _sandbox_json(launchers: Launchers) -> dict[str, object]:
    out = launchers.selected.to_json()
    out["commands_sandboxed"] = launchers.commands_sandboxed
    return out


def _close_all(services: list[object]) -> None:
    for value in services:
        close = getattr(value, "close_all", None) or getattr(value, "close", None)
        if callable(close):
            close()


def _check_resume_args(
    pause: Pause | None, approve: bool | None, answer: str | None
) -> None:
    kind = pause.kind if pause else None
    if kind == "approval" and approve is None:
        raise UsageError(
            f"the run is paused for an approval of {pause.target if pause else ''!s}",
            hint="resume it with --approve or --deny",
        )
    if kind == "question" and answer is None:
        raise UsageError(
            f"the run is paused for an answer to: {pause.question if pause else ''!s}",
            hint="resume it with --answer TEXT",
        )
    if kind != "approval" and approve is not None:
        raise UsageError("--approve/--deny given, but the run is not waiting for an approval")
    if kind != "question" and answer is not None:
        raise UsageError("--answer given, but the run is not waiting for an answer")
