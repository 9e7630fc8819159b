"""Projection of the `[[mcp]]` tables onto `McpServerConfig`s, and where OAuth tokens live.

Checked here, after the scopes merged: each server has a name no other has, exactly
one of `command` and `url`, and `oauth` only with a `url`. A remote server's OAuth
tokens are kept in io's state directory (next to the store), never in the workspace: a
directory io refuses to place inside the workspace root. No I/O happens here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness_core.errors import ConfigError
from harness_core.tool_servers import McpElicitation, McpGrant, McpOAuth, McpServerConfig

if TYPE_CHECKING:  # the plain twins or the pydantic models: the same attributes
    from harness_core.config._model import McpOAuthTable, McpTable

__all__ = ["AUTH_DIR_NAME", "mcp_auth_dir", "mcp_servers"]

AUTH_DIR_NAME = "mcp-auth"
"""The folder, beside the store, that holds remote MCP servers' OAuth tokens."""

Where = Callable[[tuple[str | int, ...]], str]
"""A table's path → `` (set in FILE)`` or ""."""


def mcp_auth_dir(workspace: Path, store: Path, fallback: Path | None) -> Path:
    """The folder for OAuth tokens: beside the store, or `fallback` when the store lies
    in the workspace.

    Raises:
        ConfigError: Neither place is outside the workspace root.
    """
    root = workspace.resolve()
    for candidate in (store.parent, fallback.parent if fallback is not None else None):
        if candidate is not None and not candidate.resolve().is_relative_to(root):
            return candidate / AUTH_DIR_NAME
    raise ConfigError(
        "cannot keep remote MCP servers' OAuth tokens outside the workspace: the store"
        " lies inside it and no XDG_STATE_HOME or HOME names another place",
        hint="set XDG_STATE_HOME, or [store] path outside the workspace",
    )


def _oauth(table: McpOAuthTable | None, path: tuple[str | int, ...], where: Where
           ) -> McpOAuth | None:
    if table is None:
        return None
    try:
        return McpOAuth(
            grant=McpGrant(table.grant),
            client_id=table.client_id,
            client_secret=table.client_secret,
            private_key=table.private_key,
            signing_algorithm=table.signing_algorithm,
            scopes=tuple(table.scopes),
            client_metadata_url=table.client_metadata_url,
            issuer=table.issuer,
            redirect_port=table.redirect_port,
            authorize_timeout=table.authorize_timeout_seconds,
        )
    except ConfigError as exc:
        raise ConfigError(f"'mcp[{path[1]}].oauth': {exc.message}{where(path)}",
                          hint=exc.hint) from None


def _server(item: McpTable, path: tuple[str | int, ...], name: str, where: Where,
            auth_dir: Callable[[], Path]) -> McpServerConfig:
    if item.url is not None and (item.command is not None or item.args or item.env
                                 or item.cwd is not None):
        raise ConfigError(f"[[mcp]] server {name!r} has url and a local server's keys"
                          f" (command, args, env, cwd){where(path)}",
                          hint="a server is either local (command) or remote (url)")
    if item.url is None and (item.headers or item.oauth is not None):
        raise ConfigError(f"[[mcp]] server {name!r} has headers or oauth but no url"
                          f"{where(path)}", hint="headers and oauth are for a remote server")
    if item.url is None and item.command is None:
        raise ConfigError(f"missing key 'mcp[{path[1]}].command' (or url, for a remote"
                          f" server){where(path)}")
    try:
        return McpServerConfig(
            name=name,
            command=item.command or "",
            args=tuple(item.args),
            env=dict(item.env),
            cwd=item.cwd,
            url=item.url,
            headers=dict(item.headers),
            optional=item.optional,
            oauth=_oauth(item.oauth, path, where),
            auth_dir=auth_dir() if item.url is not None else None,
            elicitation=McpElicitation(item.elicitation),
        )
    except ConfigError as exc:
        if exc.message.startswith("'mcp["):
            raise
        raise ConfigError(f"'mcp[{path[1]}]': {exc.message}{where(path)}",
                          hint=exc.hint) from None


def mcp_servers(items: Sequence[McpTable], where: Where,
                required: Callable[[str | None, tuple[str | int, ...], str], str],
                auth_dir: Callable[[], Path]) -> tuple[McpServerConfig, ...]:
    """The `[[mcp]]` servers, in file order.

    Args:
        items: The merged tables.
        where: Names the file that set a table, for messages.
        required: Returns a required key's value or raises naming it.
        auth_dir: The token folder (called only when a remote server is configured).

    Raises:
        ConfigError: A name missing or taken twice, both or neither of command and url,
            a local key on a remote server (or the reverse), or a malformed url.
    """
    servers: list[McpServerConfig] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        path: tuple[str | int, ...] = ("mcp", index)
        name = required(item.name, path, "name")
        if name in seen:
            raise ConfigError(f"two [[mcp]] servers are named {name!r}{where(path)}")
        seen.add(name)
        servers.append(_server(item, path, name, where, auth_dir))
    return tuple(servers)

