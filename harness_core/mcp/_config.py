"""McpServerConfig: one `[[mcp]]` entry, typed. Data only: starting a server is not here.

The environment it carries is resolved (substitutions done) and treated as secret: its
values are hidden from `repr` and never recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["McpServerConfig"]


@dataclass(frozen=True)
class McpServerConfig:
    """How to start one stdio MCP server.

    Attributes:
        name: Unique name; its tools are exposed under it.
        command: The program to start (its start is checked by the policy as an exec).
        args: Its arguments.
        env: Extra environment variables for it, resolved; secret (hidden from `repr`).
        cwd: Its working directory (absolute once loaded), or None for the workspace.
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: {}, repr=False)
    cwd: Path | None = None

    @property
    def argv(self) -> tuple[str, ...]:
        """The command and its arguments."""
        return (self.command, *self.args)
