"""`io batch TASKS.jsonl`: many runs at once, locally or on a Ray cluster, one store.

Every task line is checked before anything starts; the batch and each task's run id
are recorded first, so `io batch --resume BATCH_ID` (after a crash of this process or
of a worker) finishes what is left and starts nothing twice. Each task's `io run` dies
with the process that launched it, and `--resume` first ends any task process a dead
driver left running. Progress goes to stderr
(a bar on a terminal, one line per task otherwise); the summary table, or with `--json`
one JSON object per task and a closing summary, goes to stdout.

Exit code: 0 when every run finished with its gates passed (or none configured);
otherwise the worst of 1 (a run failed or errored, or its last gate round failed), 3 (a
budget or stall stop), 4 (paused, waiting for `io resume`), in that order.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt

if TYPE_CHECKING:
    from harness_core import Config, Store
    from io_harness_cli.commands._fanout import Job, Result


def batch(
    tasks: Annotated[Path | None, typer.Argument(
        help="A JSON-lines file: one run per line (see docs/guide/fleet.md).",
        show_default=False)] = None,
    parallel: Annotated[int | None, typer.Option(
        "--parallel", "-p", help="Runs at once (default: the number of cores).", min=1,
        max=1024)] = None,
    engine: Annotated[str, typer.Option(
        "--engine", help="Where runs execute: local (this machine) or ray (a Ray cluster).",
        metavar="local|ray")] = "local",
    address: Annotated[str | None, typer.Option(
        "--address", help="The Ray cluster (default: RAY_ADDRESS, else a running local one).",
    )] = None,
    resume: Annotated[str | None, typer.Option(
        "--resume", help="Finish batch BATCH_ID: resume unfinished runs, start missing ones.",
        metavar="BATCH_ID")] = None,
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Run every task of TASKS.jsonl (or finish batch --resume BATCH_ID)."""
    from harness_core import UsageError
    from io_harness_cli.commands._load import load_config, open_store, workspace_path

    if (tasks is None) == (resume is None):
        raise UsageError("give TASKS.jsonl or --resume BATCH_ID (not both)")
    if engine not in ("local", "ray"):
        raise UsageError(f"--engine {engine!r} is not one of: local, ray")
    cfg = load_config(workspace_path(workspace), config)
    location = cfg.store_url or str(cfg.store_path)
    if engine == "ray" and cfg.store_url is None:
        raise UsageError("--engine ray needs a store every worker reaches",
                         hint="set IO_STORE=postgresql://… or [store] url")
    width = parallel or os.cpu_count() or 1
    with open_store(cfg) as store:
        batch_id = resume if resume is not None else _create(store, tasks, engine, width)
        record = store.batch(batch_id)
        jobs = _jobs(store, record.batch_id, location, config, cfg)
    if resume is not None:
        _end_orphans(jobs)
    _report_start(record.batch_id, len(jobs), engine, width, json_out)
    results = _execute(jobs, engine, address, width, json_out)
    code = _summary(record.batch_id, results, cfg, json_out)
    raise typer.Exit(code)


def _create(store: Store, tasks: Path | None, engine: str, parallel: int) -> str:
    import uuid

    from harness_core import load_tasks

    assert tasks is not None
    parsed = load_tasks(tasks)
    batch_id = "b" + uuid.uuid4().hex[:11]
    store.create_batch(
        batch_id, tasks_file=str(tasks.resolve()), engine=engine,
        settings={"parallel": parallel},
        tasks=[(t.index, f"{batch_id}-{t.index:04d}", t.to_json()) for t in parsed])
    return batch_id


def _jobs(store: Store, batch_id: str, location: str, config: Path | None,
          cfg: Config) -> list[Job]:
    from io_harness_cli.commands._fanout import Job, python_executable

    workdir = str(cfg.store_path.parent / "batches")
    return [Job(batch_id=batch_id, index=t.index, run_id=t.run_id, task=t.task, store=location,
                config=None if config is None else str(config.resolve()), workdir=workdir,
                python=python_executable())
            for t in store.batch_tasks(batch_id)]


