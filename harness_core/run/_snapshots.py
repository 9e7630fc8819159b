"""Workspace snapshots: the files of a run's workspace before and after every step that
changes them, kept outside the workspace so `io rewind` and `io undo` can restore them.

A snapshot is a manifest (path → sha256, size, kind) recorded in the store and the
contents as blob files named by their digest, in `<snapshot dir>/<store id>/<run id>/`
(content-addressed: a file that did not change costs nothing twice). Each blob is
written to a temporary file, flushed and renamed before the row that names it commits,
so a kill -9 leaves at worst an unnamed blob, never a row without its contents (the
reading and writing are `_scanner`'s). What the `.gitignore` files of the run's first
snapshot ignore (and `.git/`), the sandbox's placeholders and what io wrote for the
operator are not kept; what the policy refuses to read is named, never copied. Past
`[rewind] max_bytes`, or when a blob cannot be written (disk full, an I/O error, no
permission), the run stops taking snapshots, warns, and a ``capped`` row says why; the
run goes on. Nothing here writes to the terminal or changes a workspace file
(restoring is `_rewind`'s).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from harness_core.errors import HarnessError
from harness_core.events import Event, EventKind
from harness_core.run._masks import read_masks
from harness_core.run._scan import UNKNOWN, Rules
from harness_core.run._scanner import (
    CapReached,
    Scanner,
    SnapshotFault,
    ignore_rules,
    relative_paths,
)
from harness_core.run._spec import RunSpec
from harness_core.sandbox._placeholders import pending_placeholders
from harness_core.store import Store
from harness_core.store._snapshots import Manifest, SnapshotRecord

__all__ = ["SnapshotKeeper", "keeper_for", "note_operator_paths", "own_outputs",
           "recorded_states", "run_snapshot_dir", "sweep_snapshots"]


def run_snapshot_dir(root: Path, store: Store, run_id: str) -> Path:
    """Where run `run_id`'s blobs live under the snapshot directory `root`."""
    return root / store.store_id() / run_id


def sweep_snapshots(root: Path, store: Store) -> list[str]:
    """Remove the snapshots of runs this store no longer holds; returns their ids."""
    base = root / store.store_id()
    if not base.is_dir():
        return []
    known = store.run_ids()
    gone = [p.name for p in base.iterdir() if p.is_dir() and p.name not in known]
    for name in gone:
        shutil.rmtree(base / name, ignore_errors=True)
    return gone


def clear_partial_blobs(blobs: Path) -> list[Path]:
    """Remove the `.tmp-*` files a killed drive left while writing blobs (a blob is
    written to one, then renamed to its digest). Only the run's own driver writes its
    blob folder, and a new drive holds the run, so none of them is being written.

    Returns:
        What was removed.
    """
    removed: list[Path] = []
    folders = [blobs]
    with contextlib.suppress(OSError), os.scandir(blobs) as top:
        folders += [Path(e.path) for e in top if e.is_dir(follow_symlinks=False)]
    for folder in folders:
        with contextlib.suppress(OSError), os.scandir(folder) as listing:
            for entry in listing:
                if entry.name.startswith(".tmp-") and entry.is_file(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)
                        removed.append(Path(entry.path))
    return removed


