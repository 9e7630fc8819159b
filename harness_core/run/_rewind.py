"""`io rewind` and `io undo`: put a run's workspace files back as a snapshot had them.

Both first compare the workspace with the last state io recorded for the run and
refuse (`WorkspaceChanged`, naming each path) when a file changed outside io since: a
restore must never throw away work io did not see. A path already at the state being
restored passes the check too, so a restore cut short (a kill -9) is finished by running
the same command again. `undo_step` reverts the newest step that changed files and is
not undone yet (only the paths that step changed) and records the result; `branch_at`
restores the state before a step, then records a new run branching from the old one at
that step (`Store.branch_run`), whose first snapshot is the restored state. Nothing
here writes to the terminal.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from harness_core._record import record
from harness_core.errors import RunInUse, UsageError, WorkspaceChanged
from harness_core.run._drive_help import _process_alive as process_alive
from harness_core.run._snapshots import Scanner, run_snapshot_dir, sweep_snapshots
from harness_core.store import RunRecord, Store
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


def _uncovered(workspace: Path, exclude: frozenset[str], state: Manifest,
               touched: tuple[str, ...]) -> tuple[str, ...]:
    """The paths a restore of `touched` uncovered: visible now, absent from `state`.

    Only a restore that wrote or removed a `.gitignore` can uncover one, so only then is
    the workspace read again.
    """
    if not any(p.rsplit("/", 1)[-1] == ".gitignore" for p in touched):
        return ()
    now = Scanner(workspace, exclude=exclude).scan(trust_stat=False)
    return tuple(sorted(p for p in now if p not in state))


def _usable(store: Store, record: RunRecord, root: Path | None,
            alive: AliveCheck) -> tuple[list[SnapshotRecord], Path]:
    if root is None:
        raise UsageError("snapshots are off ([rewind] enabled = false): nothing to restore")
    pid = record.owner_pid
    if record.status.value == "running" and pid is not None and alive(pid, None):
        raise RunInUse(record.run_id, pid)
    rows = store.snapshots(record.run_id)
    if not rows:
        raise UsageError(f"run {record.run_id} has no workspace snapshots",
                         hint="it ran with [rewind] enabled = false, or changed no file")
    if rows[-1].kind == "capped":
        raise UsageError(f"run {record.run_id} stopped taking snapshots at step"
                         f" {rows[-1].step_index}: {rows[-1].note}",
                         hint="raise [rewind] max_bytes for runs that need it")
    sweep_snapshots(root, store)
    return rows, run_snapshot_dir(root, store, record.run_id) / "blobs"


def _newest_branch(store: Store, run_id: str) -> str | None:
    """The id of the newest run rewound from `run_id`, or None."""
    branches = [child.run_id for child in store.child_runs(run_id)
                if isinstance(child.settings.get("rewound_from"), dict)]
    return branches[-1] if branches else None


def _check(store: Store, run_id: str, workspace: Path, last: Manifest, target: Manifest,
           paths: set[str] | None, exclude: frozenset[str]) -> Manifest:
    """The workspace now, after refusing if a path differs from both `last` and (for the
    paths being restored) `target`."""
    current = Scanner(workspace, exclude=exclude).scan(trust_stat=False)
    changed = []
    for path in sorted(set(current) | set(last)):
        now = current.get(path)
        if now == last.get(path):
            continue
        if (paths is None or path in paths) and now == target.get(path):
            continue
        changed.append(path)
    if changed:
        raise WorkspaceChanged(changed, _newest_branch(store, run_id))
    return current


def _restore(workspace: Path, blobs: Path, current: Manifest, target: Manifest,
             paths: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Make each of `paths` in the workspace what `target` says (absent: removed)."""
    root = workspace.resolve()
    removed = sorted(p for p in paths if p in current and p not in target)
    written = sorted(p for p in paths if p in target and current.get(p) != target[p])
    for rel in written:  # every blob first: a refusal leaves the workspace untouched
        digest = target[rel][0]
        blob = blobs / digest[:2] / digest
        if not blob.is_file():
            raise UsageError(f"the snapshot blob of {rel} is missing ({blob}); no file"
                             " was changed", hint="the snapshot directory was changed"
                             " outside io")
    for rel in removed:
        _remove(root, rel)
    for rel in written:
        digest, _size, kind = target[rel]
        _write(root, rel, blobs / digest[:2] / digest, kind)
    return tuple(written), tuple(removed)


def _safe(root: Path, rel: str) -> Path:
    target = root / rel
    if ".." in Path(rel).parts or not target.parent.resolve().is_relative_to(root):
        raise UsageError(f"cannot restore {rel}: its directory leads outside the workspace")
    return target


def _remove(root: Path, rel: str) -> None:
    target = _safe(root, rel)
    target.unlink(missing_ok=True)
    parent = target.parent
    while parent != root and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


_RESTORING = ".io-restore"
"""The suffix of the copy a restore writes beside a file before renaming it into place."""


def _temp_of(target: Path) -> Path:
    return target.with_name(f".{target.name}{_RESTORING}")


