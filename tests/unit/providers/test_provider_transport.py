"""The standard-library HTTP transport: line framing, keep-alive reuse, stale connections,
timeouts and proxies, against raw loopback sockets that send exactly the bytes a test
gives them."""

from __future__ import annotations

import base64
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from harness_core.providers._transport import (
    Timeouts,
    Transport,
    TransportError,
    _bypassed,
    _Proxy,
)

FAST = Timeouts(connect=2.0, read=2.0)


def chunked(*pieces: bytes, close: bool = False) -> bytes:
    """A 200 response whose chunked body is exactly `pieces` (one chunk each)."""
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
    if close:
        head += b"connection: close\r\n"
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)
    return head + b"\r\n" + body + b"0\r\n\r\n"


def fixed(body: bytes, status: int = 200) -> bytes:
    return b"HTTP/1.1 %d X\r\ncontent-length: %d\r\n\r\n%s" % (status, len(body), body)


@dataclass
class RawServer:
    """Answers each request on a connection with the next scripted byte string.

    A script entry of None closes the connection instead of answering.
    """

    script: list[bytes | None]
    requests: list[bytes] = field(default_factory=lambda: [])
    connections: int = 0
    hang: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while self.script:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                self._answer_all(conn)

    def _answer_all(self, conn: socket.socket) -> None:
        buffer = b""
        while self.script:
            while b"\r\n\r\n" not in buffer:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
            head, _, rest = buffer.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(rest) < length:
                rest += conn.recv(65536)
            self.requests.append(head + b"\r\n\r\n" + rest[:length])
            buffer = rest[length:]
            reply = self.script.pop(0)
            if reply is None:
                return
            if reply == b"HANG":
                self.hang.wait(10)
                return
            conn.sendall(reply)

    def close(self) -> None:
        self.hang.set()
        self.script.clear()
        self.sock.close()
        self.thread.join(5)


@pytest.fixture
def raw() -> Iterator[Callable[..., RawServer]]:
    servers: list[RawServer] = []

    def start(*script: bytes | None) -> RawServer:
        server = RawServer(list(script))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def _lines(transport: Transport, url: str) -> list[str]:
    with transport.post(url + "/x", b"{}", {"content-type": "application/json"}, FAST) as reply:
        return list(reply.iter_lines())


def test_lines_are_framed_across_reads_and_every_line_ending(
    raw: Callable[..., RawServer],
) -> None:
    server = raw(chunked(b"data: a", b"b\r", b"\nevent: x\rdata: \xe2\x9c", b"\x93\n\n",
                         b"x" * 70000, b"y\ntail"))
    transport = Transport()
    try:
        lines = _lines(transport, server.url)
    finally:
        transport.close()
    assert lines == ["data: ab", "event: x", "data: ✓", "", "x" * 70000 + "y", "tail"]


def test_a_stream_left_unfinished_is_drained_later_and_its_connection_reused(
    raw: Callable[..., RawServer],
) -> None:
    server = raw(chunked(b"data: 1\n\n", b"data: [DONE]\n\n"), fixed(b"{}"), fixed(b"{}"))
    transport = Transport()
    try:
        url = server.url + "/x"
        with transport.post(url, b"{}", {}, FAST) as reply:
            first = next(iter(reply.iter_lines()))  # stop after one line, as a parser may
        for _ in range(2):
            with transport.post(url, b"{}", {}, FAST) as reply:
                assert reply.read() == b"{}"
    finally:
        transport.close()
    assert first == "data: 1"
    assert server.connections == 1
    assert server.requests[0].startswith(b"POST /x HTTP/1.1\r\n")
    assert b"accept-encoding: identity" in server.requests[0].lower()


def test_an_idle_connection_the_server_closed_is_replaced_without_an_error(
    raw: Callable[..., RawServer],
) -> None:
    server = raw(fixed(b"one"), None, fixed(b"two"))
    transport = Transport()
    try:
        with transport.post(server.url, b"{}", {}, FAST) as reply:
            assert reply.read() == b"one"
        with transport.post(server.url, b"{}", {}, FAST) as reply:
            assert reply.read() == b"two"
    finally:
        transport.close()
    assert server.connections == 2


def test_a_silent_server_is_a_retryable_read_timeout(raw: Callable[..., RawServer]) -> None:
    server = raw(b"HANG")
    transport = Transport()
    try:
        with pytest.raises(TransportError) as info:
            transport.post(server.url, b"{}", {}, Timeouts(connect=2.0, read=0.2))
    finally:
        transport.close()
    assert info.value.kind == "ReadTimeout" and info.value.retryable


def test_a_refused_connection_is_a_retryable_connect_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    transport = Transport()
    with pytest.raises(TransportError) as info:
        transport.post(f"http://127.0.0.1:{port}/x", b"{}", {}, FAST)
    assert info.value.kind == "ConnectError" and info.value.retryable


def test_a_plain_http_proxy_gets_the_absolute_url_and_its_credentials(
    raw: Callable[..., RawServer],
) -> None:
    proxy = raw(fixed(b"via proxy"))
    transport = Transport({"http_proxy": f"http://me:s%40cret@127.0.0.1:{proxy.port}"})
    try:
        with transport.post("http://vendor.invalid:8080/v1/x", b"{}", {}, FAST) as reply:
            assert reply.read() == b"via proxy"
    finally:
        transport.close()
    request = proxy.requests[0]
    assert request.startswith(b"POST http://vendor.invalid:8080/v1/x HTTP/1.1\r\n")
    assert b"host: vendor.invalid:8080" in request.lower()
    expected = base64.b64encode(b"me:s@cret")
    assert b"proxy-authorization: basic " + expected in request.lower().replace(
        expected.lower(), expected)


@pytest.mark.parametrize(
    ("host", "no_proxy", "bypassed"),
    [
        ("api.openai.com", "", False),
        ("api.openai.com", "openai.com", True),
        ("api.openai.com", ".openai.com", True),
        ("api.openai.com", "*.openai.com", True),
        ("notopenai.com", "openai.com", False),
        ("127.0.0.1", "localhost, 127.0.0.1", True),
        ("anything", "*", True),
    ],
)
def test_no_proxy_matches_hosts_and_domains(host: str, no_proxy: str, bypassed: bool) -> None:
    assert _bypassed(host, no_proxy) is bypassed


def test_a_proxy_url_without_scheme_or_port_gets_defaults() -> None:
    assert _Proxy.parse("proxy.local") == _Proxy("proxy.local", 8080, None)
    assert _Proxy.parse("http://u:p@proxy.local:3128") == _Proxy(
        "proxy.local", 3128, "Basic " + base64.b64encode(b"u:p").decode())
