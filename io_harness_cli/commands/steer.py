"""`io steer RUN_ID TEXT` and `io interrupt RUN_ID`: operator messages to a run in flight.

Both land at the run's next step boundary, never mid tool call. A steer is text for the
model; it changes no policy, budget or sandbox.
"""

from __future__ import annotations

from typing import Annotated

import typer

from io_harness_cli.commands._options import ConfigOpt, WorkspaceOpt, id_arg


def steer(
    run_id: Annotated[str, typer.Argument(help="The run in flight.", callback=id_arg)],
    text: Annotated[str, typer.Argument(help="The message for the model.")],
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Send TEXT to the run; the model sees it at the next step boundary."""
    _post(run_id, "steer", {"text": text}, workspace, config)


def interrupt(
    run_id: Annotated[str, typer.Argument(help="The run in flight.", callback=id_arg)],
    workspace: WorkspaceOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Stop the run at its next step boundary (it checkpoints; `io resume` continues)."""
    _post(run_id, "interrupt", {}, workspace, config)


def _post(run_id: str, kind: str, body: dict[str, str], workspace: object, config: object) -> None:
    from pathlib import Path

    from io_harness_cli.commands._load import STORE_ONLY, load_config, open_store, workspace_path
    from io_harness_cli.output import say

    assert workspace is None or isinstance(workspace, Path)
    assert config is None or isinstance(config, Path)
    cfg = load_config(workspace_path(workspace), config, STORE_ONLY)
    store = open_store(cfg)
    try:
        record = store.find_run(run_id)
        store.post_inbox(record.run_id, kind, body)
    finally:
        store.close()
    say(f"io: {kind} queued for run {record.run_id}; it lands at the next step boundary")
