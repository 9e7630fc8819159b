"""Steps every document tool shares: arguments, reading the input and writing the output
through the workspace resolver and the run's policy gate, like read_file/write_file."""

from __future__ import annotations

from typing import Any

from harness_core.errors import InvalidToolArguments, WorkspaceError
from harness_core.policy import ActKind
from harness_core.records import Edit
from harness_core.tool_data import FileWritten
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import gated_path

__all__ = ["failed", "opt_str", "read_input", "req_list", "write_output"]


def failed(text: str) -> ToolOutcome:
    return ToolOutcome(output=text, is_error=True)


def opt_str(args: dict[str, Any], key: str, tool: str) -> str | None:
    value = args.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidToolArguments(f"{tool}: argument {key!r} must be a string")
    return value


def req_list(args: dict[str, Any], key: str, tool: str) -> list[Any]:
    value = args.get(key)
    if not isinstance(value, list):
        raise InvalidToolArguments(f"{tool}: argument {key!r} must be an array")
    return value


def read_input(
    ctx: ToolContext, path: str, tool: str
) -> tuple[str, bytes] | ToolOutcome:
    """Resolve `path`, check the read act, read the bytes; or the refusal/failure outcome."""
    rel, refused = gated_path(ctx, path, ActKind.READ)
    if refused is not None:
        return refused
    try:
        return rel, ctx.workspace.read_bytes(rel)
    except WorkspaceError as exc:
        return failed(f"{tool}: {exc}")


def write_output(
    ctx: ToolContext, path: str, data: bytes, tool: str, summary: str,
    extra: dict[str, Any] | None = None,
) -> ToolOutcome:
    """Resolve `path`, check the write act and write `data` atomically."""
    rel, refused = gated_path(ctx, path, ActKind.WRITE)
    if refused is not None:
        return refused
    try:
        before = len(ctx.workspace.read_bytes(rel)) if ctx.workspace.is_file(rel) else 0
        ctx.workspace.write_bytes(rel, data)
    except WorkspaceError as exc:
        return failed(f"{tool}: {exc}")
    # A binary document has no lines: the edit is recorded by size only.
    edit = Edit(rel, lines_added=0, lines_removed=0, bytes_before=before,
                bytes_after=len(data))
    return ToolOutcome(output=f"{summary}; wrote {len(data)} bytes to {rel}",
                       data=FileWritten(rel, (edit,), extra or {}), changed=True)
