"""A walk of a workspace that never follows a link, for the snapshots of `io rewind`.

Every directory is opened relative to its parent's descriptor with ``O_NOFOLLOW``, and
every file relative to its directory's, so a directory swapped for a link to `/` while
the walk runs is not entered: the entry is reported as unknown (`UNKNOWN`) and the next
scan sees the link. Which files are ignored comes from `Rules`: either read from the
`.gitignore` files met on the way (the first scan of a run, taken before the agent
acted) or fixed from an earlier scan, so a `.gitignore` the run writes later never hides
a file from io. ``.git`` is never walked. Nothing here writes anything.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

__all__ = ["DENIED", "UNKNOWN", "Rules", "Seen", "walk"]

UNKNOWN: tuple[str, int, str] = ("", -1, "u")
"""The manifest entry of a path io could not read whole: it changed, vanished or turned
into something else while it was read (kind ``u``)."""

DENIED: tuple[str, int, str] = ("", 0, "d")
"""The manifest entry of a path the policy refuses to read (kind ``d``): named, never
read, never kept, never restored; for a folder, everything in it."""

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_NOFOLLOW | _O_CLOEXEC
FILE_FLAGS = (os.O_RDONLY | _O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _O_CLOEXEC
              | getattr(os, "O_BINARY", 0))
"""How a walked file is opened: never through a link, never blocking on a FIFO."""

FD_WALK = {os.open, os.stat, os.readlink} <= os.supports_dir_fd and os.scandir in os.supports_fd
"""Whether folders are walked by descriptor (POSIX). Without (Windows) they are walked
by path, deciding by the listing's file type, and a folder swapped for a link between
the listing and the look inside can be entered."""

_Dir = int | str
"""A folder being walked: its descriptor, or (without `FD_WALK`) its path."""


class Rules:
    """Ignore rules: a directory (``""`` or ``"sub/"``) → the lines of its `.gitignore`.

    Args:
        lines: The rules; None reads each `.gitignore` met during the walk and keeps it
            in `lines` (the first scan of a run).
    """

    def __init__(self, lines: dict[str, list[str]] | None = None) -> None:
        self.live = lines is None
        self.lines: dict[str, list[str]] = {} if lines is None else dict(lines)
        self._specs: dict[str, pathspec.GitIgnoreSpec] = {}

    def __eq__(self, other: object) -> bool:
        """Two rule sets are equal when they hold the same lines and both read on, or not."""
        return isinstance(other, Rules) and (self.live, self.lines) == (other.live, other.lines)

    __hash__ = None  # type: ignore[assignment]  # mutable: compared, never hashed

    def fix(self) -> None:
        """From now on, what was read is the rule set (no `.gitignore` is read again)."""
        self.live = False

    def spec(self, rel_dir: str) -> pathspec.GitIgnoreSpec | None:
        lines = self.lines.get(rel_dir)
        if not lines:
            return None
        if rel_dir not in self._specs:
            import pathspec  # only for a workspace with a .gitignore (~15 ms to load)

            self._specs[rel_dir] = pathspec.GitIgnoreSpec.from_lines(lines)
        return self._specs[rel_dir]

    def read(self, rel_dir: str, folder: _Dir) -> None:
        """Keep the `.gitignore` in `folder` (a live rule set only)."""
        if not self.live:
            return
        try:
            fd = _open(folder, ".gitignore", FILE_FLAGS)
        except OSError:
            return
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return
            text = handle.read(1 << 20).decode("utf-8", errors="replace")
        self.lines[rel_dir] = text.splitlines()


Seen = tuple[str, int | None, str, os.stat_result | None]
"""One walked entry: its path, its directory's descriptor (valid until the walk goes
on; None without `FD_WALK`, and the name is then the full path), its name, and its
`lstat` (None: a directory io could not enter, `UNKNOWN`)."""


def _open(folder: _Dir, name: str, flags: int) -> int:
    if isinstance(folder, int):
        return os.open(name, flags, dir_fd=folder)
    return os.open(os.path.join(folder, name), flags)


def _close(folder: _Dir) -> None:
    if isinstance(folder, int):
        with contextlib.suppress(OSError):
            os.close(folder)


def walk(root: str, rules: Rules, skip: frozenset[str] = frozenset()) -> Iterator[Seen]:
    """Every file and link under `root` the rules do not ignore, sorted per directory.

    Args:
        root: The workspace (itself may be reached through a link: it is the operator's).
        rules: The ignore rules.
        skip: Workspace-relative paths never walked (the store, the placeholders).
    """
    top: _Dir = root
    if FD_WALK:
        try:
            top = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_CLOEXEC)
        except OSError:
            return
    stack: list[tuple[_Dir, str, _Specs]] = [(top, "", [])]
    try:
        while stack:
            folder, rel_dir, specs = stack.pop()
            try:
                yield from _directory(folder, rel_dir, specs, rules, skip, stack)
            finally:
                _close(folder)
    finally:  # a walk left before its end
        for folder, _, _ in stack:
            _close(folder)


_Specs = list[tuple[str, "pathspec.GitIgnoreSpec"]]


def _directory(folder: _Dir, rel_dir: str, specs: _Specs, rules: Rules,
               skip: frozenset[str], stack: list[tuple[_Dir, str, _Specs]]) -> Iterator[Seen]:
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        return
    if any(entry.name == ".gitignore" for entry in entries):
        rules.read(rel_dir, folder)
    spec = rules.spec(rel_dir)
    if spec is not None:
        specs = [*specs, (rel_dir, spec)]
    subdirs: list[tuple[_Dir, str]] = []
    try:
        for entry in entries:
            rel = f"{rel_dir}{entry.name}"
            if entry.name == ".git" or rel in skip:
                continue
            seen, child = _entry(folder, entry, rel, specs)
            if seen is not None:
                yield seen
            if child is not None:
                subdirs.append((child, rel + "/"))
    except BaseException:
        for child, _ in subdirs:
            _close(child)
        raise
    stack.extend((child, rel, specs) for child, rel in reversed(subdirs))


def _entry(folder: _Dir, entry: os.DirEntry[str], rel: str,
           specs: _Specs) -> tuple[Seen | None, _Dir | None]:
    """One entry of a listing: what to yield for it, and its folder's descriptor when it
    is a folder to walk. The listing's file type decides only which way to look: a
    folder is opened with ``O_NOFOLLOW`` (a link there now fails), anything else is
    `lstat`ed relative to the folder's descriptor."""
    dir_fd, name = (folder, entry.name) if isinstance(folder, int) else (None, entry.path)
    try:
        is_dir = entry.is_dir(follow_symlinks=False)
        if _ignored(specs, rel + ("/" if is_dir else "")):
            return None, None
        if is_dir:
            return None, _open(folder, name, _DIR_FLAGS) if dir_fd is not None else name
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return (rel, dir_fd, name, None), None  # gone, or swapped for a link, meanwhile
    keep = stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)
    return ((rel, dir_fd, name, st) if keep else None), None


def _ignored(specs: _Specs, rel: str) -> bool:
    return any(spec.match_file(rel[len(base):]) for base, spec in specs)
