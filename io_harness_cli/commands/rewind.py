"""`io rewind RUN --to STEP` and `io undo RUN`: put a run's workspace files back as its
snapshots had them (refused, exit 2, when files changed outside io since)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt, id_arg

if TYPE_CHECKING:
    from harness_core import Config, RunRecord, Store


def rewind(
    run_id: Annotated[str, typer.Argument(help="The run (a unique prefix works).",
                                          callback=id_arg)],
    to: Annotated[int, typer.Option("--to", help="The step to go back to (0-based): the"
                                    " files as they were when it began.", min=0)],
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Restore RUN_ID's files to when step --to began and continue it from there as a new run."""
    from io_harness_cli.commands._oversee import EventOutput, exit_with, oversee

    out = EventOutput(json_out)

    def body() -> object:
        import uuid

        from harness_core import rewind_run
        from io_harness_cli.commands._overrides import apply_recorded
        from io_harness_cli.commands._oversee import assemble
        from io_harness_cli.output import say

        cfg, store, record, ws = _open(run_id, workspace, config)
        try:
            # The branch goes on from the run: `io run -m`/`--max-steps`/`--narrow` still
            # hold (applied before any file is restored, so a refusal restores nothing).
            cfg = apply_recorded(cfg, record.settings)
            restored = rewind_run(cfg, store, record.run_id, to, new_id=uuid.uuid4().hex[:12])
            out.run_id = restored.run_id
            say(f"io: rewound run {record.run_id} to step {to}: {len(restored.written)} file(s)"
                f" restored, {len(restored.removed)} removed; continuing as run"
                f" {restored.run_id}")
            _say_left(restored.left)
            with assemble(cfg, ws, record.goal, store, interactive=not json_out,
                          out=out) as run:
                return run.runner.resume(restored.run_id, run.spec)
        finally:
            store.close()

    exit_with(oversee(out, body))  # type: ignore[arg-type]


def undo(
    run_id: Annotated[str, typer.Argument(help="The run (a unique prefix works).",
                                          callback=id_arg)],
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Revert the files of RUN_ID's last step that changed files (again: the one before)."""
    from io_harness_cli.commands._failure import fail
    from io_harness_cli.output import say, write_json

    try:
        from harness_core import HarnessError, undo_run

        cfg, store, record, _ws = _open(run_id, workspace, config)
        try:
            restored = undo_run(cfg, store, record.run_id)
        finally:
            store.close()
    except HarnessError as exc:
        fail(exc)
    if json_out:
        write_json({"run_id": restored.run_id, "undone_step": restored.step,
                    "written": list(restored.written), "removed": list(restored.removed),
                    "left": list(restored.left)})
        return
    say(f"io: undid step {restored.step} of run {restored.run_id}:"
        f" {len(restored.written)} file(s) restored, {len(restored.removed)} removed")
    for path in restored.written:
        say(f"  restored {path}")
    for path in restored.removed:
        say(f"  removed  {path}")
    _say_left(restored.left)


def _say_left(left: tuple[str, ...]) -> None:
    """Name the files a restored `.gitignore` uncovered: not the restored state's, left."""
    from io_harness_cli.output import say

    if left:
        say(f"io: warning: {len(left)} file(s) that were not there then are left in place:"
            " a .gitignore hid them when io looked, so io cannot tell whose they are")
    for path in left:
        say(f"  left {path} (not removed)")


def _open(run_id: str, workspace: Path | None,
          config: Path | None) -> tuple[Config, Store, RunRecord, Path]:
    """The config of the run's workspace, the store, the run and its workspace."""
    from io_harness_cli.commands._load import (
        load_config,
        open_store,
        recorded_workspace,
        workspace_path,
    )

    ws_hint = workspace_path(workspace) if workspace is not None else None
    cfg = load_config(ws_hint or Path("."), config)
    store = open_store(cfg)
    try:
        record = store.find_run(run_id)
        ws = recorded_workspace(record.workspace, ws_hint, f"run {record.run_id}")
        from io_harness_cli.commands._overrides import resume_config
        from io_harness_cli.commands._scratch import refuse_origin

        refuse_origin(record.settings, ws, record.run_id)
        started_with = resume_config(record.settings, record.run_id) if config is None else None
        if ws_hint is None or started_with is not None:  # the run's own `io run -c` file
            store.close()
            cfg = load_config(ws, config if started_with is None else started_with)
            store = open_store(cfg)
    except BaseException:
        store.close()
        raise
    return cfg, store, record, ws
