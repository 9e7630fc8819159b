"""`io run` against an HTTPS fake signed by a throwaway CA: the run fails with one clear
reason until `[provider] ca_bundle` names the CA, then it goes through, also behind a
CONNECT proxy taken from the environment."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path

import trustme

from tests.fakes.connect_proxy import ConnectProxy
from tests.fakes.vendor_server import FakeVendorServer
from tests.integration.providers.conftest import (
    Cli,
    finished,
    provider_toml,
    tool_conversation,
    write_workspace,
)

StartFake = Callable[..., FakeVendorServer]


def _https(fakes: StartFake, ca: trustme.CA, vendor: str) -> FakeVendorServer:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return fakes(vendor, responder=tool_conversation(vendor, 1), tls=context)


def test_an_untrusted_server_ends_the_run_with_the_reason_and_ca_bundle_fixes_it(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    ca = trustme.CA()
    fake = _https(fakes, ca, "openai-responses")
    ws = write_workspace(tmp_path / "ws", provider_toml("openai-responses", fake))

    no_proxy = {name: "" for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy",
                                       "ALL_PROXY", "all_proxy")}
    cli.extra_env = no_proxy
    refused = cli("run", "echo once", "-w", str(ws), "--json")
    assert refused.returncode == 1
    reason = finished(refused.stdout)["reason"]
    assert "TLS certificate of 127.0.0.1 not trusted" in reason
    assert fake.requests == []

    ca.cert_pem.write_to_path(str(ws / "corp-ca.pem"))
    toml = (ws / "io.toml").read_text().replace(
        "timeout_seconds = 20\n", 'timeout_seconds = 20\nca_bundle = "corp-ca.pem"\n', 1
    )
    (ws / "io.toml").write_text(toml)
    with ConnectProxy() as proxy:
        cli.extra_env = {**no_proxy, "HTTPS_PROXY": proxy.url}
        trusted = cli("run", "echo once", "-w", str(ws), "--json")
    assert trusted.returncode == 0, trusted.stderr
    assert finished(trusted.stdout)["status"] == "finished"
    assert fake.violations == []
    assert len(fake.requests) == 2
    assert {t.target for t in proxy.tunnels} == {f"127.0.0.1:{fake.port}"}
