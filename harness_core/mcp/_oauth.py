"""OAuth 2.1 for remote MCP servers: the SDK's flow, io's token file and redirect listener.

The SDK's `OAuthClientProvider` does the protocol: on a 401 it reads the protected
resource metadata (RFC 9728, from the `WWW-Authenticate` challenge or the well-known
paths), the authorization server's metadata (RFC 8414, with the OpenID fallbacks),
registers a client (RFC 7591) or uses a client metadata URL, runs the authorization
code grant with PKCE, and refreshes an expired token. Its client-credentials variant
serves CI. This module gives it what is io's own:

- `TokenFile`, the SDK's `TokenStorage`: one JSON file per server in io's state
  directory (never the workspace), written atomically with mode 0600 in a 0700
  folder. It records when the access token expires, so a token loaded by the next run
  is refreshed when it has expired rather than sent and refused.
- `RedirectListener`: the authorization code comes back to a listener on 127.0.0.1;
  the URL the person must open is handed to `notice` (the run shows it).

Tokens never pass through a log, an event or the store: only this file holds them.
Every SDK import is inside a function: importing this module loads no SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, urlsplit

from harness_core.tool_servers import McpGrant, McpOAuth, McpServerConfig

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

__all__ = ["RedirectListener", "TokenFile", "build_auth", "token_path"]

_PAGE = (b"<!doctype html><title>io</title><p>io received the authorization."
         b" You can close this tab.</p>")


def token_path(config: McpServerConfig) -> Path | None:
    """The file that keeps `config`'s tokens (None: keep them in memory only)."""
    if config.auth_dir is None:
        return None
    key = hashlib.sha256(f"{config.name}\0{config.url}".encode()).hexdigest()[:24]
    return config.auth_dir / f"{key}.json"