def _end_orphans(jobs: list[Job]) -> None:
    """End the task processes a dead driver left running, before anything is resumed
    (said on stderr, also with --json: stdout stays the batch's JSON lines)."""
    from io_harness_cli.commands._fanout import end_orphans
    from io_harness_cli.output import say

    ended = end_orphans([job.run_id for job in jobs])
    if ended:
        say(f"io: ended {len(ended)} task process(es) of a batch driver that is gone"
            f" (pid {', '.join(str(pid) for pid in ended)})")


def _report_start(batch_id: str, count: int, engine: str, width: int, json_out: bool) -> None:
    from io_harness_cli.output import say

    if not json_out:
        say(f"io: batch {batch_id}: {count} runs on {engine} ({width} at once);"
            f" finish it later with: io batch --resume {batch_id}")


def _execute(jobs: list[Job], engine: str, address: str | None, width: int,
             json_out: bool) -> list[Result]:
    from io_harness_cli.commands._fanout import run_local, run_ray

    results: list[Result] = []
    with _Progress(len(jobs), json_out) as progress:
        def on_result(result: Result) -> None:
            results.append(result)
            progress.advance(result)

        if engine == "ray":
            run_ray(jobs, address, width, on_result)
        else:
            run_local(jobs, width, on_result)
    return sorted(results, key=lambda r: r.index)


class _Progress:
    """A rich bar on a terminal; otherwise one stderr line per finished task."""

    def __init__(self, total: int, json_out: bool) -> None:
        import sys

        from io_harness_cli.output import use_color

        self.total, self.done = total, 0
        self.json_out = json_out
        self._bar: Any = None
        if use_color(sys.stderr):
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self._bar = Progress("batch", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True)
            self._task = self._bar.add_task("runs", total=total)

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, result: Result) -> None:
        from io_harness_cli.output import say, write_json

        self.done += 1
        if self.json_out:
            from harness_core import EVENT_SCHEMA

            write_json({"schema": EVENT_SCHEMA, "kind": "batch_task", **result.to_json()})
        if self._bar is not None:
            self._bar.advance(self._task)
        elif not self.json_out:
            say(f"io: [{self.done}/{self.total}] task {result.index} run {result.run_id}"
                f" {result.status} (exit {result.exit_code})")


_ORDER = ("finished", "failed", "errored", "stopped", "paused", "interrupted")


def _summary(batch_id: str, results: list[Result], cfg: Config, json_out: bool) -> int:
    from io_harness_cli.output import write_json

    counts = {status: sum(1 for r in results if r.status == status) for status in _ORDER}
    tokens = sum(r.tokens for r in results)
    cost = _cost(batch_id, cfg)
    code = _exit_code(results)
    if json_out:
        from harness_core import EVENT_SCHEMA

        write_json({"schema": EVENT_SCHEMA, "kind": "batch_finished", "batch_id": batch_id,
                    "runs": len(results),
                    **counts, "tokens": tokens, "cost_usd": cost, "exit_code": code})
        return code
    from io_harness_cli.render import print_table

    print_table(["task", "run", "status", "exit", "steps", "tokens", "host"], [
        [str(r.index), r.run_id, r.status, str(r.exit_code), str(r.steps), str(r.tokens), r.host]
        for r in results], title=f"batch {batch_id}")
    shown = " · ".join(f"{n} {status}" for status, n in counts.items() if n)
    money = "-" if cost is None else f"${cost:.4f}"
    print_table(["runs", "outcome", "tokens", "cost_usd"],
                [[str(len(results)), shown or "-", str(tokens), money]], title="summary")
    return code


def _exit_code(results: list[Result]) -> int:
    statuses = {r.status for r in results}
    if statuses & {"failed", "errored"} or any(r.exit_code == 1 for r in results) or any(
            r.status == "finished" and r.exit_code != 0 for r in results):
        return 1
    if "stopped" in statuses:
        return 3
    if "paused" in statuses:
        return 4
    if "interrupted" in statuses:
        return 130
    return 0


def _cost(batch_id: str, cfg: Config) -> float | None:
    """The batch's derived cost, when every call is priced; None otherwise."""
    from harness_core import summarize_sums
    from io_harness_cli.commands._load import open_store

    if cfg.prices is None:
        return None
    with open_store(cfg) as store:
        sums = store.spend_sums("run", batch_id=batch_id)  # summed in the database
    if not sums:
        return None
    report = summarize_sums(sums, cfg.prices, by="run")
    if report.total.unpriced_calls:
        return None
    return report.total.cost_usd or 0.0
