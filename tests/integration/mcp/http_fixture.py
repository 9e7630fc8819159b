"""A real streamable-HTTP MCP server on 127.0.0.1, built with the SDK's server side
(`MCPServer.streamable_http_app`) and served by uvicorn in a thread of the test.

`HttpServer` records every request's path and `Authorization` header, can demand a
bearer token (answering 401 with a `WWW-Authenticate` that names the protected resource
metadata, RFC 9728), and can forget its MCP sessions (as a restarted server would), so
a client must connect again. With `oauth=True` the same port also serves a small
authorization server (`FakeAuthServer`): metadata, registration, authorization with
PKCE (consent is automatic), and the token endpoint. With `name`, its URL names the
server by a host name (which the test's own resolver maps to 127.0.0.1) and the SDK
accepts only that name in `Host`; with `tls_pem` (a key and certificate chain in one PEM
file) it speaks HTTPS.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from tests.integration.mcp.auth_fixture import PATHS as AUTH_PATHS
from tests.integration.mcp.auth_fixture import FakeAuthServer

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


CALLS: list[str] = []
"""Every echo the servers ran (a test clears it)."""


def build_server() -> MCPServer:
    server = MCPServer("io-test-remote", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Say `text` back."""
        CALLS.append(text)
        return f"echo: {text}"

    @server.tool()
    async def grow(ctx: Context) -> str:  # type: ignore[type-arg]
        """Add a tool named `sprout` and tell the client its tools changed."""

        def sprout() -> str:
            return "sprouted"

        server.add_tool(sprout)
        await ctx.session.send_tool_list_changed()
        return "grown"

    @server.tool()
    async def chatty(ctx: Context) -> str:  # type: ignore[type-arg]
        """Log and report progress before answering."""
        with warnings.catch_warnings():  # the SDK deprecates logging for a later protocol
            warnings.simplefilter("ignore")
            await ctx.info("working on it")
        await ctx.report_progress(1, 2)
        return "done talking"

    return server


class HttpServer:
    """uvicorn serving one MCP app on 127.0.0.1 (a free port), in a daemon thread.

    Args:
        token: When set, every /mcp request must carry ``Bearer <token>`` (checked by
            `accept`, which a test may replace); others get 401.
        metadata_url: The resource metadata URL a 401 names.
    """

    def __init__(self, *, token: str | None = None, metadata_url: str | None = None,
                 oauth: bool = False, expires_in: int = 3600,
                 client: tuple[str, str] | None = None, auth_host: str = "127.0.0.1",
                 name: str | None = None, tls_pem: str | None = None) -> None:
        self.mcp = build_server()
        self.token = token
        self.metadata_url = metadata_url
        self.auth: FakeAuthServer | None = None
        self.seen: list[tuple[str, str, str | None]] = []
        self.hosts: list[str] = []
        """Every request's `Host` header."""
        security = None if name is None else TransportSecuritySettings(
            allowed_hosts=[f"{name}:*"], allowed_origins=[f"https://{name}:*"])
        self._inner: App = self.mcp.streamable_http_app(transport_security=security)
        self._reset = False
        config = uvicorn.Config(self._app, host="127.0.0.1", port=0, log_level="critical", interface="asgi3",
                                lifespan="on", ssl_certfile=tls_pem, ssl_keyfile=tls_pem)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the MCP test server did not start")
            threading.Event().wait(0.01)
        sock = self._server.servers[0].sockets[0]
        self.port: int = sock.getsockname()[1]
        self.base = f"{'https' if tls_pem else 'http'}://{name or '127.0.0.1'}:{self.port}"
        self.url = f"{self.base}/mcp"
        if oauth:
            issuer = f"http://{auth_host}:{self.port}"
            self.auth = FakeAuthServer(issuer, self.url, expires_in=expires_in, client=client)
            self.metadata_url = f"{self.base}/.well-known/oauth-protected-resource"

    def accept(self, authorization: str | None) -> bool:
        if self.auth is not None:
            return authorization is not None and authorization.removeprefix(
                "Bearer ") in self.auth.valid
        return self.token is None or authorization == f"Bearer {self.token}"

    def forget_sessions(self) -> None:
        """Answer the next request that names a session with 404, as a server that lost
        its sessions does; the client must initialize a new one."""
        self._reset = True

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._inner(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        auth = headers.get("authorization")
        self.seen.append((scope["method"], scope["path"], auth))
        self.hosts.append(headers.get("host", ""))
        if self.auth is not None and scope["path"] in AUTH_PATHS:
            await self.auth(scope, receive, send)
            return
        if not self.accept(auth):
            challenge = 'Bearer error="invalid_token"'
            if self.metadata_url:
                challenge += f', resource_metadata="{self.metadata_url}"'
            await _respond(send, 401, b"unauthorized", [(b"www-authenticate",
                                                         challenge.encode())])
            return
        if self._reset and "mcp-session-id" in headers:
            self._reset = False
            await _respond(send, 404, b"session not found", [])
            return
        await self._inner(scope, receive, send)

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)


async def _respond(send: Send, status: int, body: bytes,
                   headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"), *headers]})
    await send({"type": "http.response.body", "body": body})
    await asyncio.sleep(0)
