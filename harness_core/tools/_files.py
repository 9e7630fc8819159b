"""File built-ins: read_file, write_file, edit_file, list_dir, find, grep.

Each resolves paths through the workspace and checks the act through the gate before
touching anything; writes are atomic (the workspace writes a temp file and renames).
`list_dir`, `find` and `grep` never show the sandbox's placeholders (the empty
`.gitmodules`, `io.local.toml` or `.git/` that keep a missing protected path
uncreatable while commands run): they are io's, not the project's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness_core.errors import InvalidToolArguments, WorkspaceError
from harness_core.messages import ToolSpec
from harness_core.policy import ActKind
from harness_core.records import Edit
from harness_core.sandbox._placeholders import pending_placeholders
from harness_core.tool_data import DirListing, FileRead, FileWritten, FindData, GrepData
from harness_core.tools._base import ToolContext, ToolOutcome
from harness_core.tools._support import (
    NOT_UTF8_NOTE,
    bounded,
    gated_path,
    opt_int,
    req_str,
    shown_path,
)

__all__ = [
    "MAX_READ_BYTES", "EditFile", "Find", "Grep", "ListDir", "ReadFile", "WriteFile", "measure_edit",
]

_MAX_GREP_MATCHES = 200
MAX_READ_BYTES = 64 * 1024 * 1024
"""Largest file `read_file` loads (64 MiB): a bigger one is an error observation, not a
process that runs out of memory."""


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


_STR = {"type": "string"}
_INT = {"type": "integer"}


def measure_edit(path: str, before: bytes, after: bytes) -> Edit:
    """Lines added and removed, after trimming the common head and tail (a size, not a diff)."""
    old = before.decode("utf-8", errors="replace").splitlines()
    new = after.decode("utf-8", errors="replace").splitlines()
    head = 0
    while head < len(old) and head < len(new) and old[head] == new[head]:
        head += 1
    tail = 0
    while (tail < len(old) - head and tail < len(new) - head
           and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]):
        tail += 1
    return Edit(path, lines_added=len(new) - head - tail, lines_removed=len(old) - head - tail,
                bytes_before=len(before), bytes_after=len(after))


_LONE_SURROGATE = "the text holds a lone surrogate, which no UTF-8 file can hold"


def _failed(text: str) -> ToolOutcome:
    return ToolOutcome(output=text, is_error=True)


class ReadFile:
    """Read a text file of the workspace."""

    spec = ToolSpec(
        "read_file",
        "Read a text file from 1-based line `offset`, at most `limit` lines.",
        _obj({"path": _STR, "offset": _INT, "limit": _INT}, ["path"]),
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        path = req_str(args, "path", "read_file")
        offset = opt_int(args, "offset", "read_file", 1)
        limit = opt_int(args, "limit", "read_file", 0)
        rel, refused = gated_path(ctx, path, ActKind.READ)
        if refused is not None:
            return refused
        try:
            data = ctx.workspace.read_bytes(rel, max_bytes=MAX_READ_BYTES)
            text = data.decode("utf-8", errors="replace")
        except WorkspaceError as exc:
            return _failed(f"read_file: {exc}")
        if offset > 1 or limit > 0:
            lines = text.splitlines(keepends=True)
            start = max(offset - 1, 0)
            end = start + limit if limit > 0 else len(lines)
            text = "".join(lines[start:end])
        shown, cut = bounded(text, ctx.output_cap)
        return ToolOutcome(output=shown, data=FileRead(rel, cut))


class WriteFile:
    """Create or replace a file (atomically)."""

    spec = ToolSpec(
        "write_file",
        "Create or replace a file with `content`.",
        _obj({"path": _STR, "content": _STR}, ["path", "content"]),
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        path = req_str(args, "path", "write_file")
        content = req_str(args, "content", "write_file")
        rel, refused = gated_path(ctx, path, ActKind.WRITE)
        if refused is not None:
            return refused
        try:
            data = content.encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError:
            return _failed(f"write_file: {_LONE_SURROGATE}; nothing was written")
        try:
            before = ctx.workspace.read_bytes(rel) if ctx.workspace.is_file(rel) else b""
            ctx.workspace.write_bytes(rel, data)
        except WorkspaceError as exc:
            return _failed(f"write_file: {exc}")
        edit = measure_edit(rel, before, data)
        return ToolOutcome(
            output=f"wrote {len(data)} bytes to {rel}",
            data=FileWritten(rel, (edit,)),
            changed=True,
        )


class EditFile:
    """Replace exactly one occurrence of `old` with `new`."""

    spec = ToolSpec(
        "edit_file",
        "Replace the one exact occurrence of `old` with `new`; fails on 0 or 2+ matches (add"
        " context).",
        _obj({"path": _STR, "old": _STR, "new": _STR}, ["path", "old", "new"]),
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        path = req_str(args, "path", "edit_file")
        old = req_str(args, "old", "edit_file")
        new = req_str(args, "new", "edit_file")
        if not old:
            raise InvalidToolArguments("edit_file: `old` must not be empty")
        rel, refused = gated_path(ctx, path, ActKind.WRITE)
        if refused is not None:
            return refused
        try:
            before = ctx.workspace.read_bytes(rel)
        except WorkspaceError as exc:
            return _failed(f"edit_file: {exc}")
        text = before.decode("utf-8", errors="surrogateescape")
        count = text.count(old)
        if count == 0:
            return _failed(f"edit_file: `old` was not found in {rel}; nothing changed")
        if count > 1:
            return _failed(
                f"edit_file: `old` occurs {count} times in {rel}; include more context so it"
                " occurs once. Nothing changed"
            )
        try:
            after = text.replace(old, new, 1).encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError:
            return _failed(f"edit_file: {_LONE_SURROGATE}; nothing changed")
        try:
            ctx.workspace.write_bytes(rel, after)
        except WorkspaceError as exc:
            return _failed(f"edit_file: {exc}")
        return ToolOutcome(
            output=f"edited {rel}",
            data=FileWritten(rel, (measure_edit(rel, before, after),)),
            changed=True,
        )


class ListDir:
    """List a directory."""

    spec = ToolSpec(
        "list_dir",
        "List a directory (default: the workspace root).",
        _obj({"path": _STR}, []),
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        path = args.get("path", ".")
        if not isinstance(path, str):
            raise InvalidToolArguments("list_dir: argument 'path' must be a string")
        rel, refused = gated_path(ctx, path, ActKind.READ)
        if refused is not None:
            return refused
        try:
            entries = ctx.workspace.list_dir(rel)
        except WorkspaceError as exc:
            return _failed(f"list_dir: {exc}")
        hidden = _placeholders(ctx)
        lines = [e.name + ("/" if e.is_dir else "") for e in entries
                 if f"{rel}/{e.name}".lstrip("/") not in hidden]
        shown, cut = bounded(_listing(lines, "(empty)"), ctx.output_cap)
        return ToolOutcome(output=shown, data=DirListing(rel, tuple(lines), cut))


def _placeholders(ctx: ToolContext) -> frozenset[str]:
    """The workspace-relative paths of the sandbox's placeholders now (see module doc)."""
    made = pending_placeholders()
    if not made:
        return frozenset()
    root = Path(ctx.workspace.root)
    out: set[str] = set()
    for path in made:
        for base in (root, root.resolve()):
            try:
                out.add(path.relative_to(base).as_posix())
                break
            except ValueError:
                continue
    return frozenset(out)


