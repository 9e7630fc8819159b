"""OAuth 2.1 for remote MCP servers, against a real SDK server and a small authorization
server on 127.0.0.1: discovery from the 401, dynamic registration, authorization code
with PKCE through io's own redirect listener, client credentials, the token file
(0600, outside the workspace), an expired token refreshed rather than re-authorized,
and the authorization server's host decided by the policy."""

from __future__ import annotations

import json
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness_core.errors import McpUnavailable
from harness_core.mcp import McpServerConfig
from harness_core.mcp._config import McpGrant, McpOAuth
from harness_core.mcp._oauth import token_path
from harness_core.policy import Policy, Tier
from tests.integration.mcp.conftest import make_gate, start
from tests.integration.mcp.http_fixture import HttpServer


@pytest.fixture
def protected() -> Iterator[HttpServer]:
    server = HttpServer(oauth=True)
    yield server
    server.close()


def _browser(text: str) -> None:
    """Stand in for the person: open the URL io shows, follow the redirect back to io."""
    url = next(word for word in text.split() if word.startswith("http"))

    def visit() -> None:
        with httpx.Client(timeout=20) as client:
            answer = client.get(url)
            client.get(answer.headers["location"])

    threading.Thread(target=visit, daemon=True).start()


def _config(server: HttpServer, auth_dir: Path, oauth: McpOAuth | None = None
            ) -> McpServerConfig:
    return McpServerConfig("remote", url=server.url, oauth=oauth, auth_dir=auth_dir)


def test_authorization_code_with_pkce_comes_back_to_ios_listener_and_is_kept(
        protected: HttpServer, tmp_path: Path) -> None:
    auth = protected.auth
    assert auth is not None
    auth_dir = tmp_path / "state" / "mcp-auth"
    shown: list[str] = []

    def notice(text: str) -> None:
        shown.append(text)
        _browser(text)

    config = _config(protected, auth_dir, McpOAuth(authorize_timeout=30))
    with start([config], tmp_path, notice=notice) as session:
        assert session.call_tool("remote", "echo", {"text": "authorized"}, 20).text == (
            "echo: authorized")
    assert auth.grants == ["authorization_code"]  # the PKCE verifier matched
    assert len(shown) == 1 and "http://127.0.0.1:" in shown[0]
    stored = token_path(config)
    assert stored is not None and stored.exists()
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(auth_dir.stat().st_mode) == 0o700
    # The next session reuses the stored token: no person, no new grant.
    with start([config], tmp_path) as session:
        assert session.call_tool("remote", "echo", {"text": "again"}, 20).text == "echo: again"
    assert auth.grants == ["authorization_code"]


def _seed(server: HttpServer, config: McpServerConfig, *, expires_at: float) -> str:
    """A token file as a previous run left it: an access token the server no longer
    takes, a refresh token the authorization server does, and the registration."""
    auth = server.auth
    assert auth is not None
    auth.clients["client-seeded"] = None
    auth.refresh.add("rt-seeded")
    path = token_path(config)
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "tokens": {"access_token": "at-stale", "token_type": "Bearer", "expires_in": 3600,
                   "refresh_token": "rt-seeded"},
        "expires_at": expires_at,
        "client": {"client_id": "client-seeded", "redirect_uris": ["http://127.0.0.1:1/callback"],
                   "token_endpoint_auth_method": "none"},
    }))
    return str(path)


def test_an_expired_token_is_refreshed_without_a_person(
        protected: HttpServer, tmp_path: Path) -> None:
    config = _config(protected, tmp_path / "state")
    path = _seed(protected, config, expires_at=time.time() - 60)
    # notice=None: nobody could authorize, so only a refresh can start this server.
    with start([config], tmp_path) as session:
        assert session.call_tool("remote", "echo", {"text": "fresh"}, 20).text == "echo: fresh"
    assert protected.auth is not None and protected.auth.grants == ["refresh_token"]
    assert "Bearer at-stale" not in {auth for _, _, auth in protected.seen}
    kept = json.loads(Path(path).read_text())
    assert kept["tokens"]["access_token"] in protected.auth.valid
    assert kept["expires_at"] > time.time()


def test_negative_control_a_token_not_known_to_be_expired_is_sent_and_refused(
        protected: HttpServer, tmp_path: Path) -> None:
    config = _config(protected, tmp_path / "state")
    _seed(protected, config, expires_at=time.time() + 3600)
    with pytest.raises(McpUnavailable) as caught:
        start([config], tmp_path)  # nobody to authorize after the 401
    assert "authorize" in caught.value.message
    assert "Bearer at-stale" in {auth for _, _, auth in protected.seen}


def test_client_credentials_need_no_person_and_keep_the_secret_out_of_repr(
        tmp_path: Path) -> None:
    server = HttpServer(oauth=True, client=("ci-client", "ci-secret-value"))
    try:
        oauth = McpOAuth(grant=McpGrant.CLIENT_CREDENTIALS, client_id="ci-client",
                         client_secret="ci-secret-value")
        config = _config(server, tmp_path / "state", oauth)
        assert "ci-secret-value" not in repr(config)
        with start([config], tmp_path) as session:
            assert session.call_tool("remote", "echo", {"text": "ci"}, 20).text == "echo: ci"
        assert server.auth is not None and server.auth.grants == ["client_credentials"]
    finally:
        server.close()


def test_the_authorization_servers_host_is_decided_by_the_policy(tmp_path: Path) -> None:
    server = HttpServer(oauth=True, client=("ci-client", "ci-secret-value"),
                        auth_host="localhost")
    try:
        policy = Policy.from_lists(tier=Tier.FULL, deny_net=["localhost"])
        oauth = McpOAuth(grant=McpGrant.CLIENT_CREDENTIALS, client_id="ci-client",
                         client_secret="ci-secret-value")
        with pytest.raises(McpUnavailable) as caught:
            start([_config(server, tmp_path / "state", oauth)], tmp_path,
                  gate=make_gate(policy))
        assert f"localhost:{server.port}" in caught.value.message
        assert server.auth is not None and server.auth.grants == []
        assert "/.well-known/oauth-authorization-server" not in {p for _, p, _ in server.seen}
    finally:
        server.close()