class TokenFile:
    """The SDK's `TokenStorage` over one JSON file (or memory, with no path).

    Args:
        path: The file; its folder is created with mode 0700, the file with 0600.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._data: dict[str, Any] = self._read()
        self._preset: OAuthClientInformationFull | None = None

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # no file yet, or a damaged one: authorize afresh
        return data if isinstance(data, dict) else {}

    def _write(self) -> None:
        if self.path is None:
            return
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".tokens-", dir=folder)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(self._data, out)
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    @property
    def expires_at(self) -> float | None:
        """When the stored access token expires (epoch seconds), if it said."""
        value = self._data.get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        raw = self._data.get("tokens")
        return OAuthToken.model_validate(raw) if isinstance(raw, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        self._data["expires_at"] = (time.time() + tokens.expires_in
                                    if tokens.expires_in is not None else None)
        self._write()

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        if self._preset is not None:
            return self._preset
        raw = self._data.get("client")
        return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write()

    def preset_client(self, client_info: OAuthClientInformationFull) -> None:
        """Use a pre-registered client; its secret stays in memory, never in the file."""
        self._preset = client_info

    def redirect_port(self) -> int | None:
        """The port of the 127.0.0.1 redirect URI a stored registration names."""
        client = self._data.get("client")
        uris = client.get("redirect_uris") if isinstance(client, dict) else None
        for uri in uris if isinstance(uris, list) else []:
            parts = urlsplit(str(uri))
            if parts.hostname == "127.0.0.1" and parts.port:
                return parts.port
        return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedirectListener:
    """Receives one authorization response on ``http://127.0.0.1:<port>/callback``.

    Args:
        port: The port (fixed once a client is registered with it).
        server: The MCP server's name, for the notice.
        notice: Shows the person the URL to open.
        timeout: Seconds to wait for the browser to come back.
        on_wait: Called when the wait for a person begins (extends the start's deadline).
    """

    def __init__(self, port: int, server: str, notice: Callable[[str], None],
                 timeout: float, on_wait: Callable[[], None] = lambda: None) -> None:
        self.port = port
        self.redirect_uri = f"http://127.0.0.1:{port}/callback"
        self._server_name = server
        self._notice = notice
        self._timeout = timeout
        self._on_wait = on_wait
        self._listener: asyncio.Server | None = None
        self._answer: asyncio.Future[dict[str, str]] | None = None

    async def open_browser(self, authorization_url: str) -> None:
        """Start listening, then show the person where to authorize (the SDK's
        redirect handler)."""
        self._answer = asyncio.get_running_loop().create_future()
        self._listener = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self._on_wait()
        self._notice(f"MCP server {self._server_name!r} asks for authorization: open"
                     f" {authorization_url} (waiting {self._timeout:g} s for the redirect"
                     f" to {self.redirect_uri})")

    async def wait_for_code(self) -> AuthorizationCodeResult:
        """The code and state the browser brought back (the SDK's callback handler)."""
        from mcp.client.auth import OAuthFlowError
        from mcp.shared.auth import AuthorizationCodeResult

        answer = self._answer
        if answer is None:
            raise OAuthFlowError("no authorization was started")
        try:
            query = await asyncio.wait_for(answer, self._timeout)
        except TimeoutError:
            raise OAuthFlowError(f"nobody authorized within {self._timeout:g} s") from None
        finally:
            await self.close()
        if "error" in query:
            raise OAuthFlowError(f"authorization refused: {query['error']}")
        code = query.get("code")
        if not code:
            raise OAuthFlowError("the authorization response carried no code")
        return AuthorizationCodeResult(code=code, state=query.get("state"), iss=query.get("iss"))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            writer.close()
            return
        target = head.split(b"\r\n", 1)[0].split(b" ")
        parts = urlsplit(target[1].decode("latin-1") if len(target) > 1 else "")
        found = parts.path == "/callback"
        status = b"200 OK" if found else b"404 Not Found"
        writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html\r\nContent-Length: "
                     + str(len(_PAGE)).encode() + b"\r\nConnection: close\r\n\r\n" + _PAGE)
        with contextlib.suppress(OSError):
            await writer.drain()
        writer.close()
        answer = self._answer
        if found and answer is not None and not answer.done():
            query = {k: v[0] for k, v in parse_qs(parts.query).items() if v}
            answer.set_result(query)

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            with contextlib.suppress(OSError):
                await listener.wait_closed()


def _restoring(base: type[Any], storage: TokenFile) -> Any:
    """`base` whose stored token keeps its expiry (the SDK's loader forgets it)."""

    class Restoring(base):  # type: ignore[misc]
        async def _initialize(self) -> None:
            await super()._initialize()
            if self.context.current_tokens is not None:
                self.context.token_expiry_time = storage.expires_at

    return Restoring


def build_auth(config: McpServerConfig, notice: Callable[[str], None],
               on_wait: Callable[[], None] = lambda: None
               ) -> tuple[httpx2.Auth, RedirectListener | None]:
    """The httpx auth that answers `config`'s server's 401s, and its redirect listener.

    Args:
        config: A remote server.
        notice: Shows the person the authorization URL (authorization code grant).
        on_wait: Called when the start begins to wait on that person.

    Returns:
        The auth, and the listener (None for client credentials) to close at the end.
    """
    settings = config.oauth or McpOAuth()
    storage = TokenFile(token_path(config))
    scope = " ".join(settings.scopes) or None
    if settings.grant is McpGrant.CLIENT_CREDENTIALS:
        return _client_credentials(config, settings, storage, scope), None
    return _authorization_code(config, settings, storage, scope, notice, on_wait)


def _client_credentials(config: McpServerConfig, settings: McpOAuth, storage: TokenFile,
                        scope: str | None) -> httpx2.Auth:
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    client_id = settings.client_id or ""
    with warnings.catch_warnings():
        # Without an issuer the SDK warns that 3.0 will need one; io passes it when the
        # operator names it (`issuer`) and otherwise keeps discovery's answer.
        warnings.simplefilter("ignore")
        if settings.private_key:
            signer = SignedJWTParameters(issuer=client_id, subject=client_id,
                                         signing_key=settings.private_key,
                                         signing_algorithm=settings.signing_algorithm)
            return cast("httpx2.Auth", _restoring(PrivateKeyJWTOAuthProvider, storage)(
                server_url=config.url, storage=storage, client_id=client_id,
                assertion_provider=signer.create_assertion_provider(), scope=scope,
                issuer=settings.issuer))
        return cast("httpx2.Auth", _restoring(ClientCredentialsOAuthProvider, storage)(
            server_url=config.url, storage=storage, client_id=client_id,
            client_secret=settings.client_secret or "", scope=scope, issuer=settings.issuer))


def _authorization_code(config: McpServerConfig, settings: McpOAuth, storage: TokenFile,
                        scope: str | None, notice: Callable[[str], None],
                        on_wait: Callable[[], None]) -> tuple[httpx2.Auth, RedirectListener]:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    port = storage.redirect_port() or settings.redirect_port or _free_port()
    listener = RedirectListener(port, config.name, notice, settings.authorize_timeout, on_wait)
    metadata = OAuthClientMetadata.model_validate({
        "client_name": "io", "redirect_uris": [listener.redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic" if settings.client_secret
        else "none", "scope": scope})
    if settings.client_id is not None:
        storage.preset_client(OAuthClientInformationFull.model_validate({
            "client_id": settings.client_id, "client_secret": settings.client_secret,
            "redirect_uris": [listener.redirect_uri],
            "token_endpoint_auth_method": metadata.token_endpoint_auth_method,
        }))
    provider = _restoring(OAuthClientProvider, storage)(
        server_url=config.url, client_metadata=metadata, storage=storage,
        redirect_handler=listener.open_browser, callback_handler=listener.wait_for_code,
        client_metadata_url=settings.client_metadata_url)
    return provider, listener
