"""An in-process OTLP/HTTP traces receiver on loopback, built from the official proto
package: it decodes every `ExportTraceServiceRequest` and keeps the raw bytes too, so a
test can assert on spans and grep what crossed the wire."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


@dataclass(frozen=True)
class Span:
    """A received span, flattened for assertions."""

    name: str
    span_id: bytes
    parent_id: bytes
    trace_id: bytes
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    start: int
    end: int


@dataclass
class OtlpReceiver:
    """`url` takes POSTs at /v1/traces; `spans()` decodes everything received."""

    bodies: list[bytes] = field(default_factory=lambda: [])
    headers: list[dict[str, str]] = field(default_factory=lambda: [])
    paths: list[str] = field(default_factory=lambda: [])
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with receiver.lock:
                    receiver.bodies.append(body)
                    receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                    receiver.paths.append(self.path)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def spans(self) -> list[Span]:
        out: list[Span] = []
        with self.lock:
            bodies = list(self.bodies)
        for body in bodies:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    for s in scope.spans:
                        out.append(Span(
                            s.name, s.span_id, s.parent_span_id, s.trace_id,
                            {a.key: _value(a.value) for a in s.attributes},
                            [(e.name, {a.key: _value(a.value) for a in e.attributes})
                             for e in s.events],
                            s.status.code, s.start_time_unix_nano, s.end_time_unix_nano))
        return out

    def resources(self) -> list[dict[str, Any]]:
        out = []
        for body in self.bodies:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            out += [{a.key: _value(a.value) for a in r.resource.attributes}
                    for r in request.resource_spans]
        return out
