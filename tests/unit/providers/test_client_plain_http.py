"""A client whose every URL is plain http (a local model) builds no trust store, and
still never trusts a certificate: a TLS connection through it fails closed."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
import trustme

from harness_core.providers._client import make_client
from tests.fakes.vendor_server import FakeVendorServer, Turn, start_vendor_server

_BUILD = """
import json, sys
from harness_core.clock import SystemClock
from harness_core.providers import ProviderConfig, build_provider
from harness_core.messages import Message
from harness_core.providers import CompletionRequest
url, proxy = sys.argv[1], sys.argv[2]
env = {"HTTPS_PROXY": proxy} if proxy else {}
provider = build_provider(ProviderConfig(kind="openai", model="m", api_key="k", base_url=url),
                          env=env, clock=SystemClock())
text = "" if proxy else provider.complete(
    CompletionRequest(model="m", messages=(Message.user("hi"),)), step=0).text
provider.close()
print(json.dumps({"text": text, "truststore": "truststore" in sys.modules}))
"""


@pytest.fixture
def https_fake() -> Iterator[FakeVendorServer]:
    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    fake = start_vendor_server("openai", tls=context)
    yield fake
    fake.close()


def _child(url: str, proxy: str = "") -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _BUILD, url, proxy], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return dict(json.loads(out))


def test_a_plain_http_provider_answers_without_loading_the_trust_store() -> None:
    fake = start_vendor_server("openai")
    try:
        fake.push(Turn(text="ok"))
        seen = _child(fake.base_url)
    finally:
        fake.close()
    assert seen == {"text": "ok", "truststore": False}


def test_a_proxy_in_the_environment_brings_the_trust_store_back() -> None:
    assert _child("http://127.0.0.1:9/v1", proxy="https://127.0.0.1:9")["truststore"] is True


def test_the_plain_http_client_trusts_no_certificate(https_fake: FakeVendorServer) -> None:
    client = make_client({}, urls=("http://127.0.0.1:9/v1",))
    try:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            client.get(https_fake.base_url + "/models")
    finally:
        client.close()
