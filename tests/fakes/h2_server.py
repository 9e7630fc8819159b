"""A loopback HTTPS server that speaks only HTTP/2 (ALPN ``h2``), for the provider test
that HTTP/2 is negotiated when the ``h2`` package is installed.

Each POST is recorded (`requests`: the pseudo-headers and body) and answered with the
event stream `answer` returns for its JSON body. It serves one connection at a time
and knows nothing of any vendor beyond what the test gives it.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Callable
from typing import Any

import h2.config
import h2.connection
import h2.events


class H2Server:
    """Start with a server TLS context; `close` stops it."""

    def __init__(self, context: ssl.SSLContext, answer: Callable[[Any], str]) -> None:
        context.set_alpn_protocols(["h2"])
        self._context = context
        self._answer = answer
        self.requests: list[tuple[dict[str, str], Any]] = []
        self.protocols: list[str | None] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(5)

    def _serve(self) -> None:
        while True:
            try:
                raw, _ = self._sock.accept()
            except OSError:
                return
            try:
                with self._context.wrap_socket(raw, server_side=True) as conn:
                    self.protocols.append(conn.selected_alpn_protocol())
                    self._talk(conn)
            except (OSError, ssl.SSLError):
                continue

    def _talk(self, conn: ssl.SSLSocket) -> None:
        h2c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        h2c.initiate_connection()
        conn.sendall(h2c.data_to_send())
        heads: dict[int, dict[str, str]] = {}
        bodies: dict[int, bytes] = {}
        while True:
            data = conn.recv(65535)
            if not data:
                return
            for event in h2c.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    heads[event.stream_id] = {
                        (k.decode() if isinstance(k, bytes) else k): (
                            v.decode() if isinstance(v, bytes) else v
                        )
                        for k, v in event.headers
                    }
                    bodies[event.stream_id] = b""
                elif isinstance(event, h2.events.DataReceived):
                    bodies[event.stream_id] += event.data
                    h2c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    self._respond(h2c, event.stream_id, heads[event.stream_id],
                                  bodies[event.stream_id])
            conn.sendall(h2c.data_to_send())

    def _respond(
        self, h2c: h2.connection.H2Connection, stream_id: int, head: dict[str, str], raw: bytes
    ) -> None:
        body = json.loads(raw)
        self.requests.append((head, body))
        payload = self._answer(body).encode()
        h2c.send_headers(stream_id, [(":status", "200"), ("content-type", "text/event-stream")])
        h2c.send_data(stream_id, payload, end_stream=True)
