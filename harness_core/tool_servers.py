"""The tool servers a run may use: `McpServerConfig`, one `[[mcp]]` entry, typed.

Data only: starting a server is `harness_core.mcp`'s, which re-exports these names and
loads only for a run that has a server.

A server is either local (`command`, spoken to over stdio) or remote (`url`, spoken to
over streamable HTTP). What it carries that may be a credential (the environment of a
local server, the headers of a remote one, an OAuth client secret) is resolved
(substitutions done), hidden from `repr` and never recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from enum import Enum
from pathlib import Path
from urllib.parse import urlsplit

from harness_core._record import record
from harness_core.errors import ConfigError

__all__ = ["McpElicitation", "McpGrant", "McpOAuth", "McpServerConfig"]


class McpGrant(Enum):
    """How io obtains an OAuth access token for a remote server that asks for one."""

    AUTHORIZATION_CODE = "authorization_code"
    """A person authorizes in a browser (PKCE; the redirect comes back to a listener on
    127.0.0.1); the refresh token then keeps the grant alive unattended."""
    CLIENT_CREDENTIALS = "client_credentials"
    """A pre-registered client proves itself with its id and secret: no person (CI)."""


class McpElicitation(Enum):
    """What io answers when a server asks the user for input in the middle of a call."""

    DECLINE = "decline"
    """Decline every request: nobody answers a server during an unattended run."""
    DEFAULTS = "defaults"
    """Accept with the defaults the requested schema declares (decline when a required
    field has no default)."""


@record
class McpOAuth:
    """OAuth 2.1 settings of one remote server (RFC 9728 discovery, RFC 7591
    registration, PKCE); every field is optional.

    Attributes:
        grant: Authorization code (a person, once) or client credentials (CI).
        client_id: A pre-registered client; None registers one dynamically.
        client_secret: Its secret (secret: hidden from `repr`, never recorded).
        private_key: Instead of a secret, a PEM private key the client signs its
            client-credentials assertions with (``private_key_jwt``, RFC 7523); secret.
        signing_algorithm: The JWS algorithm of those assertions (RS256, ES256 …).
        scopes: Scopes to ask for; empty lets the server's challenge or metadata decide.
        client_metadata_url: An https URL io's client metadata document is served from,
            used as the client id where the authorization server accepts one (CIMD).
        issuer: The authorization server a pre-registered client belongs to: its
            credentials are only ever sent there (None: whichever discovery finds).
        redirect_port: The port of the 127.0.0.1 redirect listener; 0 picks a free one
            (and keeps it, once registered, for the next runs).
        authorize_timeout: Seconds a start waits for the person to authorize.
    """

    grant: McpGrant = McpGrant.AUTHORIZATION_CODE
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)
    signing_algorithm: str = "RS256"
    scopes: tuple[str, ...] = ()
    client_metadata_url: str | None = None
    issuer: str | None = None
    redirect_port: int = 0
    authorize_timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.grant is McpGrant.CLIENT_CREDENTIALS and not (
                self.client_id and (self.client_secret or self.private_key)):
            raise ConfigError("an MCP OAuth client_credentials grant needs client_id and"
                              " client_secret (or private_key)",
                              hint="or use grant = \"authorization_code\"")
        if not 0 <= self.redirect_port <= 65535:
            raise ConfigError(f"redirect_port must be from 0 to 65535, not {self.redirect_port}")


@record
class McpServerConfig:
    """How to reach one MCP server: a local command over stdio, or a URL over HTTP.

    Attributes:
        name: Unique name; its tools are exposed under it (no ``/``: policy rules name
            its tools ``<name>/<tool>``).
        command: The program to start (its start is checked by the policy as an exec);
            "" for a remote server.
        args: Its arguments.
        env: Extra environment variables for it, resolved; secret (hidden from `repr`).
        cwd: Its working directory (absolute once loaded), or None for the workspace.
        url: A remote server's streamable-HTTP endpoint (its host is checked by the
            policy as a net act); None for a local one.
        headers: Headers sent with every request to `url`; secret (hidden from `repr`).
        optional: A server that cannot start is reported and the run goes on without
            it; otherwise the run does not start.
        oauth: OAuth settings; None still answers a server's 401 with the defaults
            (dynamic registration, authorization code).
        auth_dir: Where OAuth tokens and client registrations are kept (outside the
            workspace, files of mode 0600); None keeps them in memory for the session.
        elicitation: What to answer a server that asks the user for input.
    """

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: {}, repr=False)
    cwd: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: {}, repr=False)
    optional: bool = False
    oauth: McpOAuth | None = None
    auth_dir: Path | None = None
    elicitation: McpElicitation = McpElicitation.DECLINE

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ConfigError(f"an MCP server needs a name without '/', not {self.name!r}")
        if bool(self.command) == (self.url is not None):
            raise ConfigError(f"MCP server {self.name!r} needs either command (a local"
                              " server) or url (a remote one), not both or neither")
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(f"MCP server {self.name!r}: url must be an http(s) URL"
                                  " with a host")

    @property
    def is_remote(self) -> bool:
        """Whether it is reached over HTTP (`url`) rather than started (`command`)."""
        return self.url is not None

    @property
    def argv(self) -> tuple[str, ...]:
        """The command and its arguments (a local server)."""
        return (self.command, *self.args)

    @property
    def endpoint(self) -> tuple[str, int]:
        """A remote server's host and port (the port its scheme implies when unnamed)."""
        parts = urlsplit(self.url or "")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return parts.hostname or "", port
