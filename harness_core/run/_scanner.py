"""Reading a workspace into a snapshot manifest and writing the blobs it names.

`Scanner` walks the workspace without following a link (`_scan`), hashes each file
and writes the contents it has not kept yet as a blob named by its digest: to a
temporary file, flushed and renamed (a kill -9 leaves at worst an unnamed blob). A
file that changes, vanishes or turns into something else while it is read is recorded
as `UNKNOWN`, never an error. An error writing a blob (disk full, an I/O error, no
permission) is a `SnapshotFault`: the keeper (`_snapshots`) then stops snapshots for
the run. Nothing here writes to the terminal or changes a workspace file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import field
from pathlib import Path
from typing import IO, BinaryIO

from harness_core._record import record
from harness_core.run._scan import DENIED, FILE_FLAGS, UNKNOWN, Rules, walk
from harness_core.store._snapshots import Manifest

__all__ = ["CapReached", "Scanner", "SnapshotFault", "ignore_rules", "relative_paths"]

_CHUNK = 1 << 20
_Stat = tuple[int, int, int, int]


class CapReached(Exception):  # noqa: N818 - control flow, not an error
    """A new blob would pass the run's `[rewind] max_bytes`."""


class SnapshotFault(Exception):  # noqa: N818 - not an error of io's: the disk's
    """Writing a blob failed (disk full, an I/O error, no permission): no snapshot can
    be kept for the rest of the run.

    Attributes:
        cause: The error of the write.
    """

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause

    def note(self) -> str:
        """The cause in one line, for the ``capped`` row and the warning."""
        reason = self.cause.strerror or type(self.cause).__name__
        where = f" ({self.cause.filename})" if self.cause.filename else ""
        return f"writing a snapshot failed: {reason}{where}"


class _Unread(Exception):  # noqa: N818 - internal control flow
    """Reading a workspace file failed part-way (the file is recorded as unknown)."""


@contextlib.contextmanager
def _sink() -> Iterator[None]:
    """An error writing into the snapshot directory is a `SnapshotFault`."""
    try:
        yield
    except OSError as exc:
        raise SnapshotFault(exc) from exc


def relative_paths(root: Path, paths: Iterable[str | Path]) -> frozenset[str]:
    """The workspace-relative form of each of `paths` that lies in `root`."""
    out: set[str] = set()
    for path in paths:
        for base in (root, root.resolve()):
            with contextlib.suppress(ValueError):
                rel = Path(path).relative_to(base).as_posix()
                if rel != ".":
                    out.add(rel)
    return frozenset(out)


