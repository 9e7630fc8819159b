"""A small OAuth 2.1 authorization server for the MCP tests (raw ASGI, no framework).

It serves the protected resource metadata (RFC 9728), its own metadata (RFC 8414),
dynamic client registration (RFC 7591), an authorization endpoint that consents at once
and redirects with a code, and a token endpoint for the authorization code (PKCE S256
checked), refresh token and client credentials grants. Every grant it is asked for is
recorded in `grants`; `valid` holds the access tokens it issued and has not expired.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

PATHS = ("/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server",
         "/register", "/authorize", "/token")


class FakeAuthServer:
    """The authorization server of one test.

    Args:
        base: Its issuer (``http://127.0.0.1:<port>``).
        resource: The MCP endpoint it protects.
        expires_in: Lifetime of each access token it issues, in seconds.
        client: A pre-registered (client_id, client_secret) for client credentials.
    """

    def __init__(self, base: str, resource: str, *, expires_in: int = 3600,
                 client: tuple[str, str] | None = None) -> None:
        self.base = base
        self.resource = resource
        self.expires_in = expires_in
        self.clients: dict[str, str | None] = dict([client]) if client else {}
        self.codes: dict[str, tuple[str, str]] = {}
        self.refresh: set[str] = set()
        self.valid: set[str] = set()
        self.grants: list[str] = []

    def issue(self) -> dict[str, Any]:
        access, refresh = f"at-{secrets.token_hex(8)}", f"rt-{secrets.token_hex(8)}"
        self.valid.add(access)
        self.refresh.add(refresh)
        return {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in,
                "refresh_token": refresh}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if path == "/.well-known/oauth-protected-resource":
            await _json(send, 200, {"resource": self.resource,
                                    "authorization_servers": [self.base]})
        elif path == "/.well-known/oauth-authorization-server":
            await _json(send, 200, self.metadata())
        elif path == "/register":
            client_id = f"client-{secrets.token_hex(4)}"
            self.clients[client_id] = None
            await _json(send, 201, {**json.loads(body), "client_id": client_id})
        elif path == "/authorize":
            await self._authorize(send, parse_qs(scope["query_string"].decode()))
        else:
            await self._token(send, {k: v[0] for k, v in parse_qs(body.decode()).items()},
                              dict(scope["headers"]))

    def metadata(self) -> dict[str, Any]:
        return {"issuer": self.base, "authorization_endpoint": f"{self.base}/authorize",
                "token_endpoint": f"{self.base}/token",
                "registration_endpoint": f"{self.base}/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token",
                                          "client_credentials"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic",
                                                          "client_secret_post"]}

    async def _authorize(self, send: Send, query: dict[str, list[str]]) -> None:
        one = {k: v[0] for k, v in query.items()}
        if one.get("code_challenge_method") != "S256" or one.get("client_id") not in self.clients:
            await _json(send, 400, {"error": "invalid_request"})
            return
        code = secrets.token_hex(8)
        self.codes[code] = (one["code_challenge"], one["redirect_uri"])
        target = f"{one['redirect_uri']}?{urlencode({'code': code, 'state': one['state']})}"
        await send({"type": "http.response.start", "status": 302,
                    "headers": [(b"location", target.encode())]})
        await send({"type": "http.response.body", "body": b""})

    async def _token(self, send: Send, form: dict[str, str], headers: dict[bytes, bytes]
                     ) -> None:
        grant = form.get("grant_type", "")
        self.grants.append(grant)
        ok = False
        if grant == "authorization_code":
            challenge, redirect = self.codes.pop(form.get("code", ""), ("", ""))
            verifier = form.get("code_verifier", "").encode()
            computed = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
            ok = bool(challenge) and computed.decode() == challenge and (
                form.get("redirect_uri") == redirect)
        elif grant == "refresh_token":
            token = form.get("refresh_token", "")
            ok = token in self.refresh
            self.refresh.discard(token)
        elif grant == "client_credentials":
            ok = _basic(headers) in {(k, v) for k, v in self.clients.items() if v}
        if not ok:
            await _json(send, 400, {"error": "invalid_grant"})
            return
        await _json(send, 200, self.issue())


def _basic(headers: dict[bytes, bytes]) -> tuple[str, str] | None:
    value = headers.get(b"authorization", b"").decode()
    if not value.lower().startswith("basic "):
        return None
    user, _, password = base64.b64decode(value[6:]).decode().partition(":")
    return user, password


async def _json(send: Send, status: int, data: dict[str, Any]) -> None:
    body = json.dumps(data).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def host_of(url: str) -> str:
    return urlsplit(url).netloc
