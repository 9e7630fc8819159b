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

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""How a walked file is opened: never through a link, never blocking on a FIFO."""


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

    def read(self, rel_dir: str, dir_fd: int) -> None:
        """Keep the `.gitignore` in the open directory `dir_fd` (a live rule set only)."""
        if not self.live:
            return
        try:
            fd = os.open(".gitignore", FILE_FLAGS, dir_fd=dir_fd)
        except OSError:
            return
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return
            text = handle.read(1 << 20).decode("utf-8", errors="replace")
        self.lines[rel_dir] = text.splitlines()


Seen = tuple[str, int, str, os.stat_result | None]
"""One walked entry: its path, its directory's descriptor (valid until the walk goes
on), its name, and its `lstat` (None: a directory io could not enter, `UNKNOWN`)."""


def walk(root: str, rules: Rules, skip: frozenset[str] = frozenset()) -> Iterator[Seen]:
    """Every file and link under `root` the rules do not ignore, sorted per directory.

    Args:
        root: The workspace (itself may be reached through a link: it is the operator's).
        rules: The ignore rules.
        skip: Workspace-relative paths never walked (the store, the placeholders).
    """
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    stack: list[tuple[int, str, _Specs]] = [(top, "", [])]
    try:
        while stack:
            dir_fd, rel_dir, specs = stack.pop()
            try:
                yield from _directory(dir_fd, rel_dir, specs, rules, skip, stack)
            finally:
                os.close(dir_fd)
    finally:  # a walk left before its end
        for dir_fd, _, _ in stack:
            with contextlib.suppress(OSError):
                os.close(dir_fd)


_Specs = list[tuple[str, "pathspec.GitIgnoreSpec"]]


def _directory(dir_fd: int, rel_dir: str, specs: _Specs, rules: Rules, skip: frozenset[str],
               stack: list[tuple[int, str, _Specs]]) -> Iterator[Seen]:
    try:
        with os.scandir(dir_fd) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        return
    if any(entry.name == ".gitignore" for entry in entries):
        rules.read(rel_dir, dir_fd)
    spec = rules.spec(rel_dir)
    if spec is not None:
        specs = [*specs, (rel_dir, spec)]
    subdirs: list[tuple[int, str]] = []
    try:
        for entry in entries:
            rel = f"{rel_dir}{entry.name}"
            if entry.name == ".git" or rel in skip:
                continue
            seen, child = _entry(dir_fd, entry, rel, specs)
            if seen is not None:
                yield seen
            if child is not None:
                subdirs.append((child, rel + "/"))
    except BaseException:
        for child, _ in subdirs:
            with contextlib.suppress(OSError):
                os.close(child)
        raise
    stack.extend((child, rel, specs) for child, rel in reversed(subdirs))


def _entry(dir_fd: int, entry: os.DirEntry[str], rel: str,
           specs: _Specs) -> tuple[Seen | None, int | None]:
    """One entry of a listing: what to yield for it, and its folder's descriptor when it
    is a folder to walk. The listing's file type decides only which way to look: a
    folder is opened with ``O_NOFOLLOW`` (a link there now fails), anything else is
    `lstat`ed relative to the folder's descriptor."""
    name = entry.name
    try:
        is_dir = entry.is_dir(follow_symlinks=False)
        if _ignored(specs, rel + ("/" if is_dir else "")):
            return None, None
        if is_dir:
            return None, os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return (rel, dir_fd, name, None), None  # gone, or swapped for a link, meanwhile
    keep = stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)
    return ((rel, dir_fd, name, st) if keep else None), None


def _ignored(specs: _Specs, rel: str) -> bool:
    return any(spec.match_file(rel[len(base):]) for base, spec in specs)