class SnapshotKeeper:
    """Takes a run's snapshots during a drive (`start`, then `before`/`after` a step).

    The ignore rules are the `.gitignore` files of the run's first snapshot (taken
    before the agent acted), so nothing the run writes can hide a file from io. The
    sandbox's placeholders are never kept. A blob that cannot be written (disk full, an
    I/O error, no permission) ends snapshots for the rest of the run as the size cap
    does: a ``capped`` row naming the cause and a warning; the run goes on.

    Args:
        store: Where manifests are recorded.
        run_id: The run.
        workspace: Its root.
        root: The snapshot directory (`RunSpec.snapshot_dir`); None keeps nothing.
        max_bytes: The run's cap on blob bytes.
        exclude: Absolute paths never kept.
        emit: Where the warning that snapshots stopped goes.
        masks: Lists the paths the policy refuses to read now (`read_masks`): they are
            named in the manifest as `DENIED`, and no copy of them is kept.
    """

    def __init__(self, store: Store, run_id: str, workspace: Path, root: Path | None,
                 max_bytes: int, exclude: frozenset[str],
                 emit: Callable[[Event], None],
                 masks: Callable[[], Iterable[Path]] | None = None) -> None:
        self.store, self.run_id, self.emit, self.masks = store, run_id, emit, masks
        self.scanner: Scanner | None = None
        self.last: SnapshotRecord | None = None
        if root is None:
            return
        rows, operator = recorded_states(store.snapshots(run_id))
        if rows and rows[-1].kind == "capped":
            return
        blobs = run_snapshot_dir(root, store, run_id) / "blobs"
        clear_partial_blobs(blobs)
        mine = [p for p in own_outputs() if relative_paths(workspace, [p]) - operator]
        if mine:  # `io run ... > events.jsonl`: the run's own output is never a change
            operator |= note_operator_paths(store, run_id, 0, relative_paths(workspace, mine) - operator)
        excluded = exclude | {str(root), str(root.resolve())} | {
            str(workspace / rel) for rel in operator}
        rules = Rules(ignore_rules(rows[0].manifest, blobs)) if rows else Rules()
        self.scanner = Scanner(workspace, blobs, frozenset(excluded),
                               max(0, max_bytes - store.snapshot_bytes(run_id)), rules)
        self.last = rows[-1] if rows else None

    @property
    def active(self) -> bool:
        return self.scanner is not None

    def start(self, step: int) -> None:
        """At the start of a drive: the baseline, or the state found when it differs."""
        self._take(step, "baseline" if self.last is None else "before")

    def before(self, step: int) -> None:
        """Before a step's calls run: recorded when the files differ from the last state."""
        self._take(step, "before")

    def after(self, step: int) -> None:
        """After a step's calls ran: recorded when they changed files."""
        self._take(step, "after")

    def _take(self, step: int, kind: str) -> None:
        scanner = self.scanner
        if scanner is None:
            return
        written = scanner.written
        try:
            manifest = _settled_scan(scanner, self.masks)
        except CapReached:
            self._stop(step, scanner.written - written,
                       "[rewind] max_bytes reached: no later snapshot is kept for this run")
            return
        except SnapshotFault as fault:
            self._stop(step, scanner.written - written,
                       f"{fault.note()}: no later snapshot is kept for this run")
            return
        except HarnessError as exc:  # the read refusals could not be worked out
            self._stop(step, scanner.written - written,
                       f"{exc.message}: no later snapshot is kept for this run")
            return
        scanner.rules.fix()
        if self.last is not None and manifest == self.last.manifest:
            return
        self.last = self.store.record_snapshot(self.run_id, step, kind, manifest,
                                               added_bytes=scanner.written - written)

    def _stop(self, step: int, written: int, note: str) -> None:
        self.scanner = None
        self.last = self.store.record_snapshot(self.run_id, step, "capped", {},
                                               added_bytes=written, note=note)
        self.emit(Event(EventKind.WARNING, self.run_id, {
            "text": f"snapshots stopped at step {step}: {note}; io rewind and io undo"
                    " cannot restore past this point"}))


_RETRIES = 2
"""Scans again while a file changed as it was read, before recording it as unknown."""


def _settled_scan(scanner: Scanner,
                  masks: Callable[[], Iterable[Path]] | None) -> Manifest:
    """A scan, taken again (at most `_RETRIES` times) while an entry is unknown."""
    also = pending_placeholders()
    denied = list(masks()) if masks is not None else []
    manifest = scanner.scan(also=also, denied=denied)
    for _ in range(_RETRIES):
        if UNKNOWN not in manifest.values():
            break
        manifest = scanner.scan(also=also, denied=denied)
    return manifest


OPERATOR: tuple[str, int, str] = ("", 0, "o")
"""The entry of an ``operator`` row: a file io wrote for the operator (kind ``o``)."""


def recorded_states(rows: list[SnapshotRecord]) -> tuple[list[SnapshotRecord], set[str]]:
    """A run's rows split: the recorded states of its files, oldest first, and the paths
    its ``operator`` rows name (files io wrote for the operator: never compared, never
    restored)."""
    states = [row for row in rows if row.kind != "operator"]
    operator = {path for row in rows if row.kind == "operator" for path in row.manifest}
    return states, operator


def note_operator_paths(store: Store, run_id: str, step: int,
                        paths: Iterable[str]) -> set[str]:
    """Record workspace paths io wrote for the operator in run `run_id`; returns them."""
    named = set(paths)
    if named:
        store.record_snapshot(run_id, step, "operator", dict.fromkeys(sorted(named), OPERATOR),
                              note="written by io for the operator")
    return named


def own_outputs() -> list[Path]:
    """The regular files this process's stdout and stderr write to (`io ... > out.txt`),
    found through ``/proc`` (elsewhere: none)."""
    found: list[Path] = []
    for fd in (1, 2):
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                continue
            path = os.readlink(f"/proc/self/fd/{fd}")
            named = os.stat(path)
        except OSError:
            continue
        if (named.st_dev, named.st_ino) == (info.st_dev, info.st_ino):
            found.append(Path(path))
    return found


def keeper_for(store: Store, run_id: str, spec: RunSpec,
               emit: Callable[[Event], None]) -> SnapshotKeeper:
    """The snapshot keeper of a run driven with `spec` (its read refusals included)."""
    return SnapshotKeeper(store, run_id, spec.workspace.root, spec.snapshot_dir,
                          spec.snapshot_max_bytes, frozenset(spec.protected_paths), emit,
                          read_masks(spec.workspace.root, spec.policy))
