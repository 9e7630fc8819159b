"""`io steer RUN_ID TEXT` and `io interrupt RUN_ID`: operator messages to a run.

Both land at a step boundary, never mid tool call. A steer is text for the model; it
changes no policy, budget or sandbox. An interrupt needs a running run; a steer may also
wait in a paused, interrupted or errored run for its next `io resume`. A message that
could never land (an interrupt for a paused run, anything for an ended one) is refused
with exit 2 and nothing is queued.
"""

from __future__ import annotations

from typing import Annotated

import typer

from io_harness_cli.commands._options import ConfigOpt, WorkspaceOpt, id_arg


def steer(
    run_id: Annotated[str, typer.Argument(help="The run to steer.", callback=id_arg)],
    text: Annotated[str, typer.Argument(help="The message for the model.")],
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Send TEXT to the run; the model sees it at the next step boundary."""
    _post(run_id, "steer", text, workspace, config)


def interrupt(
    run_id: Annotated[str, typer.Argument(help="The run in flight.", callback=id_arg)],
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Stop the run at its next step boundary (it checkpoints; `io resume` continues)."""
    _post(run_id, "interrupt", "", workspace, config)


def _post(run_id: str, kind: str, text: str, workspace: object, config: object) -> None:
    from pathlib import Path

    from harness_core import interrupt_run, steer_run
    from io_harness_cli.commands._load import STORE_ONLY, load_config, open_store, workspace_path
    from io_harness_cli.output import say

    assert workspace is None or isinstance(workspace, Path)
    assert config is None or isinstance(config, Path)
    cfg = load_config(workspace_path(workspace), config, STORE_ONLY)
    store = open_store(cfg)
    try:
        queued = (steer_run(store, run_id, text) if kind == "steer"
                  else interrupt_run(store, run_id))
    finally:
        store.close()
    say(f"io: {kind} queued for run {queued.run_id} ({queued.status}); it lands at"
        f" {queued.lands}")
