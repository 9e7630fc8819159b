"""MCP tools as `Tool`s: their names, their specs, and call results turned into outcomes.

A tool a server lists becomes an `McpTool` named ``mcp__<server>__<tool>``. No built-in
name starts with ``mcp__``, so a server can never shadow `exec` or `write_file`, and the
server's name in the middle keeps two servers' tools apart. What a server sends (its
tool listing, a call's result) arrives as JSON and is parsed here at once into frozen
dataclasses; nothing past this module sees a raw payload or the SDK's own types.

Calling a tool is an act the policy decides (`Act.mcp(server, tool)`, rules
``allow_mcp``/``deny_mcp`` naming ``server/tool``), through the run's gate like every
built-in's act, before anything is sent: a refusal is recorded and comes back to the
model as an observation. This module never starts a process and never imports the
`mcp` SDK.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Mapping
from typing import Any, Protocol

from harness_core._record import record
from harness_core.messages import ToolSpec
from harness_core.policy import Act
from harness_core.tool_data import McpData
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import bounded, refusal_outcome

__all__ = [
    "MAX_TOOL_NAME",
    "TOOL_PREFIX",
    "McpCallResult",
    "McpCaller",
    "McpTool",
    "McpToolInfo",
    "tool_name",
]

TOOL_PREFIX = "mcp__"
"""Every MCP tool's name starts with this; no built-in name does."""

MAX_TOOL_NAME = 64
"""The longest tool name the vendors' APIs accept (OpenAI and Anthropic both cap at 64)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_HASH_LEN = 8


def _sanitised(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


def _digest(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_LEN]


def tool_name(server: str, tool: str, taken: Collection[str] = ()) -> str:
    """The name a model sees for `tool` of `server`: ``mcp__<server>__<tool>``.

    Characters outside ``[A-Za-z0-9_-]`` become ``_``. A name longer than
    `MAX_TOOL_NAME`, or one already in `taken` (two originals that sanitise alike),
    is cut and ends in a short hash of the original pair, so it stays unique and
    stable from run to run.

    Args:
        server: The server's configured name.
        tool: The tool's name as the server lists it.
        taken: Names already given out in this session.

    Returns:
        A name of at most `MAX_TOOL_NAME` characters starting with `TOOL_PREFIX`.
    """
    name = f"{TOOL_PREFIX}{_sanitised(server)}__{_sanitised(tool)}"
    if len(name) <= MAX_TOOL_NAME and name not in taken:
        return name
    suffix = f"_{_digest(server, tool)}"
    return name[: MAX_TOOL_NAME - len(suffix)] + suffix


@record
class McpToolInfo:
    """One entry of a server's tool listing.

    Attributes:
        name: The tool's name on the server (what a call sends).
        description: What the server says it does ("" when it says nothing).
        input_schema: The JSON schema of its arguments (always an object schema).
    """

    name: str
    description: str
    input_schema: dict[str, Any]

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> McpToolInfo | None:
        """Parse one listed tool (wire field names); None when it has no usable name."""
        name = data.get("name")
        if not isinstance(name, str) or not name:
            return None
        description = data.get("description")
        schema = data.get("inputSchema")
        if not isinstance(schema, dict):
            schema = {"type": "object", "properties": {}}
        elif "type" not in schema:
            schema = {"type": "object", **schema}
        return McpToolInfo(name, description if isinstance(description, str) else "", schema)


def _block_text(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) else ""
    if kind in ("image", "audio"):
        data = block.get("data")
        size = len(data) * 3 // 4 if isinstance(data, str) else 0
        return f"[{kind} content: {block.get('mimeType', 'unknown type')}, about {size} bytes]"
    if kind == "resource_link":
        return f"[resource link: {block.get('name', '')} <{block.get('uri', '')}>]"
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict):
            return "[embedded resource]"
        uri = resource.get("uri", "")
        text = resource.get("text")
        if isinstance(text, str):
            return f"[resource {uri}]\n{text}"
        blob = resource.get("blob")
        size = len(blob) * 3 // 4 if isinstance(blob, str) else 0
        return f"[resource {uri}: {resource.get('mimeType', 'binary')}, about {size} bytes]"
    return f"[{kind if isinstance(kind, str) else 'unknown'} content not shown]"


@record
class McpCallResult:
    """What one `tools/call` came back with, or why it did not.

    Attributes:
        text: The content blocks as text: text blocks verbatim, other kinds summarised
            in one bracketed line each; or the failure, when the call failed.
        is_error: The server flagged the result as an error, or the call failed.
        structured: The result's ``structuredContent``, when the server sent one (kept
            in the outcome's `data` only when it fits the output cap).
    """

    text: str
    is_error: bool = False
    structured: dict[str, Any] | None = None

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> McpCallResult:
        """Parse a `CallToolResult` (wire field names)."""
        blocks = data.get("content")
        parts = [_block_text(b) for b in blocks if isinstance(b, dict)] if isinstance(
            blocks, list) else []
        structured = data.get("structuredContent")
        structured = structured if isinstance(structured, dict) else None
        text = "\n".join(parts)
        if not parts and structured is not None:
            text = json.dumps(structured, ensure_ascii=False)
        return McpCallResult(
            text=text if parts or structured is not None else "(no output)",
            is_error=data.get("isError") is True,
            structured=structured,
        )


class McpCaller(Protocol):
    """Calls a tool of a started server (`McpSession` is the one implementation)."""

    def call_tool(
        self, server: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> McpCallResult:
        """Call `tool` on `server`; a failure comes back as an error result, never raised."""
        ...

    def listed_tools(self, server: str) -> tuple[McpToolInfo, ...]:
        """`server`'s current tool listing (refreshed when it says its tools changed)."""
        ...


