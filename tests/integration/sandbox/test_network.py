"""No network inside the native backend: TCP, UDP and DNS, each against a control outside."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from harness_core.sandbox import Selected

from .conftest import Sandbox

TCP = """
import errno, socket, sys
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) as s:
        s.sendall(b"hello")
    print("connected")
except OSError as exc:
    print("failed", errno.errorcode.get(exc.errno, exc.errno))
"""

DNS_QUERY = (
    struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\x04pypi\x03org\x00\x00\x01\x00\x01"
)

UDP = f"""
import errno, socket, sys
try:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto({DNS_QUERY!r}, ("127.0.0.1", int(sys.argv[1])))
    print("sent")
except OSError as exc:
    print("failed", errno.errorcode.get(exc.errno, exc.errno))
"""

RESOLVE = """
import socket
try:
    socket.getaddrinfo("pypi.org", 443)
    print("resolved")
except OSError as exc:
    print("failed", type(exc).__name__)
"""

INTERFACES = (
    "print(sorted(l.split(':')[0].strip() for l in open('/proc/self/net/dev').readlines()[2:]))"
)


@pytest.fixture
def tcp_listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(5)
        yield server


@pytest.fixture
def udp_listener() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        yield server


def pending_datagram(server: socket.socket) -> bytes | None:
    server.setblocking(False)
    try:
        return server.recv(512)
    except BlockingIOError:
        return None


def test_tcp_connect_to_a_host_listener_fails(
    sandbox: Sandbox, native: Selected, off: Selected, tcp_listener: socket.socket
) -> None:
    port = str(tcp_listener.getsockname()[1])
    inside = sandbox.run(native, TCP, args=[port])
    assert inside.stdout.startswith(b"failed")
    control = sandbox.run(off, TCP, args=[port])
    assert control.stdout == b"connected\n"
    connection, _ = tcp_listener.accept()
    with connection:
        assert connection.recv(5) == b"hello"
    tcp_listener.setblocking(False)
    with pytest.raises(BlockingIOError):
        tcp_listener.accept()  # the sandboxed attempt never reached the listener


def test_only_a_private_loopback_exists_inside(
    sandbox: Sandbox, native: Selected, off: Selected
) -> None:
    assert sandbox.run(native, INTERFACES).stdout == b"['lo']\n"
    assert sandbox.run(off, INTERFACES).stdout != b"['lo']\n"


def test_udp_to_a_host_dns_server_fails(
    sandbox: Sandbox, native: Selected, off: Selected, udp_listener: socket.socket
) -> None:
    port = str(udp_listener.getsockname()[1])
    inside = sandbox.run(native, UDP, args=[port])
    assert inside.stdout.startswith(b"failed")
    assert pending_datagram(udp_listener) is None

    control = sandbox.run(off, UDP, args=[port])
    assert control.stdout == b"sent\n"
    assert pending_datagram(udp_listener) == DNS_QUERY


def test_name_resolution_fails(sandbox: Sandbox, native: Selected, off: Selected) -> None:
    control = sandbox.run(off, RESOLVE)
    if control.stdout != b"resolved\n":
        pytest.skip("this host cannot resolve pypi.org itself, so there is no control")
    assert sandbox.run(native, RESOLVE).stdout.startswith(b"failed")


SOCKETS = """
import errno, socket
for name in ("AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK", "AF_PACKET"):
    try:
        socket.socket(getattr(socket, name), socket.SOCK_DGRAM if name != "AF_PACKET" else socket.SOCK_RAW).close()
        print(name, "ok")
    except OSError as exc:
        print(name, errno.errorcode.get(exc.errno, exc.errno))
a, b = socket.socketpair()
a.close(); b.close()
print("socketpair ok")
"""


def test_seccomp_refuses_sockets_other_than_unix(
    sandbox: Sandbox, native: Selected, off: Selected
) -> None:
    inside = sandbox.run(native, SOCKETS).stdout.decode().splitlines()
    assert inside == [
        "AF_UNIX ok",
        "AF_INET EPERM",
        "AF_INET6 EPERM",
        "AF_NETLINK EPERM",
        "AF_PACKET EPERM",
        "socketpair ok",
    ]
    control = sandbox.run(off, SOCKETS).stdout.decode().splitlines()
    assert control[:2] == ["AF_UNIX ok", "AF_INET ok"]
