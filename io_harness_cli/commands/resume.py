"""`io resume RUN_ID`: continue a crashed, interrupted or paused run.

Annotations are evaluated at import, as in `run.py` (Typer would compile each string
annotation twice while building the command).
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt, id_arg

if TYPE_CHECKING:
    from harness_core import Config


def resume(
    run_id: Annotated[str, typer.Argument(
        help="The run to resume (a unique prefix works); for a tree, the root's id.",
        callback=id_arg)],
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    answer: Annotated[str | None, typer.Option(
        "--answer", help="The answer to the question the run paused on.")] = None,
    approve: Annotated[bool, typer.Option(
        "--approve", help="Approve the act the run paused on.")] = False,
    deny: Annotated[bool, typer.Option("--deny", help="Deny the act the run paused on.")] = False,
    stored_policy: Annotated[bool, typer.Option(
        "--stored-policy",
        help="Resume every run of the tree under the policy it recorded.")] = False,
    output_last_message: Annotated[Path | None, typer.Option(
        "--output-last-message", help="Also write the final answer to FILE.",
        metavar="FILE", dir_okay=False)] = None,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="Write the gate rounds to FILE as JUnit XML.", metavar="FILE",
        dir_okay=False)] = None,
    max_steps: Annotated[int | None, typer.Option(
        "--max-steps", help="Allow the run N steps in all (more room for a stopped run).",
        min=1, max=1_000_000, metavar="N")] = None,
    max_tokens: Annotated[int | None, typer.Option(
        "--max-tokens", help="Allow the run N tokens in all.", min=1, metavar="N")] = None,
    max_cost: Annotated[float | None, typer.Option(
        "--max-cost", help="Allow the run USD of derived cost in all.", min=0.0,
        metavar="USD")] = None,
    max_wall: Annotated[float | None, typer.Option(
        "--max-wall", help="Allow the run SECONDS of wall-clock time in all.", min=1.0,
        metavar="SECONDS")] = None,
) -> None:
    """Resume RUN_ID where it stopped; nothing committed is run or requested again."""
    from io_harness_cli.commands._oversee import EventOutput, Reports, exit_with, oversee

    out = EventOutput(json_out)
    reports = Reports(last_message=output_last_message, junit=junit)
    scratch: list[tuple[Path, Path]] = []  # (the workspace copied, the copy) of a --scratch run

    def body() -> object:
        from harness_core import UsageError
        from io_harness_cli.commands._load import (
            load_config,
            open_store,
            recorded_workspace,
            workspace_path,
        )
        from io_harness_cli.commands._oversee import assemble

        if approve and deny:
            raise UsageError("--approve and --deny exclude each other",
                             hint="give one of them: --approve runs the act, --deny refuses it")
        reports.check()
        ws_hint = workspace_path(workspace) if workspace is not None else None
        cfg = load_config(ws_hint or Path("."), config)
        store = open_store(cfg)  # sweeps what a killed io left: processes, placeholders
        try:
            record = store.find_run(run_id)
            out.run_id = record.run_id
            if record.status.is_terminal and (approve or deny or answer is not None):
                flag = "--answer" if answer is not None else "--approve/--deny"
                raise UsageError(
                    f"run {record.run_id} has ended ({record.status.value}): it waits for"
                    f" no decision, so {flag} would apply to nothing",
                    hint=f"`io trace {record.run_id}` shows how it ended")
            ws = recorded_workspace(record.workspace, ws_hint, f"run {record.run_id}")
            reports.workspace = ws  # its links are never followed by a report write
            from io_harness_cli.commands._overrides import apply_recorded, resume_config
            from io_harness_cli.commands._scratch import refuse_origin, scratch_origin

            refuse_origin(record.settings, ws, record.run_id)
            origin = scratch_origin(record.settings)
            if origin is not None and origin.is_dir() and not record.status.is_terminal:
                scratch.append((origin, ws))
            started_with = resume_config(record.settings, record.run_id) if config is None else None
            if ws_hint is None or started_with is not None:
                cfg = load_config(ws, config if started_with is None else started_with)
            cfg = apply_recorded(cfg, record.settings)  # `io run -c/-m/--max-steps/--narrow`
            if stored_policy:
                _check_stored_policy(cfg, record.policy, record.run_id)
            room = _room(record, max_steps=max_steps, max_tokens=max_tokens,
                         max_cost_usd=max_cost, wall_seconds=max_wall)
            waits = record.status.value == "paused" and not (approve or deny or answer)
            if room and not waits:  # a paused run given no decision is refused below
                for name, value in room.items():  # refused before anything is recorded
                    cfg.requirements.check(name, value, key=name.replace("_", "-"),
                                           tried_by="the io resume budget flags")
                store.give_room(record.run_id, room)
                cfg = apply_recorded(cfg, store.run(record.run_id).settings)
            decision = True if approve else (False if deny else None)
            with assemble(cfg, ws, record.goal, store, interactive=not json_out,
                          out=out) as run:
                # A tree resumes through its root: the answer or approval reaches the run
                # that waits, and --stored-policy applies to every run of the tree.
                return run.runner.resume(record.run_id, run.spec, approve=decision,
                                         answer=answer, stored_policy=stored_policy)
        finally:
            store.close()

    code = oversee(out, body, reports)  # type: ignore[arg-type]
    if scratch:  # as at the end of the uninterrupted `io run --scratch`
        from io_harness_cli.commands._scratch import end_scratch

        end_scratch(*scratch[0], out.status, out.run_id)
    exit_with(code)


def _room(record: object, **limits: int | float | None) -> dict[str, int | float]:
    """The budget limits given on the command line, checked against what the run used.

    Raises:
        UsageError: A limit the run has already reached gives it no room.
    """
    from harness_core import RunRecord, UsageError

    assert isinstance(record, RunRecord)
    given = {k: v for k, v in limits.items() if v is not None}
    used = {"max_steps": record.steps_used, "max_tokens": record.tokens_used,
            "wall_seconds": record.wall_used}
    for key, value in given.items():
        if key in used and value <= used[key]:
            flag = {"max_steps": "--max-steps", "max_tokens": "--max-tokens",
                    "wall_seconds": "--max-wall"}[key]
            raise UsageError(f"{flag} {value:g} gives run {record.run_id} no room: it has"
                             f" used {used[key]:g}",
                             hint=f"give more than {used[key]:g} (the limit counts the whole run)")
    return given


def _check_stored_policy(cfg: "Config", recorded: dict[str, Any], run_id: str) -> None:
    """Refuse `--stored-policy` when the policy the run recorded loosens a requirement in
    force now.

    Raises:
        RequirementError: Its tier or approval mode is beyond the floor.
    """
    from harness_core import Policy

    kept = Policy.from_json(recorded)
    where = f"--stored-policy (the policy run {run_id} recorded)"
    cfg.requirements.check("tier", kept.tier, key="policy.tier", tried_by=where)
    cfg.requirements.check("approval", kept.approval, key="policy.approval", tried_by=where)
