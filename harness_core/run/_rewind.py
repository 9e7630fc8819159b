"""`io rewind` and `io undo`: put a run's workspace files back as a snapshot had them.

Both first compare the workspace with the last state io recorded for the run and
refuse (`WorkspaceChanged`, naming each path) when a file changed outside io since: a
restore must never throw away work io did not see. The workspace is read with the
ignore rules of the run's first snapshot (a `.gitignore` the agent wrote cannot blind
the check), and what io wrote for the operator (`note_operator_file`, its own output
redirected into the workspace) and what the policy refuses to read are neither
compared nor restored. A path already at the state being restored passes the check too, so a restore cut short (a kill -9) is finished by running
the same command again. `undo_step` reverts the newest step that changed files and is
not undone yet (only the paths that step changed) and records the result; `branch_at`
restores the state before a step, then records a new run branching from the old one at
that step (`Store.branch_run`), whose first snapshot is the restored state. Nothing
here writes to the terminal.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from harness_core._record import record
from harness_core.errors import RunInUse, UsageError, WorkspaceChanged
from harness_core.run._drive_help import _process_alive as process_alive
from harness_core.run._restore_files import clear_leftovers, restore_files
from harness_core.run._scan import DENIED, UNKNOWN, Rules
from harness_core.run._scanner import Scanner, ignore_rules
from harness_core.run._snapshots import (
    note_operator_paths,
    own_outputs,
    recorded_states,
    run_snapshot_dir,
    sweep_snapshots,
)
from harness_core.store import RunRecord, RunStatus, Store
from harness_core.store._snapshots import Manifest, SnapshotRecord
from harness_core.store._store import AliveCheck

__all__ = ["Restored", "branch_at", "process_alive", "state_before", "undo_step"]


@record
class Restored:
    """What a restore did.

    Attributes:
        run_id: The run whose files were restored (for a rewind, the new branch).
        step: The step undone, or the step rewound to.
        written: Paths written back, sorted.
        removed: Paths removed, sorted.
        left: Paths the restored state does not have that a `.gitignore` the restore put
            back or removed no longer hides: io never saw them (they were ignored), so
            they are left in place and named, sorted.
    """

    run_id: str
    step: int
    written: tuple[str, ...]
    removed: tuple[str, ...]
    left: tuple[str, ...] = ()


def _uncovered(workspace: Path, exclude: frozenset[str], state: Manifest, blobs: Path,
               run_rules: Rules) -> tuple[str, ...]:
    """The paths a rewind uncovered: visible under the ignore rules of the restored
    state (the branch's), absent from it. io never saw them (the run's own rules hid
    them), so they are left in place and named.

    Only rules other than the run's can uncover one, so only then is the workspace read
    again.
    """
    rules = Rules(ignore_rules(state, blobs))
    if rules.lines == run_rules.lines:
        return ()
    now = Scanner(workspace, exclude=exclude, rules=rules).scan(trust_stat=False)
    return tuple(sorted(p for p in now if p not in state and not _covered(p, state)))


@record
class _Usable:
    """A run's recorded states, where their blobs are, and what io wrote for the
    operator in its workspace (never compared, never restored)."""

    rows: list[SnapshotRecord]
    blobs: Path
    operator: frozenset[str]
    rules: Rules


def _usable(store: Store, record: RunRecord, root: Path | None,
            alive: AliveCheck) -> _Usable:
    if root is None:
        raise UsageError("snapshots are off ([rewind] enabled = false): nothing to restore")
    pid = record.owner_pid
    if record.status.value == "running" and pid is not None and alive(pid, None):
        raise RunInUse(record.run_id, pid)
    rows, operator = recorded_states(store.snapshots(record.run_id))
    if not rows:
        raise UsageError(f"run {record.run_id} has no workspace snapshots",
                         hint="it ran with [rewind] enabled = false, or changed no file")
    if rows[-1].kind == "capped":
        raise UsageError(f"run {record.run_id} stopped taking snapshots at step"
                         f" {rows[-1].step_index}: {rows[-1].note}",
                         hint="raise [rewind] max_bytes for runs that need it, or free"
                              " the disk the snapshots are on")
    sweep_snapshots(root, store)
    blobs = run_snapshot_dir(root, store, record.run_id) / "blobs"
    workspace = Path(record.workspace)
    mine = set(_relative_to(workspace, own_outputs())) - operator
    if mine:  # `io undo RUN > out.txt`: io's own output stays io's for later commands
        note_operator_paths(store, record.run_id, rows[-1].step_index, mine)
    return _Usable(rows, blobs, frozenset(operator | mine),
                   Rules(ignore_rules(rows[0].manifest, blobs)))


def _relative_to(workspace: Path, paths: list[Path]) -> list[str]:
    out: list[str] = []
    for path in paths:
        for base in (workspace, workspace.resolve()):
            try:
                out.append(path.relative_to(base).as_posix())
                break
            except ValueError:
                continue
    return out


def _covered(path: str, manifest: Manifest) -> bool:
    """Whether `manifest` names `path` or a folder above it as refused to read."""
    parts = path.split("/")
    return any(manifest.get("/".join(parts[:i])) == DENIED for i in range(1, len(parts) + 1))


def _newest_branch(store: Store, run_id: str) -> str | None:
    """The id of the newest run rewound from `run_id`, or None."""
    branches = [child.run_id for child in store.child_runs(run_id)
                if isinstance(child.settings.get("rewound_from"), dict)]
    return branches[-1] if branches else None


def _stopped_in(store: Store, run_id: str) -> int | None:
    """The step whose process died before the run ended (its status is still running;
    a live owner was refused earlier), or None: the newest step with a recorded call."""
    if store.run(run_id).status is not RunStatus.RUNNING:
        return None
    entries = store.ledger(run_id)
    return entries[-1].step_index if entries else None


def _check(store: Store, run_id: str, workspace: Path, usable: _Usable, target: Manifest,
           paths: set[str] | None, exclude: frozenset[str]) -> Manifest:
    """The workspace now, after refusing if a path differs from both the last recorded
    state and (for the paths being restored) `target`.

    The workspace is read with the ignore rules of the run's first state (a `.gitignore`
    the run wrote hides nothing), and compared with io's own record. What io wrote for
    the operator (`note_operator_file`, its own output redirected into the workspace)
    and what the policy refuses to read are not compared.

    Raises:
        WorkspaceChanged: A path changed outside io.
        UsageError: io could not read a path when it recorded the last state.
    """
    last = usable.rows[-1].manifest
    current = Scanner(workspace, exclude=exclude, rules=usable.rules).scan(trust_stat=False)
    changed, unread = [], []
    for path in sorted(set(current) | set(last)):
        if path in usable.operator or _covered(path, last):
            continue
        now = current.get(path)
        if last.get(path) == UNKNOWN or now == UNKNOWN:
            unread.append(path)
            continue
        if now == last.get(path):
            continue
        if (paths is None or path in paths) and now == target.get(path):
            continue
        changed.append(path)
    if changed:
        raise WorkspaceChanged(changed, _newest_branch(store, run_id), run_id=run_id,
                               stopped_in=_stopped_in(store, run_id))
    if unread:
        raise UsageError(f"io cannot tell whether {', '.join(unread[:20])} changed: it"
                         " changed while io read it; no file was changed",
                         hint="run the command again once nothing writes to the workspace")
    return current


def _restorable(paths: set[str], usable: _Usable, *states: Manifest) -> set[str]:
    """`paths` less what io wrote for the operator and what the policy refuses to read."""
    return {p for p in paths if p not in usable.operator
            and not any(_covered(p, state) for state in states)}


def undo_step(store: Store, run_id: str, root: Path | None, *, alive: AliveCheck,
              exclude: frozenset[str] = frozenset()) -> Restored:
    """Revert the newest step of `run_id` that changed files and is not undone yet.

    Raises:
        RunInUse: A live process drives the run.
        UsageError: No snapshots, snapshots capped, no step left to undo, or something
            io never recorded stands where a restored file goes.
        WorkspaceChanged: Files changed outside io since the last recorded state.
    """
    record = store.run(run_id)
    usable = _usable(store, record, root, alive)
    rows, blobs = usable.rows, usable.blobs
    undone = {int(r.note) for r in rows if r.kind == "undo" and r.note is not None}
    index = next((i for i in range(len(rows) - 1, 0, -1)
                  if rows[i].kind == "after" and rows[i].step_index not in undone), None)
    if index is None:
        raise UsageError(f"run {run_id} has no step left to undo (no step changed files,"
                         " or each was undone already)")
    before, after = rows[index - 1].manifest, rows[index].manifest
    paths = _restorable({p for p in set(before) | set(after) if before.get(p) != after.get(p)},
                        usable, before, after)
    workspace = Path(record.workspace)
    clear_leftovers(workspace, blobs, {p: before[p] for p in paths if p in before})
    current = _check(store, run_id, workspace, usable, before, paths, exclude)
    paths = _restorable(paths, usable, current)
    written, removed = restore_files(workspace, blobs, current, before, paths)
    state = {p: v for p, v in rows[-1].manifest.items() if p not in paths}
    state.update({p: before[p] for p in paths if p in before})
    step = rows[index].step_index
    store.record_snapshot(run_id, max(record.steps_used - 1, 0), "undo", state, note=str(step))
    return Restored(run_id, step, written, removed, ())


def state_before(rows: list[SnapshotRecord], step: int) -> Manifest:
    """The files as they were when step `step` began.

    Raises:
        UsageError: No snapshot reaches back to that step.
    """
    found: Manifest | None = None
    for row in rows:
        if row.kind in ("undo", "operator"):
            continue
        if row.step_index < step or (row.step_index == step and row.kind in ("baseline",
                                                                                "before")):
            found = row.manifest
    if found is None:
        raise UsageError(f"no snapshot reaches back to step {step}")
    return found


def branch_at(store: Store, run_id: str, step: int, root: Path | None, new_id: str, *,
               alive: AliveCheck, exclude: frozenset[str] = frozenset()) -> Restored:
    """Restore the files as they were before `step` and branch the run there.

    Returns:
        The restore, with `run_id` the new branch (resume it to go on).

    Raises:
        RunInUse: A live process drives the run.
        UsageError: No such step, no snapshots (or capped), none reaching that step.
        WorkspaceChanged: Files changed outside io since the last recorded state.
    """
    record = store.run(run_id)
    if step < 0 or step > record.steps_used:
        raise UsageError(f"run {run_id} has steps 0 to {max(record.steps_used - 1, 0)};"
                         f" there is no step {step} to rewind to")
    usable = _usable(store, record, root, alive)
    blobs = usable.blobs
    target = state_before(usable.rows, step)
    workspace = Path(record.workspace)
    clear_leftovers(workspace, blobs, target)
    current = _check(store, run_id, workspace, usable, target, None, exclude)
    paths = _restorable(set(current) | set(target), usable, current, target,
                        usable.rows[-1].manifest)
    written, removed = restore_files(workspace, blobs, current, target, paths)
    assert root is not None
    store.branch_run(run_id, new_id, step)
    _link_blobs(blobs, run_snapshot_dir(root, store, new_id) / "blobs", target)
    store.record_snapshot(new_id, step, "baseline", target, note=f"rewound from {run_id}")
    if usable.operator:  # the parent's report files stay io's for the branch too
        note_operator_paths(store, new_id, step, usable.operator)
    left = _uncovered(workspace, exclude, target, blobs, usable.rules)
    return Restored(new_id, step, written, removed,
                    tuple(p for p in left if p not in usable.operator))


def _link_blobs(source: Path, dest: Path, manifest: Manifest) -> None:
    """Give the branch the blobs of its first state (hard links where the disk allows)."""
    for digest, _size, kind in manifest.values():
        if kind in ("d", "u"):  # nothing kept
            continue
        target = dest / digest[:2] / digest
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source / digest[:2] / digest, target)
        except OSError:  # a copy is named by its digest only once whole (a kill mid-copy)
            partial = target.with_name(f".tmp-{digest}")
            shutil.copyfile(source / digest[:2] / digest, partial)
            os.replace(partial, target)
