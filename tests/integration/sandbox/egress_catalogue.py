"""The egress catalogue (#22): spellings and routes that all name this machine on one port.

Shared by the proxy-level test (`test_egress_catalogue.py`, the real `EgressProxy` on
its unix socket) and the end-to-end one (a probe inside the native sandbox). The
oracle is `Counter`: listeners on one port at 127.0.0.1 and at every other local
address that can be bound (127.0.0.2, ::1, the interfaces), each counting the
connections it accepts. A denied port must count 0 after every entry; the same
spelling on an allowed port must be counted (the negative control: the spelling is a
real route, so a 0 on the denied port means the proxy refused it, not that it went
nowhere).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import psutil


@dataclass(frozen=True)
class Entry:
    """One attempt: a request head with ``{port}`` (and ``{other}``) to fill in.

    Attributes:
        name: What the entry tries.
        head: The request head sent to the proxy.
        reaches: Whether the same request on the allowed port is known to reach a
            listener here (the negative control); False for routes with no listener.
    """

    name: str
    head: str
    reaches: bool = True

    def render(self, port: int, other: int) -> bytes:
        return self.head.format(port=port, other=other).encode("latin-1")


def _connect(host: str) -> str:
    return f"CONNECT {host}:{{port}} HTTP/1.1\r\nHost: {host}:{{port}}\r\n\r\n"


def _get(host: str) -> str:
    return f"GET http://{host}:{{port}}/ HTTP/1.1\r\nHost: {host}:{{port}}\r\n\r\n"


SPELLINGS: tuple[tuple[str, bool], ...] = (
    ("127.0.0.1", True),
    ("127.1", True),
    ("127.0.1", True),
    ("2130706433", True),
    ("0x7f000001", True),
    ("0X7F000001", True),
    ("0x7f.1", True),
    ("0x7f.0.0.0x1", True),
    ("0177.0.0.1", True),
    ("0177.1", True),
    ("017700000001", True),
    ("127.000.000.001", True),
    ("0.0.0.0", True),
    ("0", True),
    ("127.0.0.2", True),
    ("127.0.0.1.", True),
    ("[::1]", True),
    ("[0:0:0:0:0:0:0:1]", True),
    ("[::0:1]", True),
    ("[::ffff:127.0.0.1]", True),
    ("[::FFFF:7f00:1]", True),
    ("[0:0:0:0:0:ffff:7f00:1]", True),
    ("[::]", True),
    ("[::127.0.0.1]", False),
    ("[64:ff9b::7f00:1]", False),
    ("[2002:7f00:1::]", False),
    ("localhost", True),
    ("LOCALHOST", True),
    ("LocalHost", True),
    ("localhost.", False),
)
"""(host as written in a request, reaches a listener here)."""


def local_names() -> list[str]:
    """Names in /etc/hosts and this machine's name that resolve to a local address."""
    names: list[str] = [socket.gethostname()]
    try:
        lines = Path("/etc/hosts").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split("#", 1)[0].split()
        names += fields[1:]
    out: list[str] = []
    for name in dict.fromkeys(names):
        if name.lower().startswith("localhost"):
            continue
        try:
            found = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
        except OSError:
            continue
        if all(_is_here(ipaddress.ip_address(str(info[4][0]).split("%")[0])) for info in found):
            out.append(name)
    return out


def own_addresses() -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """This machine's non-loopback interface addresses (link-local ones left out)."""
    out: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            address = ipaddress.ip_address(entry.address.split("%")[0])
            if not address.is_loopback and not address.is_link_local:
                out.append(address)
    return out


def _is_here(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return address.is_loopback or address in own_addresses()


def _bracket(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return f"[{address}]" if address.version == 6 else str(address)


def catalogue() -> list[Entry]:
    """Every entry: spellings by CONNECT and absolute-URI GET, names, routes."""
    entries: list[Entry] = []
    for host, reaches in SPELLINGS:
        entries.append(Entry(f"CONNECT {host}", _connect(host), reaches))
        entries.append(Entry(f"GET {host}", _get(host), reaches))
    for name in local_names():
        entries.append(Entry(f"CONNECT {name} (hosts file)", _connect(name)))
        entries.append(Entry(f"GET {name} (hosts file)", _get(name)))
    for address in own_addresses():
        entries.append(Entry(f"CONNECT own {address}", _connect(_bracket(address))))
        entries.append(Entry(f"GET own {address}", _get(_bracket(address))))
    entries += [
        Entry("GET userinfo before the host",
              "GET http://x@127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        Entry("GET leading-zero port",
              "GET http://127.0.0.1:0{port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        Entry("CONNECT lower-case method", _connect("127.0.0.1").replace("CONNECT", "connect")),
        Entry("GET upper-case scheme",
              "GET HTTP://127.1:{port}/ HTTP/1.1\r\nHost: 127.1\r\n\r\n"),
    ]
    return entries


MISMATCHES: tuple[Entry, ...] = (
    Entry("GET allowed URI, Host header names the denied port",
          "GET http://127.0.0.1:{other}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"),
    Entry("CONNECT allowed target, Host header names the denied port",
          "CONNECT 127.0.0.1:{other} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"),
    Entry("GET origin-form with only a Host header",
          "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n", reaches=False),
    Entry("GET userinfo that looks like the allowed target",
          "GET http://127.0.0.1:{other}@127.0.0.1:{port}/ HTTP/1.1\r\n\r\n", reaches=False),
)
"""Routes where the Host header or the URL's userinfo names another target than the
request line: the proxy dials the request line's target only."""


class Counter:
    """Listeners on one port at every bindable local address, counting accepts."""

    def __init__(self) -> None:
        self.count = 0
        self.addresses: list[str] = []
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        first = socket.create_server(("127.0.0.1", 0))
        self.port = first.getsockname()[1]
        self._add(first, "127.0.0.1")
        extra = [ipaddress.ip_address("127.0.0.2"), ipaddress.ip_address("::1"), *own_addresses()]
        for address in extra:
            family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
            try:
                sock = socket.create_server((str(address), self.port), family=family)
            except OSError:
                continue
            self._add(sock, str(address))

    def _add(self, sock: socket.socket, address: str) -> None:
        self._sockets.append(sock)
        self.addresses.append(address)
        threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with self._lock:
                self.count += 1
            # Counted before answering: a client that read the answer sees the count.
            with conn:
                try:
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\ncounted")
                except OSError:
                    pass

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()
