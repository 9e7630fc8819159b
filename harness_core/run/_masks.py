"""Expand the policy's read refusals into the paths the sandbox masks.

The sandbox confines and never decides, so the run hands it a function that, before
each command, walks the workspace and asks the policy (`Policy.check(Act.read(...))`,
the same decision the file tools get) about every path a deny-read rule could match.
A refused directory is masked whole (files created in it later stay hidden too); a
refused file is masked, and so is every other name the workspace has for it (a hard
link). Symbolic links are not masked and not followed: what they point at is masked
under its own name.

Only the directories a deny-read pattern can reach are walked: the literal leading
components of each pattern (``secrets/**`` walks ``secrets``; ``**/*.pem`` walks the
whole workspace). The hard-link search walks the whole workspace, and only when a
refused file has more than one link.

What cannot be looked at is masked (fail closed): a directory io cannot list (its
permissions taken away: a command run as its owner could give them back and read what a
rule refuses) is masked whole when a pattern can reach it, or when the hard-link search
needed to look inside it; when a refused directory cannot be listed, so the link counts
of what it holds are unknown, every file of the workspace with more than one link is
masked. A workspace root that cannot be listed stops the command (`SandboxUnavailable`).

This runs before every command, so it is kept cheap: a directory whose inode and mtime
are unchanged since it was listed is not listed again, and what its entries yielded
(refused, or a folder to look into) is reused. A listing is reused only if the mtime was
already more than a second old when it was taken: file times come from a coarse clock,
and two changes within one tick leave the mtime as the first one set it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from harness_core.errors import SandboxUnavailable
from harness_core.policy import Act, ActKind, Effect, Policy, Verdict

__all__ = ["deny_read_patterns", "read_masks"]

_GLOB = frozenset("*?[\\{")


def deny_read_patterns(policy: Policy) -> list[str]:
    """Every deny-read pattern of `policy` and the policies it is contained in."""
    found: list[str] = []
    pending = [policy]
    while pending:
        current = pending.pop()
        found += [
            rule.pattern
            for rule in current.rules
            if rule.effect is Effect.DENY and rule.kind is ActKind.READ
        ]
        pending.extend(current.within)
    return found


def _prefix(pattern: str) -> tuple[str, ...]:
    """The literal leading components of a pattern, lower-cased (matching ignores case)."""
    text = pattern.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    out: list[str] = []
    for part in text.strip("/").split("/"):
        if not part or part == "." or _GLOB.intersection(part):
            break
        out.append(part.lower())
    return tuple(out)


def _reachable(rel: tuple[str, ...], prefixes: list[tuple[str, ...]]) -> bool:
    """Whether some pattern could match `rel` or a path below it."""
    lowered = tuple(part.lower() for part in rel)
    for prefix in prefixes:
        size = min(len(prefix), len(lowered))
        if prefix[:size] == lowered[:size]:
            return True
    return False


def _entries(folder: Path, unlisted: list[Path] | None = None) -> Iterator[os.DirEntry[str]]:
    """The entries of `folder`; one that cannot be listed (gone, or its permissions
    taken away) yields none and, when it still exists, is added to `unlisted`."""
    try:
        with os.scandir(folder) as listing:
            yield from listing
    except FileNotFoundError:
        return
    except OSError:
        if unlisted is not None:
            unlisted.append(folder)
        return


_SETTLED_NS = 1_000_000_000
"""A listing is reused only while its directory's mtime is older than this (1 s) when
listed: file times come from a coarse clock, so two changes within one tick can leave
the mtime as it was; a directory changed that recently is listed again every time."""

_Listing = list[tuple[str, bool, bool]]
"""(name, is a directory, is a symlink) of each entry."""


class _Listings:
    """Directory listings kept by (inode, mtime): unchanged directories are not re-read."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, int, _Listing]] = {}
        self._lock = threading.Lock()

    def entries(self, folder: str) -> _Listing | None:
        """The folder's entries; None when it exists and cannot be listed."""
        try:
            info = os.stat(folder)
        except FileNotFoundError:
            return []
        except OSError:
            return None
        with self._lock:
            cached = self._cache.get(folder)
        if cached is not None and cached[:2] == (info.st_ino, info.st_mtime_ns):
            return cached[2]
        listing: _Listing = []
        unlisted: list[Path] = []
        for entry in _entries(Path(folder), unlisted):
            try:
                link = entry.is_symlink()
                listing.append((entry.name, not link and entry.is_dir(), link))
            except OSError:
                continue
        if unlisted:
            return None
        if time.time_ns() - info.st_mtime_ns > _SETTLED_NS:
            with self._lock:
                self._cache[folder] = (info.st_ino, info.st_mtime_ns, listing)
        return listing


