"""`io rewind` and `io undo` from a loaded config: where the snapshots live and which
paths are never restored (the store, when it sits in the workspace), then
`harness_core.run._rewind`. Nothing here writes to the terminal."""

from __future__ import annotations

import os
from pathlib import Path

from harness_core.config._config import Config
from harness_core.run._rewind import Restored, branch_at, process_alive, undo_step
from harness_core.run._snapshots import note_operator_paths
from harness_core.store import Store

__all__ = ["note_operator_file", "rewind_run", "snapshot_root", "undo_run"]


def snapshot_root(config: Config) -> Path | None:
    """Where runs' workspace snapshots live: `snapshots/` beside the store file (None
    with `[rewind] enabled = false`)."""
    if not config.rewind.enabled:
        return None
    return config.store_path.resolve().parent / "snapshots"


def _excluded(config: Config) -> frozenset[str]:
    store = str(config.store_path.resolve())
    root = snapshot_root(config)
    return frozenset({store, store + "-wal", store + "-shm",
                      *((str(root),) if root is not None else ())})


def undo_run(config: Config, store: Store, run_id: str) -> Restored:
    """Revert the newest step of `run_id` that changed files (`io undo`).

    Raises:
        RunInUse: A live process drives the run.
        UsageError: Snapshots are off, capped or missing, or no step is left to undo.
        WorkspaceChanged: Files changed outside io since the run's last recorded state.
    """
    return undo_step(store, run_id, snapshot_root(config), alive=process_alive,
                     exclude=_excluded(config))


def rewind_run(config: Config, store: Store, run_id: str, step: int, *,
               new_id: str) -> Restored:
    """Restore the files as they were when `step` began and branch the run there as
    run `new_id` (`io rewind`); resume `new_id` to continue the conversation.

    Raises:
        RunInUse: A live process drives the run.
        UsageError: No such step; snapshots off, capped, missing or not reaching it.
        WorkspaceChanged: Files changed outside io since the run's last recorded state.
    """
    return branch_at(store, run_id, step, snapshot_root(config), new_id,
                     alive=process_alive, exclude=_excluded(config))


def note_operator_file(config: Config, store: Store, run_id: str, path: Path) -> bool:
    """Record that io wrote `path` for the operator of run `run_id` (a report, the last
    message, a CI file): `io undo` and `io rewind` of the run then never count it as a
    change outside io, and never restore or remove it. A path outside the run's
    workspace, or a run with snapshots off, needs nothing.

    Returns:
        Whether a record was made.
    """
    if snapshot_root(config) is None:
        return False
    record = store.run(run_id)
    workspace = Path(record.workspace)
    full = Path(os.path.abspath(path))
    for base in (workspace, workspace.resolve()):
        try:
            rel = full.relative_to(base).as_posix()
        except ValueError:
            continue
        if rel == ".":
            return False
        note_operator_paths(store, run_id, max(record.steps_used - 1, 0), [rel])
        return True
    return False
