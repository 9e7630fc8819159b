"""The `[[mcp]]` records, defined in `harness_core.tool_servers` (config loading needs them
without this package) and named here too."""

from __future__ import annotations

from harness_core.tool_servers import McpElicitation, McpGrant, McpOAuth, McpServerConfig

__all__ = ["McpElicitation", "McpGrant", "McpOAuth", "McpServerConfig"]
