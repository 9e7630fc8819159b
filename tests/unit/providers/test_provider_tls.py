"""TLS and proxies on the real httpx path: a loopback HTTPS fake whose certificate comes
from a throwaway CA made here (trustme), and a loopback CONNECT proxy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from harness_core.errors import ConfigError, ProviderError
from harness_core.providers import ProviderConfig, build_provider, trust_store
from harness_core.providers._tls import ssl_context
from tests.fakes.connect_proxy import ConnectProxy
from tests.fakes.vendor_server import FakeVendorServer, Turn, start_vendor_server
from tests.unit.providers.conftest import CANARY_KEY, ManualClock, request


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_pem(ca: trustme.CA, tmp_path: Path) -> Path:
    path = tmp_path / "corp-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture
def https_fake(ca: trustme.CA) -> Iterator[FakeVendorServer]:
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    fake = start_vendor_server("openai", tls=context)
    yield fake
    fake.close()


def _provider(fake: FakeVendorServer, clock: ManualClock, **fields: object) -> object:
    env = fields.pop("env", {})
    config = ProviderConfig(
        kind="openai",
        model="m",
        api_key=CANARY_KEY,
        base_url=fake.base_url,
        max_retries=2,
        timeout_seconds=5.0,
        **fields,  # type: ignore[arg-type]
    )
    return build_provider(config, env=env, clock=clock)  # type: ignore[arg-type]


def test_an_untrusted_certificate_fails_once_with_a_clear_error_naming_ca_bundle(
    https_fake: FakeVendorServer, clock: ManualClock
) -> None:
    provider = _provider(https_fake, clock)
    try:
        with pytest.raises(ProviderError) as info:
            provider.complete(request(), step=0)  # type: ignore[attr-defined]
    finally:
        provider.close()  # type: ignore[attr-defined]
    error = info.value
    assert "TLS certificate of 127.0.0.1 not trusted" in str(error)
    assert error.retryable is False and len(error.attempts) == 1 and clock.sleeps == []
    assert error.hint is not None and "ca_bundle" in error.hint and "system" in error.hint
    assert https_fake.requests == []  # nothing was sent over the untrusted connection


def test_ca_bundle_makes_the_corporate_ca_trusted(
    https_fake: FakeVendorServer, clock: ManualClock, ca_pem: Path
) -> None:
    https_fake.push(Turn(text="over tls"))
    provider = _provider(https_fake, clock, ca_bundle=ca_pem)
    try:
        response = provider.complete(request(), step=0)  # type: ignore[attr-defined]
    finally:
        provider.close()  # type: ignore[attr-defined]
    assert response.text == "over tls"
    assert https_fake.violations == []


def test_a_ca_bundle_that_is_not_pem_is_a_config_error(tmp_path: Path) -> None:
    bogus = tmp_path / "ca.pem"
    bogus.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match="ca_bundle"):
        ssl_context([bogus])
    with pytest.raises(ConfigError, match="ca_bundle"):
        ssl_context([tmp_path / "missing.pem"])


def test_the_trust_store_is_the_system_one_through_truststore() -> None:
    store = trust_store()
    assert (store.kind, store.source) == ("system", "truststore")
    assert store.describe() == "system (truststore)"
    assert trust_store([Path("/x/ca.pem")]).describe() == "system (truststore) + /x/ca.pem"


def test_without_truststore_certifi_is_the_store_and_ca_bundle_still_applies(
    https_fake: FakeVendorServer, ca_pem: Path
) -> None:
    """In a child where truststore cannot be imported, certifi's bundle is chosen, and
    the corporate CA is still trusted on top of it."""
    https_fake.push(Turn(text="via certifi"))
    code = f"""
import sys
sys.modules["truststore"] = None  # as if it were not installed
import certifi
from pathlib import Path
from harness_core.clock import SystemClock
from harness_core.messages import Message
from harness_core.providers import CompletionRequest, ProviderConfig, build_provider, trust_store
store = trust_store()
assert (store.kind, store.source) == ("certifi", certifi.where()), store
config = ProviderConfig(kind="openai", model="m", api_key="k", base_url={https_fake.base_url!r},
                        ca_bundle=Path({str(ca_pem)!r}), max_retries=0)
provider = build_provider(config, env={{}}, clock=SystemClock())
answer = provider.complete(CompletionRequest(model="m", messages=(Message.user("hi"),)), step=0)
provider.close()
print(answer.text)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "via certifi"


