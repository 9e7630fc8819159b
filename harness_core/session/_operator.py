"""`steer_run` and `interrupt_run`: operator messages to a run, checked against where the
run stands before they are queued.

A message lands at a step boundary, so it is only queued where one will come:

- an interrupt needs a run that is running; a paused, interrupted, errored or ended run
  has nothing to interrupt, and queuing one there could stop the next `io resume` before
  the act it approves runs;
- a steer reaches a running run at its next step boundary, and a paused, interrupted or
  errored run at the first boundary after its next resume (after the paused call, never
  between a call and its result); a finished, failed or stopped run will never read one.

Refusals raise `RunNotInFlight` (a usage error: exit 2). Nothing here writes to the
terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness_core._record import record
from harness_core.errors import RunNotInFlight

if TYPE_CHECKING:
    from harness_core.store import RunRecord, Store

__all__ = ["Queued", "interrupt_run", "steer_run"]


@record
class Queued:
    """Where a queued message will land.

    Attributes:
        run_id: The run's full id.
        status: The run's status when the message was queued.
        lands: In words: ``the next step boundary`` or ``the first step boundary after
            the next `io resume```.
    """

    run_id: str
    status: str
    lands: str


def _paused_hint(record: RunRecord) -> str:
    pause = record.pause
    if pause is not None and pause.kind == "approval":
        return (f"it waits for an approval of {pause.target}: `io resume {record.run_id}"
                " --approve` or `--deny`")
    if pause is not None and pause.kind == "question":
        return f"it waits for an answer: `io resume {record.run_id} --answer TEXT`"
    return f"`io resume {record.run_id}` continues it"


def interrupt_run(store: Store, run_id: str) -> Queued:
    """Queue an interrupt for a running run (it stops at its next step boundary).

    Args:
        store: The store holding the run.
        run_id: The run's id or a unique prefix.

    Raises:
        RunNotFound: No such run.
        RunNotInFlight: The run is not running (paused, stopped or ended).
    """
    record = store.find_run(run_id)
    status = record.status.value
    if status != "running":
        ended = record.status.is_terminal
        what = "has ended" if ended else "is not running"
        raise RunNotInFlight(
            record.run_id, status,
            f"run {record.run_id} is {status}: it {what}, so there is nothing to interrupt"
            " (no interrupt was queued)",
            hint=(f"`io trace {record.run_id}` shows how it ended" if ended
                  else _paused_hint(record)))
    store.post_inbox(record.run_id, "interrupt", {})
    return Queued(record.run_id, status, "the next step boundary")


def steer_run(store: Store, run_id: str, text: str) -> Queued:
    """Queue a steer (text for the model) for a run that will take another step.

    Args:
        store: The store holding the run.
        run_id: The run's id or a unique prefix.
        text: The message; it changes no policy, budget or sandbox.

    Raises:
        RunNotFound: No such run.
        RunNotInFlight: The run has ended (finished, failed or stopped).
    """
    record = store.find_run(run_id)
    status = record.status.value
    if record.status.is_terminal:
        raise RunNotInFlight(
            record.run_id, status,
            f"run {record.run_id} has ended ({status}): it takes no more steps, so a steer"
            " would never be read (none was queued)",
            hint="start a new run, or a session turn that continues it")
    store.post_inbox(record.run_id, "steer", {"text": text})
    if status == "running":
        return Queued(record.run_id, status, "the next step boundary")
    return Queued(record.run_id, status,
                  f"the first step boundary after the next `io resume` ({_paused_hint(record)})"
                  if status == "paused" else
                  "the first step boundary after the next `io resume`")
