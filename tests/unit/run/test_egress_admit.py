"""The egress decider resolves once, checks every address, and the proxy dials only those (#22).

A fake `NetView` stands in for DNS so a name can resolve anywhere; the proxy and its
upstream are real sockets on 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Mapping

from harness_core.errors import PolicyError
from harness_core.policy import Act, Decision, Policy
from harness_core.policy._net import IPAddress
from harness_core.run._egress import admit, policy_decider
from harness_core.sandbox._proxy import Admission, EgressProxy


class FakeView:
    def __init__(self, names: Mapping[str, tuple[str, ...]], own: tuple[str, ...] = ()) -> None:
        self.names = {k: tuple(ipaddress.ip_address(a) for a in v) for k, v in names.items()}
        self.own = frozenset(ipaddress.ip_address(a) for a in own)
        self.lookups: list[str] = []

    def resolve(self, host: str) -> tuple[IPAddress, ...]:
        self.lookups.append(host)
        if host == "broken.test":
            raise PolicyError("cannot resolve 'broken.test': temporary failure")
        return self.names.get(host, ())

    def local_addresses(self) -> frozenset[IPAddress]:
        return self.own


def decide(policy: Policy, host: str, port: int, view: FakeView) -> tuple[Admission, list[Decision]]:
    refused: list[Decision] = []

    def refuse(act: Act, decision: Decision) -> None:
        refused.append(decision)

    return admit(policy, host, port, decide=policy.check, refuse=refuse, view=view), refused


VIEW = FakeView({
    "evil.test": ("169.254.169.254",),
    "mixed.test": ("10.0.0.1", "169.254.169.254"),
    "fine.test": ("10.0.0.1", "10.0.0.2"),
    "metadata.internal": ("169.254.169.254",),
    "here.test": ("192.0.2.2",),
}, own=("192.0.2.2",))


def test_a_name_that_resolves_to_a_denied_address_is_refused_and_recorded() -> None:
    policy = Policy.from_lists(tier="full", deny_net=["169.254.169.254"])
    admission, refused = decide(policy, "evil.test", 80, VIEW)
    assert not admission.admitted
    assert "evil.test resolves to 169.254.169.254" in admission.reason
    assert [d.rule for d in refused] == ["169.254.169.254"]


def test_every_resolved_address_is_checked() -> None:
    policy = Policy.from_lists(tier="full", deny_net=["169.254.169.254"])
    assert not decide(policy, "mixed.test", 80, VIEW)[0].admitted
    fine, refused = decide(policy, "fine.test", 80, VIEW)
    assert fine.admitted and refused == []
    assert [str(a) for a in fine.addresses] == ["10.0.0.1", "10.0.0.2"]


def test_a_deny_rule_naming_a_host_covers_that_hosts_addresses() -> None:
    policy = Policy.from_lists(tier="full", deny_net=["metadata.internal"])
    assert not decide(policy, "169.254.169.254", 80, VIEW)[0].admitted
    assert not decide(policy, "evil.test", 80, VIEW)[0].admitted
    assert decide(policy, "fine.test", 80, VIEW)[0].admitted


def test_a_denied_loopback_covers_the_hosts_own_addresses() -> None:
    policy = Policy.from_lists(tier="full", deny_net=["127.0.0.1:8080"])
    assert not decide(policy, "192.0.2.2", 8080, VIEW)[0].admitted
    assert not decide(policy, "here.test", 8080, VIEW)[0].admitted
    assert decide(policy, "here.test", 8081, VIEW)[0].admitted
    # Another machine's address is not this machine.
    assert decide(policy, "192.0.2.3", 8080, VIEW)[0].admitted


def test_a_name_refused_by_name_is_never_looked_up() -> None:
    view = FakeView({})
    policy = Policy.from_lists(tier="full", deny_net=["*.exfil.test"])
    admission, _ = decide(policy, "c2VjcmV0.exfil.test", 443, view)
    assert not admission.admitted
    assert view.lookups == []


def test_a_destination_that_cannot_be_checked_is_refused() -> None:
    policy = Policy.from_lists(tier="full")
    admission, refused = decide(policy, "broken.test", 443, VIEW)
    assert not admission.admitted and "cannot be checked" in admission.reason
    assert refused and refused[0].layer == "builtin"
    assert refused[0].rule == "destination-unchecked"  # every refusal names its rule
    nowhere, unresolved = decide(policy, "nowhere.test", 443, VIEW)
    assert not nowhere.admitted and "no address" in nowhere.reason
    assert [(d.rule, d.layer) for d in unresolved] == [("destination-unresolved", "builtin")]


def test_the_proxy_dials_the_checked_address_with_the_host_header_untouched() -> None:
    received: list[bytes] = []
    with socket.create_server(("127.0.0.1", 0)) as upstream:
        port = upstream.getsockname()[1]

        def serve() -> None:
            conn, _ = upstream.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(4096)
                received.append(data)
                conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nfrom-upstream")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        # The name exists only in the fake view: reaching the server proves the proxy
        # dialled the checked address rather than looking the name up again.
        view = FakeView({"only-in-the-view.invalid": ("127.0.0.1",)})
        proxy = EgressProxy(policy_decider(Policy.from_lists(tier="full"), view))
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.settimeout(10)
                client.connect(str(proxy.socket_path))
                client.sendall(f"GET http://only-in-the-view.invalid:{port}/x HTTP/1.1\r\n"
                               f"Host: only-in-the-view.invalid:{port}\r\n\r\n".encode())
                reply = b""
                while chunk := client.recv(4096):
                    reply += chunk
        finally:
            proxy.close()
        thread.join(10)
    assert reply.endswith(b"from-upstream")
    assert view.lookups == ["only-in-the-view.invalid"]
    assert received[0].startswith(b"GET /x HTTP/1.1\r\n")
    assert f"Host: only-in-the-view.invalid:{port}".encode() in received[0]


def test_an_admission_without_addresses_is_refused() -> None:
    proxy = EgressProxy(lambda host, port: Admission(True, "yes", ()))
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(10)
            client.connect(str(proxy.socket_path))
            client.sendall(b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n")
            reply = client.recv(4096)
    finally:
        proxy.close()
    assert reply.startswith(b"HTTP/1.1 403")
