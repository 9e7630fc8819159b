"""MCP: stdio Model Context Protocol servers, configured and exposed as tools.

Importing this package must stay cheap: the `mcp` SDK is imported only when a server
is started, never at import time.
"""

from harness_core.mcp._config import McpServerConfig

__all__ = ["McpServerConfig"]
