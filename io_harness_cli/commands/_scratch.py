"""`--scratch`: run on a temporary copy of the workspace, then show what changed.

The run records the workspace it copied (`run_overrides["scratch_of"]`): `io resume`
shows the diff at its end as the uninterrupted run would have, and `io resume` and
`io rewind` refuse a `-w` naming that workspace, which the copy is there to protect
(`-w` may name a new place for a workspace that moved, here the copy).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from io_harness_cli.output import say

SCRATCH_OF = "scratch_of"
"""The key of `run_overrides` that names the workspace a `--scratch` run copied."""

_SKIP = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def make_scratch(workspace: Path) -> Path:
    """Copy `workspace` into a new temporary directory and return the copy."""
    parent = Path(tempfile.mkdtemp(prefix="io-scratch-"))
    target = parent / workspace.name
    shutil.copytree(workspace, target, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return target


def scratch_origin(settings: Mapping[str, Any]) -> Path | None:
    """The workspace a `--scratch` run (its recorded `settings`) copied, or None."""
    overrides = settings.get("run_overrides")
    origin = overrides.get(SCRATCH_OF) if isinstance(overrides, Mapping) else None
    return Path(origin) if isinstance(origin, str) else None


def refuse_origin(settings: Mapping[str, Any], workspace: Path, run_id: str) -> None:
    """Refuse to act for a `--scratch` run in the workspace its copy was made to protect.

    Raises:
        UsageError: `workspace` is the one the run's scratch copy was made of.
    """
    from harness_core import UsageError

    origin = scratch_origin(settings)
    if origin is not None and workspace.resolve() == origin.resolve():
        raise UsageError(
            f"run {run_id} ran on a scratch copy of {str(origin)!r}; it does not act in"
            f" {str(origin)!r} itself", hint="give -w the scratch copy (or where it was"
            " moved); a copy that is gone cannot be resumed: start a new run")


def _files(root: Path) -> dict[str, Path]:
    """Every file and symlink under `root` but the skipped directories', by relative path."""
    out: dict[str, Path] = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part in _SKIP for part in rel.parts):
            continue
        if path.is_symlink() or path.is_file():
            out[rel.as_posix()] = path
    return out


_Entry = tuple[str, bytes]
"""A file as the diff compares it: its kind (`f` file, `x` executable, `l` symlink) and
its bytes (a symlink's: its target)."""

_KINDS = {"f": "file", "x": "executable file", "l": "symlink"}


def _entry(path: Path | None) -> _Entry | None:
    if path is None:
        return None
    try:
        if path.is_symlink():
            return "l", os.fsencode(os.readlink(path))
        return ("x" if path.stat().st_mode & 0o111 else "f"), path.read_bytes()
    except OSError:
        return "f", b"<unreadable>"


def _text(entry: _Entry | None) -> list[str] | None:
    """The lines of a file's text; [] when absent; None for binary data or a symlink."""
    if entry is None:
        return []
    if entry[0] == "l" or b"\0" in entry[1]:  # a NUL byte: binary, as git reads it
        return None
    try:
        return entry[1].decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _shown(entry: _Entry | None) -> str:
    if entry is None:
        return "nothing"
    kind, data = entry
    return f"a symlink to {os.fsdecode(data)}" if kind == "l" else f"{len(data)} bytes"


def _change(rel: str, old: _Entry | None, new: _Entry | None) -> list[str]:
    """What changed at `rel`: a header when a file came, went or changed kind, then the
    text's unified diff, or a line saying how binary data or a symlink differ."""
    a, b = f"a/{rel}", f"b/{rel}"
    out: list[str] = []
    if old is None or new is None:
        kind, data = new or old or ("f", b"")
        head = f"new {_KINDS[kind]} {b}" if old is None else f"deleted {_KINDS[kind]} {a}"
        if kind == "l":
            return [f"{head} -> {os.fsdecode(data)}\n"]
        if not data:
            return [f"{head} (empty)\n"]
        out.append(f"{head}\n")
    elif old[0] != new[0]:
        out.append(f"{rel}: {_KINDS[old[0]]} became {_KINDS[new[0]]}\n")
    if (old or ("f", b""))[1] == (new or ("f", b""))[1]:
        return out
    before, after = _text(old), _text(new)
    if before is None or after is None:
        binary = all(e is None or e[0] != "l" for e in (old, new))
        out.append(f"Binary files {a} and {b} differ\n" if binary
                   else f"{rel}: {_shown(old)} became {_shown(new)}\n")
        return out
    import difflib  # only when a --scratch run changed a text file

    return out + list(difflib.unified_diff(before, after, a, b))


def end_scratch(original: Path, copy: Path, status: str | None, run_id: str | None) -> None:
    """What becomes of a `--scratch` copy when `io run` or `io resume` ends: no run was
    made (a usage error), it is removed unseen; the run ended for good (finished,
    failed), the diff is printed and the copy removed; the run can go on (paused,
    stopped, interrupted, errored), the diff is printed and the copy kept for the resume.
    """
    if run_id is None or status in (None, "error", "busy"):
        if run_id is None:
            _remove(copy)
        return
    report_scratch(original, copy, keep=status not in ("finished", "failed"))


def _remove(copy: Path) -> bool:
    """Remove the copy with the temporary directory `make_scratch` made for it; a copy
    elsewhere (moved, and named with `io resume -w`) is the operator's and stays."""
    parent = copy.parent
    made_here = parent.parent.resolve() == Path(tempfile.gettempdir()).resolve()
    if not parent.name.startswith("io-scratch-") or not made_here:
        return False
    shutil.rmtree(parent, ignore_errors=True)
    return True


def report_scratch(original: Path, copy: Path, *, keep: bool = True) -> None:
    """Print the unified diff between the workspace and its copy, then where the copy is
    (`keep`) or that it was removed."""
    before, after = _files(original), _files(copy)
    chunks: list[str] = []
    for rel in sorted(set(before) | set(after)):
        old, new = _entry(before.get(rel)), _entry(after.get(rel))
        if old != new:
            chunks.extend(_change(rel, old, new))
    if chunks:
        say("io: changes made in the scratch copy:")
        say("".join(chunks).rstrip("\n"))
    else:
        say("io: the scratch copy is unchanged")
    if keep:
        say(f"io: scratch copy kept at {copy} until the run ends (the workspace {original}"
            " was not modified)")
    elif _remove(copy):
        say(f"io: scratch copy removed: the run has ended (the workspace {original} was not"
            " modified)")
    else:
        say(f"io: scratch copy kept at {copy}: io did not make that directory (the workspace"
            f" {original} was not modified)")
