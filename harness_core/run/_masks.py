"""Expand the policy's read refusals into the paths the sandbox masks.

The sandbox confines and never decides, so the run hands it a function that, at each
sandbox start, walks the workspace and asks the policy (`Policy.check(Act.read(...))`,
the same decision the file tools get) about every path a deny-read rule could match.
A refused directory is masked whole (files created in it later stay hidden too); a
refused file is masked, and so is every other name the workspace has for it (a hard
link). Symbolic links are not masked and not followed: what they point at is masked
under its own name.

Only the directories a deny-read pattern can reach are walked: the literal leading
components of each pattern (``secrets/**`` walks ``secrets``; ``**/*.pem`` walks the
whole workspace). The hard-link search walks the whole workspace, and only when a
refused file has more than one link.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

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


def _entries(folder: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as listing:
            yield from listing
    except OSError:
        return


def _refused(policy: Policy, root: Path, prefixes: list[tuple[str, ...]]) -> list[Path]:
    out: list[Path] = []
    stack: list[tuple[Path, tuple[str, ...]]] = [(root, ())]
    while stack:
        folder, rel = stack.pop()
        for entry in _entries(folder):
            parts = (*rel, entry.name)
            if not _reachable(parts, prefixes) or entry.is_symlink():
                continue
            decision = policy.check(Act.read("/".join(parts)))
            if decision.verdict is not Verdict.ALLOW:
                out.append(Path(entry.path))
            elif entry.is_dir(follow_symlinks=False):
                stack.append((Path(entry.path), parts))
    return out


def _walk(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """Every non-directory under `root` (symlinks not followed), with its lstat."""
    stack = [root]
    while stack:
        for entry in _entries(stack.pop()):
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                    continue
                yield Path(entry.path), entry.stat(follow_symlinks=False)
            except OSError:
                continue


def _linked(refused: Iterable[Path]) -> set[tuple[int, int]]:
    """(device, inode) of refused files, or files in refused directories, with >1 link."""
    wanted: set[tuple[int, int]] = set()
    for path in refused:
        try:
            info = path.lstat()
        except OSError:
            continue
        found = _walk(path) if path.is_dir() else [(path, info)]
        wanted.update((i.st_dev, i.st_ino) for _, i in found if i.st_nlink > 1)
    return wanted


def _other_links(root: Path, refused: Iterable[Path]) -> list[Path]:
    """Other names inside `root` of refused files that have more than one link."""
    refused = list(refused)
    wanted = _linked(refused)
    if not wanted:
        return []
    covered = tuple(refused)
    return [
        path
        for path, info in _walk(root)
        if (info.st_dev, info.st_ino) in wanted
        and not any(path == c or path.is_relative_to(c) for c in covered)
    ]


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

    def masks() -> list[Path]:
        refused = _refused(policy, real, prefixes)
        return sorted(set(refused) | set(_other_links(real, refused)))

    return masks
