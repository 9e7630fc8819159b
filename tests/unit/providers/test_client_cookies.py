"""The client's cookie jar and the event stream's text: a reply's ``Set-Cookie`` is
still sent back (the jar only skips replies that set none), and a stream is read as
UTF-8 whatever charset its header names (the WHATWG event-stream rules)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness_core.clock import SystemClock
from harness_core.messages import Message
from harness_core.providers import CompletionRequest, ProviderConfig, build_provider
from tests.fakes.vendor_server import Turn, render_openai


class _Server(ThreadingHTTPServer):
    cookies_seen: list[str | None]
    content_type: str


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.cookies_seen.append(self.headers.get("cookie"))
        first = len(self.server.cookies_seen) == 1
        events = render_openai(Turn(text="café ✓"), "m", True, "openai", False)
        data = "".join(events).encode("utf-8").decode("unicode_escape").encode("utf-8")
        assert "é".encode() in data  # the text itself, not a JSON escape of it
        self.send_response(200)
        self.send_header("content-type", self.server.content_type)
        self.send_header("content-length", str(len(data)))
        if first:
            self.send_header("set-cookie", "lb=node-7; Path=/")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.cookies_seen = []
    httpd.content_type = "text/event-stream"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _complete(server: _Server, times: int) -> list[str]:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    provider = build_provider(
        ProviderConfig(kind="openai", model="m", api_key="k", base_url=url, stream=True),
        env={}, clock=SystemClock())
    try:
        request = CompletionRequest(model="m", messages=(Message.user("hi"),))
        return [provider.complete(request, step=i).text for i in range(times)]
    finally:
        provider.close()


def test_a_cookie_a_reply_sets_goes_back_with_the_next_requests(server: _Server) -> None:
    assert _complete(server, 3) == ["café ✓"] * 3
    assert server.cookies_seen == [None, "lb=node-7", "lb=node-7"]


def test_an_event_stream_is_read_as_utf8_whatever_charset_it_names(server: _Server) -> None:
    server.content_type = "text/event-stream; charset=iso-8859-1"
    assert _complete(server, 1) == ["café ✓"]