@record(frozen=False)
class Scanner:
    """Reads the workspace's files into a manifest, writing new blobs when asked.

    The walk never follows a link (`harness_core.run._scan`); a file that changes,
    vanishes or turns into something else while it is read is recorded as `UNKNOWN`.

    Args:
        root: The workspace root.
        blobs: The run's blob directory (None: hash only, write nothing).
        exclude: Absolute paths never kept (the store and its snapshots when they sit
            in the workspace).
        budget: Blob bytes that may still be written (None: no cap).
        rules: The ignore rules (default: read from the `.gitignore` files met).
    """

    root: Path
    blobs: Path | None = None
    exclude: frozenset[str] = frozenset()
    budget: int | None = None
    rules: Rules = field(default_factory=Rules)
    written: int = 0
    _seen: dict[str, tuple[_Stat, tuple[str, int, str]]] = field(default_factory=lambda: {})

    def scan(self, *, trust_stat: bool = True, also: Iterable[Path] = (),
             denied: Iterable[Path] = ()) -> Manifest:
        """The workspace's files now. With `trust_stat`, a file whose size, mtime, inode
        and mode did not change since the last scan is not read again. `also` names
        more absolute paths to leave out (the sandbox's placeholders); `denied` the
        paths the policy refuses to read, recorded as `DENIED` with nothing kept.

        Raises:
            CapReached: A new blob would pass the budget.
            SnapshotFault: A blob could not be written.
        """
        refused = relative_paths(self.root, denied)
        out: Manifest = dict.fromkeys(sorted(refused), DENIED)
        skip = relative_paths(self.root, [*self.exclude, *also]) | refused
        for rel, dir_fd, name, st in walk(str(self.root), self.rules, skip):
            if st is None:
                out[rel] = UNKNOWN
                continue
            key = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)
            seen = self._seen.get(rel)
            if trust_stat and seen is not None and seen[0] == key:
                out[rel] = seen[1]
                continue
            entry, read_key = self._read(dir_fd, name, st)
            if read_key is not None:
                self._seen[rel] = (read_key, entry)
            out[rel] = entry
        return out

    def _read(self, dir_fd: int | None, name: str,
              st: os.stat_result) -> tuple[tuple[str, int, str], _Stat | None]:
        if stat.S_ISLNK(st.st_mode):
            try:
                data = os.fsencode(os.readlink(name, dir_fd=dir_fd))
            except OSError:
                return UNKNOWN, None  # no longer a link
            return (self._keep_bytes(data), len(data), "l"), None
        try:
            fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
        except OSError:
            return UNKNOWN, None  # gone, or a link now, or unreadable
        with os.fdopen(fd, "rb", buffering=0) as src:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                return UNKNOWN, None
            try:
                digest, size = self._keep_stream(src, before.st_size)
            except _Unread:
                return UNKNOWN, None
            after = os.fstat(fd)
        if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) \
                or size != after.st_size:
            return UNKNOWN, None  # written while io read it
        kind = "x" if before.st_mode & 0o111 else "f"
        key = (before.st_size, before.st_mtime_ns, before.st_ino, before.st_mode)
        return (digest, size, kind), key

    def _keep_bytes(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        if self.blobs is not None and not self.has_blob(digest):
            self._charge(len(data))
            with _sink():
                _atomic_write(self.blob_path(digest), data)
        return digest

    def _keep_stream(self, src: BinaryIO, limit: int) -> tuple[str, int]:
        """Hash (and keep) what `src` holds: at most `limit` bytes, the size it had when
        opened; a file still growing past it is unread (a read never chases a writer).
        """
        hasher, size = hashlib.sha256(), 0
        tmp = None
        if self.blobs is not None:
            with _sink():
                self.blobs.mkdir(parents=True, exist_ok=True)
                tmp = tempfile.NamedTemporaryFile(dir=self.blobs, prefix=".tmp-", delete=False)  # noqa: SIM115
        try:
            while True:
                try:
                    chunk = src.read(min(_CHUNK, limit + 1 - size))
                except OSError as exc:
                    raise _Unread from exc
                if not chunk:
                    break
                if size + len(chunk) > limit:
                    raise _Unread  # it grew while io read it
                hasher.update(chunk)
                size += len(chunk)
                if tmp is not None:
                    with _sink():
                        tmp.write(chunk)
            digest = hasher.hexdigest()
            if tmp is not None:
                self._commit(tmp, digest, size)
            return digest, size
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    tmp.close()
                with contextlib.suppress(OSError):
                    Path(tmp.name).unlink(missing_ok=True)

    def _commit(self, tmp: IO[bytes], digest: str, size: int) -> None:
        """Name the blob `tmp` holds by its digest (flushed to disk first)."""
        with _sink():
            tmp.flush()
            if self.has_blob(digest):
                return
        self._charge(size)
        with _sink():
            os.fsync(tmp.fileno())
            tmp.close()
            self.blob_path(digest).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp.name, self.blob_path(digest))

    def _charge(self, size: int) -> None:
        if self.budget is not None and self.written + size > self.budget:
            raise CapReached
        self.written += size

    def blob_path(self, digest: str) -> Path:
        assert self.blobs is not None
        return self.blobs / digest[:2] / digest

    def has_blob(self, digest: str) -> bool:
        if self.blobs is None:
            return False
        with _sink():
            try:
                return stat.S_ISREG(os.stat(self.blob_path(digest)).st_mode)
            except (FileNotFoundError, NotADirectoryError):
                return False


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
        with contextlib.suppress(OSError):
            Path(tmp).unlink(missing_ok=True)


def ignore_rules(manifest: Manifest, blobs: Path) -> dict[str, list[str]]:
    """The ignore rules a recorded state holds: its `.gitignore` files, read from their
    blobs. One whose blob is missing gives no rule (io then sees more, never less)."""
    out: dict[str, list[str]] = {}
    for rel, (digest, _size, kind) in manifest.items():
        if rel.rsplit("/", 1)[-1] != ".gitignore" or kind not in ("f", "x"):
            continue
        try:
            with open(blobs / digest[:2] / digest, "rb") as blob:
                text = blob.read(1 << 20).decode("utf-8", errors="replace")
        except OSError:
            continue
        out[rel.removesuffix(".gitignore")] = text.splitlines()
    return out