def test_https_goes_through_the_connect_proxy_named_by_the_environment(
    https_fake: FakeVendorServer, clock: ManualClock, ca_pem: Path
) -> None:
    https_fake.push(Turn(text="tunnelled"))
    with ConnectProxy() as proxy:
        env = {"HTTPS_PROXY": proxy.url.replace("http://", "http://me:s%40cret@")}
        provider = _provider(https_fake, clock, ca_bundle=ca_pem, env=env)
        try:
            assert provider.complete(request(), step=0).text == "tunnelled"  # type: ignore[attr-defined]
        finally:
            provider.close()  # type: ignore[attr-defined]
    assert [t.target for t in proxy.tunnels] == [f"127.0.0.1:{https_fake.port}"]
    import base64

    assert proxy.tunnels[0].authorization == "Basic " + base64.b64encode(b"me:s@cret").decode()


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "localhost,127.0.0.1", "*"])
def test_no_proxy_sends_the_request_directly(
    https_fake: FakeVendorServer, clock: ManualClock, ca_pem: Path, no_proxy: str
) -> None:
    https_fake.push(Turn(text="direct"))
    with ConnectProxy() as proxy:
        env = {"https_proxy": proxy.url, "no_proxy": no_proxy}
        provider = _provider(https_fake, clock, ca_bundle=ca_pem, env=env)
        try:
            assert provider.complete(request(), step=0).text == "direct"  # type: ignore[attr-defined]
        finally:
            provider.close()  # type: ignore[attr-defined]
    assert proxy.tunnels == []


def test_a_proxy_that_refuses_the_tunnel_is_a_clear_error_not_retried(
    https_fake: FakeVendorServer, clock: ManualClock, ca_pem: Path
) -> None:
    with ConnectProxy(refuse=403) as proxy:
        provider = _provider(https_fake, clock, ca_bundle=ca_pem, env={"HTTPS_PROXY": proxy.url})
        try:
            with pytest.raises(ProviderError, match="ProxyError") as info:
                provider.complete(request(), step=0)  # type: ignore[attr-defined]
        finally:
            provider.close()  # type: ignore[attr-defined]
    assert info.value.retryable is False and clock.sleeps == []


