"""Workspace snapshots: the files of a run's workspace before and after every step that
changes them, kept outside the workspace so `io rewind` and `io undo` can restore them.

A snapshot is a manifest (path → sha256, size, kind) recorded in the store and the
contents as blob files named by their digest, in `<snapshot dir>/<store id>/<run id>/`
(content-addressed: a file that did not change costs nothing twice). Each blob is
written to a temporary file, flushed and renamed before the row that names it commits,
so a kill -9 leaves at worst an unnamed blob, never a row without its contents. What
`.gitignore` files ignore (and `.git/`) is not kept. Past `[rewind] max_bytes` the run
stops taking snapshots and a ``capped`` row says so. Nothing here writes to the
terminal or changes a workspace file (restoring is `_rewind`'s).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from harness_core._record import record
from harness_core.events import Event, EventKind
from harness_core.store import Store
from harness_core.store._snapshots import Manifest, SnapshotRecord

if TYPE_CHECKING:
    import pathspec

__all__ = ["Scanner", "SnapshotKeeper", "run_snapshot_dir", "sweep_snapshots"]

_CHUNK = 1 << 20
_Stat = tuple[int, int, int, int]


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


class _CapReached(Exception):  # noqa: N818 - internal control flow
    pass


@record(frozen=False)
class Scanner:
    """Reads the workspace's files into a manifest, writing new blobs when asked.

    Args:
        root: The workspace root.
        blobs: The run's blob directory (None: hash only, write nothing).
        exclude: Absolute paths never kept (the store and its snapshots when they sit
            in the workspace).
        budget: Blob bytes that may still be written (None: no cap).
    """

    root: Path
    blobs: Path | None = None
    exclude: frozenset[str] = frozenset()
    budget: int | None = None
    written: int = 0
    _seen: dict[str, tuple[_Stat, tuple[str, int, str]]] = field(default_factory=lambda: {})

    def scan(self, *, trust_stat: bool = True) -> Manifest:
        """The workspace's files now. With `trust_stat`, a file whose size, mtime, inode
        and mode did not change since the last scan is not read again.

        Raises:
            _CapReached: A new blob would pass the budget.
        """
        out: Manifest = {}
        for rel, full, st in _walk(self.root, self.exclude):
            key = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)
            seen = self._seen.get(rel)
            if trust_stat and seen is not None and seen[0] == key:
                out[rel] = seen[1]
                continue
            entry = self._read(full, st)
            if entry is None:
                continue
            self._seen[rel] = (key, entry)
            out[rel] = entry
        return out

    def _read(self, full: Path, st: os.stat_result) -> tuple[str, int, str] | None:
        try:
            if stat.S_ISLNK(st.st_mode):
                data = os.readlink(full).encode("utf-8", "surrogateescape")
                return (self._keep_bytes(data), len(data), "l")
            kind = "x" if st.st_mode & 0o111 else "f"
            with open(full, "rb") as src:
                digest, size = self._keep_stream(src)
            return (digest, size, kind)
        except (FileNotFoundError, PermissionError, IsADirectoryError):
            return None  # gone (or unreadable) between the listing and the read

    def _keep_bytes(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        if self.blobs is not None and not self.has_blob(digest):
            self._charge(len(data))
            _atomic_write(self.blob_path(digest), data)
        return digest

    def _keep_stream(self, src: object) -> tuple[str, int]:
        read = src.read  # type: ignore[attr-defined]
        hasher, size = hashlib.sha256(), 0
        tmp = None
        if self.blobs is not None:
            self.blobs.mkdir(parents=True, exist_ok=True)
            tmp = tempfile.NamedTemporaryFile(dir=self.blobs, prefix=".tmp-", delete=False)  # noqa: SIM115
        try:
            while chunk := read(_CHUNK):
                hasher.update(chunk)
                size += len(chunk)
                if tmp is not None:
                    tmp.write(chunk)
            digest = hasher.hexdigest()
            if tmp is not None:
                tmp.flush()
                if self.has_blob(digest):
                    return digest, size
                self._charge(size)
                os.fsync(tmp.fileno())
                tmp.close()
                self.blob_path(digest).parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp.name, self.blob_path(digest))
            return digest, size
        finally:
            if tmp is not None:
                tmp.close()
                Path(tmp.name).unlink(missing_ok=True)

    def _charge(self, size: int) -> None:
        if self.budget is not None and self.written + size > self.budget:
            raise _CapReached
        self.written += size

    def blob_path(self, digest: str) -> Path:
        assert self.blobs is not None
        return self.blobs / digest[:2] / digest

    def has_blob(self, digest: str) -> bool:
        return self.blobs is not None and self.blob_path(digest).is_file()


def _atomic_write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _ignores(directory: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        text = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    import pathspec  # only for a workspace with a .gitignore (~15 ms and 0.4 MiB to load)

    return pathspec.GitIgnoreSpec.from_lines(text.splitlines())


def _walk(root: Path, exclude: frozenset[str]) -> Iterator[tuple[str, Path, os.stat_result]]:
    """Every file and symlink under `root` that no `.gitignore` on its way ignores."""
    stack: list[tuple[Path, str, list[tuple[str, pathspec.GitIgnoreSpec]]]] = [(root, "", [])]
    while stack:
        directory, rel_dir, specs = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        # A directory's `.gitignore` is read only when the listing shows one (no failed
        # open per directory per scan).
        spec = (_ignores(directory) if any(e.name == ".gitignore" for e in entries)
                else None)
        if spec is not None:
            specs = [*specs, (rel_dir, spec)]
        for entry in entries:
            rel = f"{rel_dir}{entry.name}"
            if entry.name == ".git" or entry.path in exclude:
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if _ignored(specs, rel + ("/" if is_dir else "")):
                continue
            if is_dir:
                stack.append((Path(entry.path), rel + "/", specs))
                continue
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                yield rel, Path(entry.path), st


def _ignored(specs: list[tuple[str, pathspec.GitIgnoreSpec]], rel: str) -> bool:
    return any(spec.match_file(rel[len(base):]) for base, spec in specs)


class SnapshotKeeper:
    """Takes a run's snapshots during a drive (`start`, then `before`/`after` a step).

    Args:
        store: Where manifests are recorded.
        run_id: The run.
        workspace: Its root.
        root: The snapshot directory (`RunSpec.snapshot_dir`); None keeps nothing.
        max_bytes: The run's cap on blob bytes.
        exclude: Absolute paths never kept.
        emit: Where the warning that the cap was reached goes.
    """

    def __init__(self, store: Store, run_id: str, workspace: Path, root: Path | None,
                 max_bytes: int, exclude: frozenset[str],
                 emit: Callable[[Event], None]) -> None:
        self.store, self.run_id, self.emit = store, run_id, emit
        self.scanner: Scanner | None = None
        self.last: SnapshotRecord | None = None
        if root is None:
            return
        rows = store.snapshots(run_id)
        if rows and rows[-1].kind == "capped":
            return
        blobs = run_snapshot_dir(root, store, run_id) / "blobs"
        excluded = exclude | {str(root), str(root.resolve())}
        self.scanner = Scanner(workspace, blobs, frozenset(excluded),
                               max(0, max_bytes - store.snapshot_bytes(run_id)))
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
            manifest = scanner.scan()
        except _CapReached:
            self._capped(step, scanner.written - written)
            return
        if self.last is not None and manifest == self.last.manifest:
            return
        self.last = self.store.record_snapshot(self.run_id, step, kind, manifest,
                                               added_bytes=scanner.written - written)

    def _capped(self, step: int, written: int) -> None:
        self.scanner = None
        note = "[rewind] max_bytes reached: no later snapshot is kept for this run"
        self.last = self.store.record_snapshot(self.run_id, step, "capped", {},
                                               added_bytes=written, note=note)
        self.emit(Event(EventKind.WARNING, self.run_id, {
            "text": f"snapshots stopped at step {step}: {note}; io rewind and io undo"
                    " cannot restore past this point"}))
