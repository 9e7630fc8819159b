"""A loopback HTTP proxy that tunnels ``CONNECT`` requests, for the provider proxy tests.

`ConnectProxy()` listens on 127.0.0.1 in a thread. Each ``CONNECT host:port`` is
recorded (`tunnels`, with the ``Proxy-Authorization`` header it carried) and, unless
`refuse` is set, answered ``200`` and spliced to the target, which only ever is another
loopback fake. Any other method is answered 405: the providers speak HTTPS through a
proxy by tunnelling, never by handing the proxy a plain request.
"""

from __future__ import annotations

import select
import socket
import threading
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Tunnel:
    """One CONNECT the proxy received."""

    target: str
    authorization: str | None


@dataclass
class ConnectProxy:
    """A running proxy; `close` stops it (or use it as a context manager)."""

    refuse: int | None = None
    """Answer every CONNECT with this status instead of tunnelling (e.g. 403)."""
    tunnels: list[Tunnel] = field(default_factory=lambda: [])

    def __post_init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ConnectProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed.set()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() on Linux
        except OSError:
            pass
        self._sock.close()
        self._accept.join(5)
        for thread in self._threads:
            thread.join(5)

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._handle, args=(client,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _handle(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                data = client.recv(65536)
                if not data:
                    return
                head += data
            lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {
                k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])
            }
            if method != "CONNECT":
                client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                return
            self.tunnels.append(Tunnel(target, headers.get("proxy-authorization")))
            if self.refuse is not None:
                client.sendall(b"HTTP/1.1 %d Refused\r\ncontent-length: 0\r\n\r\n" % self.refuse)
                return
            host, _, port = target.rpartition(":")
            with socket.create_connection((host, int(port)), timeout=5) as upstream:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self._splice(client, upstream)

    def _splice(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        while not self._closed.is_set():
            readable, _, _ = select.select(list(peers), [], [], 0.2)
            for sock in readable:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                peers[sock].sendall(data)