def test_io_config_show_names_the_trust_store(tmp_path: Path, ca_pem: Path) -> None:
    (tmp_path / "io.toml").write_text(
        '[provider]\nkind = "openai"\nmodel = "m"\nca_bundle = "corp-ca.pem"\n'
    )
    env = {"IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path), "PATH": "/usr/bin"}
    import os

    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    shown = subprocess.run(
        [sys.executable, "-m", "io_harness_cli", "config", "show", "-w", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=60, env=env, check=True,
    )
    tls = json.loads(shown.stdout)["tls"]
    assert tls == {"trust_store": "system", "source": "truststore", "ca_bundles": [str(ca_pem)]}
    plain = subprocess.run(
        [sys.executable, "-m", "io_harness_cli", "config", "show", "-w", str(tmp_path)],
        capture_output=True, text=True, timeout=60, env=env, check=True,
    )
    assert f"TLS trust store (HTTP providers): system (truststore) + {ca_pem}" in plain.stdout


def test_one_timeout_setting_is_split_into_httpx_four() -> None:
    from harness_core.providers._client import timeouts

    assert timeouts(120.0).as_dict() == {"connect": 10.0, "read": 120.0, "write": 30.0,
                                         "pool": 10.0}
    assert timeouts(2.0).as_dict() == {"connect": 2.0, "read": 2.0, "write": 2.0, "pool": 2.0}


def test_the_client_speaks_http2_when_h2_is_installed_and_reads_no_environment() -> None:
    import importlib.util

    from harness_core.providers._client import has_http2, make_client

    client = make_client({"HTTPS_PROXY": "http://127.0.0.1:9"})
    plain = make_client({}, urls=["http://127.0.0.1:8000/v1"])
    try:
        assert has_http2() is (importlib.util.find_spec("h2") is not None)
        assert client.trust_env is False  # no .netrc, no SSL_CERT_FILE, no os.environ proxies
        assert client.follow_redirects is False
        # httpcore's pool flag (private): HTTP/2 is offered over TLS only, where ALPN
        # negotiates it; a plain-http server never speaks it, so h2 is not even loaded.
        assert client._transport._pool._http2 is has_http2()  # type: ignore[attr-defined]
        assert plain._transport._pool._http2 is False  # type: ignore[attr-defined]
    finally:
        client.close()
        plain.close()


def test_a_fallback_chain_shares_one_client_trusting_every_ca_bundle(
    https_fake: FakeVendorServer, clock: ManualClock, ca_pem: Path, tmp_path: Path
) -> None:
    """The primary fails (a 500 every time); the fallback, another host name of the same
    fake, is reached over the same client, which trusts the fallback's ca_bundle too."""
    from tests.fakes.vendor_server import Fail

    other = trustme.CA()
    other_pem = tmp_path / "other-ca.pem"
    other.cert_pem.write_to_path(str(other_pem))
    https_fake.push(Fail(500, "down"), Turn(text="from the fallback"))
    base = dict(kind="openai", model="m", api_key="k", max_retries=0, timeout_seconds=5.0)
    primary = ProviderConfig(
        **base,  # type: ignore[arg-type]
        base_url=https_fake.base_url,
        ca_bundle=other_pem,
        fallback=(
            ProviderConfig(
                **base,  # type: ignore[arg-type]
                base_url=https_fake.base_url.replace("127.0.0.1", "localhost"),
                ca_bundle=ca_pem,
            ),
        ),
    )
    chain = build_provider(primary, env={}, clock=clock)
    try:
        clients = {id(p.client) for p in chain.providers}  # type: ignore[attr-defined]
        answer = chain.complete(request(), step=0)
    finally:
        chain.close()
    assert len(clients) == 1
    assert answer.text == "from the fallback"
    assert [a.ok for a in answer.attempts] == [False, True]


@pytest.mark.parametrize(
    ("no_proxy", "direct", "proxied"),
    [
        ("example.com", ["https://example.com/v1", "https://api.example.com/v1"],
         ["https://notexample.com/v1", "https://example.org/v1"]),
        (".example.com", ["https://api.example.com/v1", "https://example.com/v1"],
         ["https://example.net/v1"]),
        ("*.example.com", ["https://a.b.example.com/v1"], ["https://example.co/v1"]),
        ("10.0.0.1,::1", ["http://10.0.0.1:8000/v1", "http://[::1]:8000/v1"],
         ["http://10.0.0.2/v1"]),
        ("localhost:8080", ["http://localhost:8080/v1"], ["http://localhost:9090/v1"]),
        ("", [], ["https://api.openai.com/v1"]),
    ],
)
def test_no_proxy_entries_match_hosts_and_their_subdomains(
    no_proxy: str, direct: list[str], proxied: list[str]
) -> None:
    import httpx

    from harness_core.providers._client import make_client

    client = make_client({"ALL_PROXY": "http://127.0.0.1:3128", "NO_PROXY": no_proxy})
    # httpx's own routing decision (a private method: the one way to ask which transport
    # a URL takes without opening a connection); the proxied path itself is tested above.
    try:
        for url in direct:
            assert client._transport_for_url(httpx.URL(url)) is client._transport, url
        for url in proxied:
            assert client._transport_for_url(httpx.URL(url)) is not client._transport, url
    finally:
        client.close()


def test_http2_is_negotiated_over_tls_and_carries_the_stream(
    ca: trustme.CA, ca_pem: Path, clock: ManualClock
) -> None:
    """A server that speaks only HTTP/2: the provider's stream arrives whole over it."""
    pytest.importorskip("h2")
    import ssl

    from tests.fakes.h2_server import H2Server
    from tests.fakes.vendor_server import render_openai

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)

    def answer(body: object) -> str:
        events = render_openai(Turn(text="over h2", pieces=3), "served", True, "openai", True)
        return "".join(events)  # type: ignore[arg-type]

    server = H2Server(context, answer)
    config = ProviderConfig(kind="openai", model="m", api_key=CANARY_KEY, max_retries=0,
                            base_url=f"https://127.0.0.1:{server.port}/v1", ca_bundle=ca_pem)
    provider = build_provider(config, env={}, clock=clock)
    try:
        tokens: list[str] = []
        first = provider.complete(request(), step=0, on_token=tokens.append)
        second = provider.complete(request(), step=1)
    finally:
        provider.close()
        server.close()
    assert (first.text, second.text) == ("over h2", "over h2")
    assert "".join(tokens) == "over h2" and first.model == "served"
    assert server.protocols == ["h2"]  # one connection, HTTP/2, reused for both requests
    head, body = server.requests[0]
    assert head[":method"] == "POST" and head[":path"] == "/v1/chat/completions"
    assert head["authorization"] == f"Bearer {CANARY_KEY}" and body["stream"] is True
