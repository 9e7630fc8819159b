"""Net rules compare addresses, not spellings (#22): a table of act -> verdict.

On main at 65e3665 every non-canonical spelling below was allowed past a deny rule
that named the address in its usual form.
"""

from __future__ import annotations

import ipaddress

import pytest

from harness_core.errors import PolicyError
from harness_core.policy import Act, Policy, Verdict, is_local, parse_address

METADATA = Policy.from_lists(tier="full", deny_net=["169.254.169.254"])
LOOPBACK = Policy.from_lists(tier="full", deny_net=["127.0.0.1:8080", "localhost:8080"])
NETWORKS = Policy.from_lists(tier="full", deny_net=["10.0.0.0/8:443", "[fd00::/8]:443"])
ALLOW = Policy.from_lists(tier="workspace-write", approval="deny",
                          allow_net=["127.0.0.2", "10.0.0.0/8", "fd00::/8"])


@pytest.mark.parametrize("host", [
    "169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518",
    "0xa9.0xfe.0xa9.0xfe", "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]",
    "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::]", "[::169.254.169.254]", "169.254.169.254.",
    "[::ffff:0:a9fe:a9fe]", "[::ffff:0:169.254.169.254]", "[64:ff9b:1::a9fe:a9fe]",
    "0x00a9fea9fe", "00251.254.169.254", "169.254.0xa9fe",
])
def test_every_spelling_of_the_metadata_address_is_denied(host: str) -> None:
    decision = METADATA.check(Act.net(host, 80))
    assert decision.verdict is Verdict.DENY
    assert decision.rule == "169.254.169.254"


@pytest.mark.parametrize("host", [
    "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0.0.0.0", "0", "[::1]", "[::]",
    "[::ffff:127.0.0.1]", "127.0.0.2", "127.255.255.254", "LOCALHOST", "localhost.",
])
def test_a_denied_loopback_covers_every_spelling_of_the_local_host(host: str) -> None:
    assert LOOPBACK.check(Act.net(host, 8080)).verdict is Verdict.DENY
    # Negative control: another port of the same host is not denied.
    assert LOOPBACK.check(Act.net(host, 8081)).verdict is Verdict.ALLOW


@pytest.mark.parametrize(("host", "port", "verdict"), [
    ("10.1.2.3", 443, Verdict.DENY),
    ("0x0a010203", 443, Verdict.DENY),
    ("10.1.2.3", 80, Verdict.ALLOW),
    ("11.0.0.1", 443, Verdict.ALLOW),
    ("[fd12::1]", 443, Verdict.DENY),
    ("[fe80::1]", 443, Verdict.ALLOW),
])
def test_cidr_rules_match_every_address_in_the_network(
    host: str, port: int, verdict: Verdict
) -> None:
    assert NETWORKS.check(Act.net(host, port)).verdict is verdict


@pytest.mark.parametrize(("host", "verdict"), [
    ("127.0.0.2", Verdict.ALLOW),
    ("0x7f000002", Verdict.ALLOW),
    ("[::ffff:127.0.0.2]", Verdict.ALLOW),
    ("10.200.0.1", Verdict.ALLOW),
    ("[fd00::5]", Verdict.ALLOW),
    # Allows never widen: no embedding, no local-host rule.
    ("127.0.0.3", Verdict.DENY),
    ("0.0.0.0", Verdict.DENY),
    ("[64:ff9b::7f00:2]", Verdict.DENY),
    ("[::127.0.0.2]", Verdict.DENY),
    ("localhost", Verdict.DENY),
])
def test_allow_rules_match_the_address_exactly(host: str, verdict: Verdict) -> None:
    assert ALLOW.check(Act.net(host, 80)).verdict is verdict


@pytest.mark.parametrize(("text", "address"), [
    ("127.1", "127.0.0.1"), ("127.0.1", "127.0.0.1"), ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"), ("0X7F.1", "127.0.0.1"), ("0177.0.0.01", "127.0.0.1"),
    ("017700000001", "127.0.0.1"), ("[::FFFF:127.0.0.1]", "127.0.0.1"), ("0", "0.0.0.0"),
    ("[fe80::1%eth0]", "fe80::1%eth0"), ("::1", "::1"),
])
def test_numeric_hosts_are_read_as_inet_aton_reads_them(text: str, address: str) -> None:
    assert parse_address(text) == ipaddress.ip_address(address)


@pytest.mark.parametrize("text", [
    "pypi.org", "256.0.0.1", "1.2.3.4.5", "0x", "08.0.0.1", "1.2.3.0x100", "127.0.0.1.1",
    "::g", "",
])
def test_names_and_malformed_numbers_are_not_addresses(text: str) -> None:
    assert parse_address(text) is None


def test_local_addresses() -> None:
    own = [ipaddress.ip_address("192.0.2.2")]
    assert is_local(ipaddress.ip_address("192.0.2.2"), own)
    assert not is_local(ipaddress.ip_address("192.0.2.2"))
    assert is_local(ipaddress.ip_address("::ffff:127.0.0.9"))
    assert not is_local(ipaddress.ip_address("8.8.8.8"), own)


@pytest.mark.parametrize("pattern", ["10.0.0.1/8", "10.0.0.0/33", "foo/8", "[fd00::1/8]:443"])
def test_a_malformed_network_is_refused_at_load(pattern: str) -> None:
    with pytest.raises(PolicyError, match="CIDR"):
        Policy.from_lists(tier="full", deny_net=[pattern])