def _listing(paths: list[str], empty: str) -> str:
    """Paths one a line, names that are not UTF-8 marked (and the marker explained once)."""
    if not paths:
        return empty
    shown = [shown_path(p) for p in paths]
    text = "\n".join(line for line, _ in shown)
    return text + "\n" + NOT_UTF8_NOTE if any(raw for _, raw in shown) else text


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


class Find:
    """Find files by glob."""

    spec = ToolSpec(
        "find",
        "Find files under `path` (default: the root) whose relative path matches glob"
        " `pattern` (`*` in one segment, `**` across; e.g. `**/*.py`).",
        _obj({"pattern": _STR, "path": _STR}, ["pattern"]),
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        pattern = req_str(args, "pattern", "find")
        base = args.get("path", ".")
        if not isinstance(base, str):
            raise InvalidToolArguments("find: argument 'path' must be a string")
        rel, refused = gated_path(ctx, base, ActKind.READ)
        if refused is not None:
            return refused
        regex = _glob_regex(pattern)
        prefix = rel + "/" if rel else ""
        hits: list[str] = []
        hidden = _placeholders(ctx)
        try:
            for found in ctx.workspace.walk_files(rel):
                if found in hidden:
                    continue
                sub = found[len(prefix):] if prefix and found.startswith(prefix) else found
                if regex.match(sub) or regex.match(found):
                    hits.append(found)
        except WorkspaceError as exc:
            return _failed(f"find: {exc}")
        shown, cut = bounded(_listing(hits, "(no matches)"), ctx.output_cap)
        return ToolOutcome(output=shown, data=FindData(tuple(hits), cut))


def _search(
    ctx: ToolContext, files: list[str], regex: re.Pattern[str], path_filter: re.Pattern[str] | None
) -> list[str]:
    matches: list[str] = []
    skipped = 0
    for name in files:
        if path_filter is not None and not path_filter.match(name):
            continue
        _, denied = gated_path(ctx, name, ActKind.READ)
        if denied is not None:
            skipped += 1 if denied.refused is not None else 0
            continue
        try:
            data = ctx.workspace.read_bytes(name, max_bytes=MAX_READ_BYTES)
        except WorkspaceError:
            continue
        if b"\x00" in data[:1024]:
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(line):
                matches.append(f"{shown_path(name)[0]}:{number}:{line}")
                if len(matches) >= _MAX_GREP_MATCHES:
                    break
        if len(matches) >= _MAX_GREP_MATCHES:
            matches.append(f"[stopped at {_MAX_GREP_MATCHES} matches]")
            break
    if skipped:
        matches.append(f"[{skipped} file(s) skipped: the policy refuses reading them]")
    return matches


class Grep:
    """Search file contents by regular expression."""

    spec = ToolSpec(
        "grep",
        "Search files under `path` (only those matching `glob`, if given) for the regular"
        " expression `pattern`. At most 200 matches.",
        _obj({"pattern": _STR, "path": _STR, "glob": _STR}, ["pattern"]),
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        pattern = req_str(args, "pattern", "grep")
        base = args.get("path", ".")
        glob = args.get("glob")
        if not isinstance(base, str) or (glob is not None and not isinstance(glob, str)):
            raise InvalidToolArguments("grep: 'path' and 'glob' must be strings")
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            return _failed(f"grep: invalid regular expression: {exc}")
        rel, refused = gated_path(ctx, base, ActKind.READ)
        if refused is not None:
            return refused
        files = [rel] if rel and ctx.workspace.is_file(rel) else list(ctx.workspace.walk_files(rel))
        hidden = _placeholders(ctx)
        files = [name for name in files if name not in hidden]
        matches = _search(ctx, files, regex, _glob_regex(glob) if glob else None)
        shown, cut = bounded("\n".join(matches) if matches else "(no matches)", ctx.output_cap)
        return ToolOutcome(output=shown, data=GrepData(len(matches), cut))