def _refused(
    policy: Policy, root: Path, prefixes: list[tuple[str, ...]], listings: _Listings,
    derived: dict[str, tuple[_Listing, list[Path], list[tuple[str, tuple[str, ...]]]]],
) -> list[Path]:
    out: list[Path] = []
    stack: list[tuple[str, tuple[str, ...]]] = [(str(root), ())]
    while stack:
        folder, rel = stack.pop()
        listing = listings.entries(folder)
        if listing is None:  # what it holds cannot be judged: masked whole
            if not rel:
                raise SandboxUnavailable(
                    f"cannot list the workspace {root} to apply the deny-read rules")
            out.append(Path(folder))
            continue
        known = derived.get(folder)
        if known is None or known[0] is not listing:  # the object itself: ids are reused
            known = (listing, *_judge(policy, folder, rel, listing, prefixes))
            derived[folder] = known
        out += known[1]
        stack += known[2]
    return out


def _judge(
    policy: Policy, folder: str, rel: tuple[str, ...], listing: _Listing,
    prefixes: list[tuple[str, ...]],
) -> tuple[list[Path], list[tuple[str, tuple[str, ...]]]]:
    """One folder's entries: those refused, and the folders to look into."""
    refused: list[Path] = []
    below: list[tuple[str, tuple[str, ...]]] = []
    for name, is_dir, is_link in listing:
        parts = (*rel, name)
        if is_link or not _reachable(parts, prefixes):
            continue
        path = os.path.join(folder, name)
        if policy.check(Act.read("/".join(parts))).verdict is not Verdict.ALLOW:
            refused.append(Path(path))
        elif is_dir:
            below.append((path, parts))
    return refused, below


def _walk(root: Path, unlisted: list[Path] | None = None
          ) -> Iterator[tuple[Path, os.stat_result]]:
    """Every non-directory under `root` (symlinks not followed), with its lstat; the
    directories that could not be listed go to `unlisted`."""
    stack = [root]
    while stack:
        for entry in _entries(stack.pop(), unlisted):
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                    continue
                yield Path(entry.path), entry.stat(follow_symlinks=False)
            except OSError:
                continue


def _linked(refused: Iterable[Path]) -> tuple[set[tuple[int, int]], bool]:
    """(device, inode) of refused files, or files in refused directories, with >1 link;
    and whether a refused directory could not be listed (its files' links unknown)."""
    wanted: set[tuple[int, int]] = set()
    unlisted: list[Path] = []
    for path in refused:
        try:
            info = path.lstat()
        except OSError:
            continue
        found = _walk(path, unlisted) if path.is_dir() else [(path, info)]
        wanted.update((i.st_dev, i.st_ino) for _, i in found if i.st_nlink > 1)
    return wanted, bool(unlisted)


def _other_links(root: Path, refused: Iterable[Path]) -> list[Path]:
    """Other names inside `root` of refused files that have more than one link; when
    that cannot be known, every file with more than one link, and every directory the
    search could not list (what it holds is not looked at)."""
    refused = list(refused)
    wanted, unknown = _linked(refused)
    if not wanted and not unknown:
        return []
    covered = tuple(refused)
    unlisted: list[Path] = []
    found = [
        path
        for path, info in _walk(root, unlisted)
        if ((info.st_dev, info.st_ino) in wanted or (unknown and info.st_nlink > 1))
        and not any(path == c or path.is_relative_to(c) for c in covered)
    ]
    return found + [p for p in unlisted
                    if not any(p == c or p.is_relative_to(c) for c in covered)]


def read_masks(root: Path, policy: Policy) -> Callable[[], list[Path]] | None:
    """The function the sandbox calls at each start, or None when nothing is refused.

    Args:
        root: The workspace root.
        policy: The run's policy.

    Returns:
        A function listing the host paths to mask now (absolute, existing).
    """
    prefixes = [_prefix(p) for p in deny_read_patterns(policy)]
    if not prefixes:
        return None
    real = root.resolve()

    listings = _Listings()
    # Per folder, what its (unchanged) listing yields: the policy is fixed for the run.
    derived: dict[str, tuple[_Listing, list[Path], list[tuple[str, tuple[str, ...]]]]] = {}

    def masks() -> list[Path]:
        refused = _refused(policy, real, prefixes, listings, derived)
        return sorted(set(refused) | set(_other_links(real, refused)))

    return masks