class McpTool:
    """One tool of a started MCP server, offered to the model under a prefixed name.

    Args:
        server: The server's configured name.
        info: The tool as the server listed it.
        name: The name the model sees (from `tool_name`).
        caller: What sends the call to the server.
    """

    def __init__(self, server: str, info: McpToolInfo, name: str, caller: McpCaller) -> None:
        self.server = server
        self.remote_name = info.name
        self._caller = caller
        self._info = info
        self._spec = self._spec_of(name, info)

    def _spec_of(self, name: str, info: McpToolInfo) -> ToolSpec:
        description = info.description or (
            f"Tool {info.name!r} of the MCP server {self.server!r}.")
        return ToolSpec(name, description, info.input_schema)

    def __repr__(self) -> str:
        return f"McpTool({self._spec.name!r}, server={self.server!r})"

    @property
    def spec(self) -> ToolSpec:
        """The prefixed name, the server's description and its input schema, as the
        server lists the tool now (a tools/list_changed notification refreshes them)."""
        listed = next((info for info in self._caller.listed_tools(self.server)
                       if info.name == self.remote_name), None)
        if listed is not None and listed != self._info:
            self._info, self._spec = listed, self._spec_of(self._spec.name, listed)
        return self._spec

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Check the call with the policy, send it to the server and wait at most
        `ctx.exec_timeout` seconds.

        A refused call is not sent (the refusal is the outcome). The output is bounded to `ctx.output_cap` bytes. A server error, a dead server
        and a timeout are error outcomes. The call may have changed anything the server
        can reach, so the outcome says the workspace may have changed.
        """
        act = Act.mcp(self.server, self.remote_name)
        decision = ctx.gate.check(act)
        if not decision.is_allowed:
            return refusal_outcome(act, decision)
        result = self._caller.call_tool(self.server, self.remote_name, args, ctx.exec_timeout)
        text, cut = bounded(result.text, ctx.output_cap)
        structured = result.structured
        if structured is not None and len(
                json.dumps(structured, ensure_ascii=False)) > ctx.output_cap:
            structured = None
        data = McpData(self.server, self.remote_name, structured, cut or None)
        return ToolOutcome(output=text, is_error=result.is_error, data=data, changed=True)
