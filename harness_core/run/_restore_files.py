"""Putting recorded files back into a workspace, for `io rewind` and `io undo`.

`restore_files` checks everything before its first change: a missing blob, a state io
could not read, or something io never recorded standing where a file goes (a folder
holding files io never saw, a file where a folder must be) refuses, naming them, and
no file is changed; a restore never deletes what io did not record (only empty folders
go). Each file is copied beside its place and renamed over it, so a kill leaves the old
file or the new one and at worst the copy, which `clear_leftovers` removes when the
command runs again. Nothing here writes to the terminal.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from harness_core.errors import UsageError
from harness_core.run._scan import UNKNOWN
from harness_core.store._snapshots import Manifest

__all__ = ["clear_leftovers", "restore_files"]


def restore_files(workspace: Path, blobs: Path, current: Manifest, target: Manifest,
             paths: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Make each of `paths` in the workspace what `target` says (absent: removed).

    Every check comes before the first change: a missing blob, a state io could not
    read, or something io never recorded standing where a file goes (a folder holding
    files io never saw, a file where a folder must be) refuses, naming them, and no
    file is changed.
    """
    root = workspace.resolve()
    removed = sorted(p for p in paths if p in current and p not in target)
    written = sorted(p for p in paths if p in target and current.get(p) != target[p])
    unread = [p for p in written if target[p] == UNKNOWN]
    if unread:
        raise UsageError(f"io could not read {', '.join(unread[:20])} when it recorded that"
                         " state (it changed while read), so it cannot restore it; no file"
                         " was changed")
    for rel in written:
        digest = target[rel][0]
        blob = blobs / digest[:2] / digest
        if not blob.is_file():
            raise UsageError(f"the snapshot blob of {rel} is missing ({blob}); no file"
                             " was changed", hint="the snapshot directory was changed"
                             " outside io")
    _refuse_obstacles(root, written, set(removed))
    for rel in removed:
        _remove(root, rel)
    for rel in written:
        digest, _size, kind = target[rel]
        _write(root, rel, blobs / digest[:2] / digest, kind)
    return tuple(written), tuple(removed)


def _refuse_obstacles(root: Path, written: list[str], removed: set[str]) -> None:
    """Refuse when what stands where a restored file goes is not io's to remove: a file
    or link where a folder must be, or a folder holding anything but files this restore
    removes (empty folders go). Names each thing in the way.

    Raises:
        UsageError: Something io never recorded is in the way.
    """
    blocking: list[str] = []
    for rel in written:
        parts = rel.split("/")
        for i in range(1, len(parts)):
            above = "/".join(parts[:i])
            info = _lstat(root / above)
            if info is not None and not stat.S_ISDIR(info.st_mode) and above not in removed:
                blocking.append(above)
        info = _lstat(root / rel)
        if info is not None and stat.S_ISDIR(info.st_mode):
            blocking += [p for p in _everything_under(root, rel) if p not in removed]
    if blocking:
        shown = sorted(set(blocking))
        raise UsageError(
            f"cannot restore: {', '.join(shown[:20])}"
            f"{f' (and {len(shown) - 20} more)' if len(shown) > 20 else ''} stand(s) where"
            " a restored file goes, and io never recorded them (ignored, or made outside"
            " io); no file was changed",
            hint="move them out of the way, then run the command again")


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _everything_under(root: Path, rel: str) -> list[str]:
    """Every entry but a folder under the folder `rel`, links not followed (``.git`` and
    ignored files included: this is what a removal would delete)."""
    found: list[str] = []
    stack = [rel]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(root / current) as listing:
                entries = list(listing)
        except OSError:
            found.append(current + "/")  # cannot be listed: not known to be empty
            continue
        for entry in entries:
            path = f"{current}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                stack.append(path)
            else:
                found.append(path)
    return found


def _safe(root: Path, rel: str) -> Path:
    target = root / rel
    if ".." in Path(rel).parts or not target.parent.resolve().is_relative_to(root):
        raise UsageError(f"cannot restore {rel}: its directory leads outside the workspace")
    return target


def _remove(root: Path, rel: str) -> None:
    target = _safe(root, rel)
    info = _lstat(target)
    if info is not None and not stat.S_ISDIR(info.st_mode):
        target.unlink()
    parent = target.parent
    while parent != root and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


_RESTORING = ".io-restore"
"""The suffix of the copy a restore writes beside a file before renaming it into place."""


def _temp_of(target: Path) -> Path:
    return target.with_name(f".{target.name}{_RESTORING}")


def _prune(path: Path) -> None:
    """Remove the folder `path` made of empty folders only (`_refuse_obstacles` checked
    it; `rmdir` refuses one that gained an entry since, so nothing else is deleted)."""
    with os.scandir(path) as listing:
        subdirs = [Path(e.path) for e in listing if e.is_dir(follow_symlinks=False)]
    for sub in subdirs:
        _prune(sub)
    path.rmdir()


def _write(root: Path, rel: str, blob: Path, kind: str) -> None:
    """Put `blob` at `rel`: copied beside it, then renamed over it, so a kill leaves the
    old file or the new one, and at worst the copy beside it (`clear_leftovers`)."""
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target = _safe(root, rel)
    if target.is_dir() and not target.is_symlink():
        _prune(target)
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


def clear_leftovers(workspace: Path, blobs: Path, target: Manifest) -> None:
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
