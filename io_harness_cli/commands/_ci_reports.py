"""The CI reports of a driven run: `--junit FILE`, and the Markdown summary appended to
`$GITHUB_STEP_SUMMARY` when it is set. Reads the run's gate rounds and spend from the
store after the run; the formats themselves are `render.ci`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from io_harness_cli.commands._load import environment

if TYPE_CHECKING:
    from harness_core import Config, RunOutcome, Store, VerificationRecord
    from io_harness_cli.render.ci import RunSummary

__all__ = ["note_reports", "write_ci_reports"]


def write_ci_reports(config: Config | None, outcome: RunOutcome, code: int,
                     junit: Path | None, workspace: Path | None = None) -> None:
    """Write the JUnit file (when asked) and the step summary (when the variable is set).

    The run has ended: a file that cannot be written is a warning on stderr, and the
    run's exit code stands (2 would say nothing ran). Neither is written through a link
    inside `workspace` (`harness_core.host.write_operator_file`)."""
    summary_file = environment().get("GITHUB_STEP_SUMMARY")
    if junit is None and not summary_file:
        return
    summary = _summary(config, outcome, code)
    from io_harness_cli.render.ci import junit_xml, step_summary

    if junit is not None:
        _write(junit, junit_xml(summary), append=False, workspace=workspace)
    if summary_file:
        _write(Path(summary_file), step_summary(summary).encode("utf-8"), append=True,
               workspace=workspace)


def note_reports(config: Config | None, run_id: str, paths: list[Path | None]) -> None:
    """Record the files io wrote for the operator of `run_id` (`--output-last-message`,
    `--junit`, the step summary), so `io undo` and `io rewind` never take them for
    changes outside io. Best effort: the run has ended and its exit code stands."""
    named = [p for p in paths if p is not None]
    summary_file = environment().get("GITHUB_STEP_SUMMARY")
    if summary_file:
        named.append(Path(summary_file))
    if config is None or not named:
        return
    from harness_core import HarnessError, Store, note_operator_file

    try:
        with Store(config.store_url or config.store_path) as store:
            for path in named:
                note_operator_file(config, store, run_id, path)
    except (HarnessError, OSError) as exc:
        from io_harness_cli.output import say

        say(f"io: warning: cannot record the report files for io undo: {exc}")


def _write(path: Path, data: bytes, *, append: bool, workspace: Path | None) -> None:
    from harness_core import HostBoundaryError, write_operator_file
    from io_harness_cli.output import say

    try:
        write_operator_file(path, data, workspace=workspace, append=append)
    except HostBoundaryError as exc:
        say(f"io: warning: {exc.message}")


def _summary(config: Config | None, outcome: RunOutcome, code: int) -> RunSummary:
    from io_harness_cli.render.ci import RunSummary

    rounds: tuple[tuple[VerificationRecord, ...], ...] = ()
    tokens, cost = 0, None
    if config is not None:
        from harness_core import Store

        with Store(config.store_url or config.store_path) as store:
            rounds = _rounds(store, outcome.run_id)
            tokens = store.run(outcome.run_id).tokens_used
            cost = _cost(store, config, outcome.run_id)
    return RunSummary(outcome.run_id, outcome.status.value, code, outcome.why, outcome.steps,
                      tokens, cost, rounds, f"io trace {outcome.run_id}")


def _rounds(store: Store, run_id: str) -> tuple[tuple[VerificationRecord, ...], ...]:
    by_step: dict[int, list[VerificationRecord]] = {}
    for record in store.verifications(run_id):
        by_step.setdefault(record.step_index, []).append(record)
    return tuple(tuple(gates) for _, gates in sorted(by_step.items()))


def _cost(store: Store, config: Config, run_id: str) -> float | None:
    """The run's (and its children's) derived cost; None when any call is unpriced."""
    if config.prices is None:
        return None
    from harness_core import summarize

    rows = [r for r in store.spend_rows() if run_id in (r.run_id, r.root_run_id)]
    if not rows:
        return 0.0
    total = summarize(rows, config.prices, by="run").total
    return None if total.unpriced_calls else total.cost_usd
