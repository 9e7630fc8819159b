"""A remote MCP server's transport: streamable HTTP through the SDK, under the policy.

Every request the HTTP client sends (the MCP endpoint's POSTs and GET stream, and the
OAuth flow's discovery, registration and token requests, which may go to another host)
passes `_Guarded`, which asks the policy about the request's host and port as a net
act (`Act.net`, the same check the egress proxy makes) and refuses to dial one the
policy does not allow. When the check resolved the name itself (a run's egress check
does), the request goes to those checked addresses, in order, and to nothing else, as
the egress proxy dials them: no second lookup can answer differently. The `Host` header
and the TLS server name (certificate checked against it) stay the name. The client talks
to the host directly (no environment proxy).

The SDK keeps the session (`Mcp-Session-Id` on every request, a DELETE at the end) and
resumes a dropped SSE stream with `Last-Event-ID`. `headers` go with every request; an
`Authorization` header among them means the operator authenticates, and io's OAuth is
not used; otherwise a 401 starts it (`harness_core.mcp._oauth`). Every SDK import is
inside a function: importing this module loads no SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from harness_core.mcp._oauth import build_auth
from harness_core.mcp._relay import Relay
from harness_core.mcp._server import Opener, ServerHandle

if TYPE_CHECKING:
    import httpx2

__all__ = ["NetRefused", "http_opener"]


class NetRefused(Exception):
    """The policy refused a host an MCP server's HTTP client was about to dial."""


def _guarded(inner: httpx2.AsyncBaseTransport, relay: Relay) -> httpx2.AsyncBaseTransport:
    import httpx2

    class Guarded(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            url = request.url
            port = url.port or (443 if url.scheme == "https" else 80)
            dial = await relay.admit(url.host, port)
            if not dial.decision.is_allowed:
                raise NetRefused(
                    f"the policy refused {url.host}:{port}: {dial.decision.reason}")
            if not dial.addresses:
                return await inner.handle_async_request(request)
            failure = httpx2.ConnectError(f"no address of {url.host} to dial")
            for address in dial.addresses:
                pinned = httpx2.Request(
                    request.method, url.copy_with(host=str(address)), headers=request.headers,
                    stream=request.stream,
                    extensions={**request.extensions, "sni_hostname": url.host})
                try:
                    return await inner.handle_async_request(pinned)
                except httpx2.ConnectError as exc:  # nothing was sent: try the next one
                    failure = exc
            raise failure

        async def aclose(self) -> None:
            await inner.aclose()

    return Guarded()


def _has_authorization(headers: dict[str, str]) -> bool:
    return any(name.lower() == "authorization" for name in headers)


def http_opener(relay: Relay) -> Opener:
    """The opener of remote servers whose hosts `relay` decides."""

    @asynccontextmanager
    async def open_http(server: ServerHandle) -> AsyncIterator[tuple[Any, Any]]:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

        config = server.config
        headers = dict(config.headers)
        auth, listener = (None, None) if _has_authorization(headers) else build_auth(
            config, relay.notify if relay.can_notify else _nobody, server.wait_on_person)
        client = httpx2.AsyncClient(
            headers=headers, auth=auth,
            timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
            transport=_guarded(httpx2.AsyncHTTPTransport(), relay))
        try:
            async with client, streamable_http_client(config.url or "", http_client=client) as (
                    read, write):
                yield read, write
        finally:
            if listener is not None:
                await listener.close()

    return open_http


def _nobody(text: str) -> None:
    from mcp.client.auth import OAuthFlowError

    raise OAuthFlowError("the server asks a person to authorize, and this run has nobody"
                         " to show the URL to (use grant = \"client_credentials\", or run"
                         " once where a person can authorize)")