def _write(root: Path, rel: str, blob: Path, kind: str) -> None:
    """Put `blob` at `rel`: copied beside it, then renamed over it, so a kill leaves the
    old file or the new one, and at worst the copy beside it (`_clear_leftovers`)."""
    target = root / rel
    for parent in reversed(Path(rel).parents[:-1]):  # a file where a directory must be
        if (root / parent).is_symlink() or (root / parent).is_file():
            (root / parent).unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    target = _safe(root, rel)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    tmp = _temp_of(target)
    tmp.unlink(missing_ok=True)
    if kind == "l":
        os.symlink(blob.read_bytes().decode("utf-8", "surrogateescape"), tmp)
    else:
        shutil.copyfile(blob, tmp)
        os.chmod(tmp, _mode(target, kind))
    os.replace(tmp, target)


def _mode(target: Path, kind: str) -> int:
    """The permissions a restored file gets: the file's own when it is there (a 0600 file
    stays private), with the executable bits the snapshot says; 0644 or 0755 for a file
    that is gone (a snapshot keeps no more than the executable bit)."""
    try:
        st = os.lstat(target)
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode):
        return 0o755 if kind == "x" else 0o644
    mode = stat.S_IMODE(st.st_mode)
    if kind != "x":
        return mode & ~0o111
    return mode if mode & 0o111 else mode | (mode & 0o444) >> 2


def _clear_leftovers(workspace: Path, blobs: Path, target: Manifest) -> None:
    """Remove the copies a restore killed before renaming them left beside the files
    being restored: only one holding what `target` says that file is, or the start of it
    (a copy cut short), so a file of that name io did not write is never touched."""
    root = workspace.resolve()
    for rel, (digest, _size, kind) in target.items():
        tmp = _temp_of(root / rel)
        try:
            if kind == "l":
                data = os.readlink(tmp).encode("utf-8", "surrogateescape")
            elif tmp.is_symlink():
                continue
            else:
                data = tmp.read_bytes()
            with open(blobs / digest[:2] / digest, "rb") as blob:
                ours = blob.read(len(data) + 1)
        except OSError:
            continue
        if ours == data or (kind != "l" and ours[:len(data)] == data):
            tmp.unlink()


def undo_step(store: Store, run_id: str, root: Path | None, *, alive: AliveCheck,
              exclude: frozenset[str] = frozenset()) -> Restored:
    """Revert the newest step of `run_id` that changed files and is not undone yet.

    Raises:
        RunInUse: A live process drives the run.
        UsageError: No snapshots, snapshots capped, or no step left to undo.
        WorkspaceChanged: Files changed outside io since the last recorded state.
    """
    record = store.run(run_id)
    rows, blobs = _usable(store, record, root, alive)
    undone = {int(r.note) for r in rows if r.kind == "undo" and r.note is not None}
    index = next((i for i in range(len(rows) - 1, 0, -1)
                  if rows[i].kind == "after" and rows[i].step_index not in undone), None)
    if index is None:
        raise UsageError(f"run {run_id} has no step left to undo (no step changed files,"
                         " or each was undone already)")
    before, after = rows[index - 1].manifest, rows[index].manifest
    paths = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    workspace = Path(record.workspace)
    _clear_leftovers(workspace, blobs, {p: before[p] for p in paths if p in before})
    current = _check(store, run_id, workspace, rows[-1].manifest, before, paths, exclude)
    written, removed = _restore(workspace, blobs, current, before, paths)
    state = {p: v for p, v in current.items() if p not in paths}
    state.update({p: before[p] for p in paths if p in before})
    step = rows[index].step_index
    store.record_snapshot(run_id, max(record.steps_used - 1, 0), "undo", state, note=str(step))
    left = _uncovered(workspace, exclude, state, written + removed)
    return Restored(run_id, step, written, removed, left)


def state_before(rows: list[SnapshotRecord], step: int) -> Manifest:
    """The files as they were when step `step` began.

    Raises:
        UsageError: No snapshot reaches back to that step.
    """
    found: Manifest | None = None
    for row in rows:
        if row.kind == "undo":
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
    rows, blobs = _usable(store, record, root, alive)
    target = state_before(rows, step)
    workspace = Path(record.workspace)
    _clear_leftovers(workspace, blobs, target)
    current = _check(store, run_id, workspace, rows[-1].manifest, target, None, exclude)
    paths = set(current) | set(target)
    written, removed = _restore(workspace, blobs, current, target, paths)
    assert root is not None
    store.branch_run(run_id, new_id, step)
    _link_blobs(blobs, run_snapshot_dir(root, store, new_id) / "blobs", target)
    store.record_snapshot(new_id, step, "baseline", target, note=f"rewound from {run_id}")
    return Restored(new_id, step, written, removed,
                    _uncovered(workspace, exclude, target, written + removed))


def _link_blobs(source: Path, dest: Path, manifest: Manifest) -> None:
    """Give the branch the blobs of its first state (hard links where the disk allows)."""
    for digest, _size, _kind in manifest.values():
        target = dest / digest[:2] / digest
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source / digest[:2] / digest, target)
        except OSError:
            shutil.copyfile(source / digest[:2] / digest, target)
