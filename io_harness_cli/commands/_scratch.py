"""`--scratch`: run on a temporary copy of the workspace, then show what changed."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from io_harness_cli.output import say

_SKIP = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def make_scratch(workspace: Path) -> Path:
    """Copy `workspace` into a new temporary directory and return the copy."""
    parent = Path(tempfile.mkdtemp(prefix="io-scratch-"))
    target = parent / workspace.name
    shutil.copytree(workspace, target, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return target


def _files(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part in _SKIP for part in rel.parts) or not path.is_file() or path.is_symlink():
            continue
        out[rel.as_posix()] = path
    return out


def _lines(path: Path | None) -> list[str]:
    if path is None:
        return []
    try:
        return path.read_text(encoding="utf-8").splitlines(keepends=True)
    except (UnicodeDecodeError, OSError):
        return ["<binary file>\n"]


def report_scratch(original: Path, copy: Path) -> None:
    """Print the unified diff between the workspace and its copy, and where the copy is."""
    before, after = _files(original), _files(copy)
    chunks: list[str] = []
    for rel in sorted(set(before) | set(after)):
        old, new = _lines(before.get(rel)), _lines(after.get(rel))
        if old != new:
            import difflib  # only when a --scratch run changed a file

            chunks.extend(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}"))
    if chunks:
        say("io: changes made in the scratch copy:")
        say("".join(chunks).rstrip("\n"))
    else:
        say("io: the scratch copy is unchanged")
    say(f"io: scratch copy kept at {copy} (the workspace {original} was not modified)")
