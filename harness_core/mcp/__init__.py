"""MCP: stdio Model Context Protocol servers, configured, started under the policy, and
exposed as tools.

Importing this package must stay cheap: the `mcp` SDK is imported only when a server
is started (`McpSession.start`), never at import time.
"""

from harness_core.mcp._client import (
    SESSION_MARKER,
    McpFailure,
    McpRefusal,
    McpSession,
    server_environment,
)
from harness_core.mcp._config import McpServerConfig
from harness_core.mcp._tools import (
    MAX_TOOL_NAME,
    TOOL_PREFIX,
    McpCallResult,
    McpTool,
    McpToolInfo,
    tool_name,
)

__all__ = [
    "MAX_TOOL_NAME",
    "SESSION_MARKER",
    "TOOL_PREFIX",
    "McpCallResult",
    "McpFailure",
    "McpRefusal",
    "McpServerConfig",
    "McpSession",
    "McpTool",
    "McpToolInfo",
    "server_environment",
    "tool_name",
]
