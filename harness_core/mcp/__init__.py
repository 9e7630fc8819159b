"""MCP: Model Context Protocol servers, local (stdio) and remote (streamable HTTP, with
OAuth), configured, connected under the policy, and exposed as tools.

Importing this package must stay cheap (config loading imports `McpServerConfig`): the
client modules load on first use of their names, and the `mcp` SDK only when a server
is started (`McpSession.start`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from harness_core.tool_servers import McpElicitation, McpGrant, McpOAuth, McpServerConfig

_LAZY = {
    "SESSION_MARKER": "harness_core.mcp._client",
    "McpFailure": "harness_core.mcp._client",
    "McpRefusal": "harness_core.mcp._client",
    "McpSession": "harness_core.mcp._client",
    "server_environment": "harness_core.mcp._client",
    "MAX_TOOL_NAME": "harness_core.mcp._tools",
    "TOOL_PREFIX": "harness_core.mcp._tools",
    "McpCallResult": "harness_core.mcp._tools",
    "McpTool": "harness_core.mcp._tools",
    "McpToolInfo": "harness_core.mcp._tools",
    "tool_name": "harness_core.mcp._tools",
}

__all__ = [
    "MAX_TOOL_NAME",
    "SESSION_MARKER",
    "TOOL_PREFIX",
    "McpCallResult",
    "McpElicitation",
    "McpFailure",
    "McpGrant",
    "McpOAuth",
    "McpRefusal",
    "McpServerConfig",
    "McpSession",
    "McpTool",
    "McpToolInfo",
    "server_environment",
    "tool_name",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness_core.mcp' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:
    from harness_core.mcp._client import (
        SESSION_MARKER,
        McpFailure,
        McpRefusal,
        McpSession,
        server_environment,
    )
    from harness_core.mcp._tools import (
        MAX_TOOL_NAME,
        TOOL_PREFIX,
        McpCallResult,
        McpTool,
        McpToolInfo,
        tool_name,
    )
