"""The client's cookie jar and the event stream's text: a reply's ``Set-Cookie`` is
still sent back (the jar only skips replies that set none), a stream is read as UTF-8
whatever charset its header names, and its lines end at CR, LF or CRLF only (the
WHATWG event-stream rules), so a data line carrying an unescaped U+2028 is one line."""

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
    text: str
    line_end: str


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.cookies_seen.append(self.headers.get("cookie"))
        first = len(self.server.cookies_seen) == 1
        events = render_openai(Turn(text=self.server.text), "m", True, "openai", False)
        data = "".join(events).encode("utf-8").decode("unicode_escape").encode("utf-8")
        assert "é".encode() in data  # the text itself, not a JSON escape of it
        data = data.replace(b"\n", self.server.line_end.encode())
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
    httpd.text = "café ✓"
    httpd.line_end = "\n"
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


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"])
def test_a_data_line_is_cut_only_at_cr_or_lf(server: _Server, line_end: str) -> None:
    # U+2028, U+2029 and U+0085 are legal unescaped in a JSON string, and a vendor's
    # encoder may leave them so; `str.splitlines` (httpx's `iter_lines`) breaks a line
    # at each, which cut the event's JSON in two and failed the step as a wrong shape.
    text = "café\u2028one\u2029two\x85three ✓"
    server.text = text
    server.line_end = line_end
    assert _complete(server, 2) == [text] * 2


def test_only_the_run_s_own_unproxied_client_is_sent_through_its_transport() -> None:
    import httpx

    from harness_core.providers._client import direct_transport, make_client

    plain = make_client({}, urls=("http://127.0.0.1:1",))
    proxied = make_client({"HTTP_PROXY": "http://127.0.0.1:9"}, urls=("http://127.0.0.1:1",))
    other = httpx.Client()
    try:
        assert isinstance(direct_transport(plain), httpx.HTTPTransport)
        assert direct_transport(proxied) is None  # a mount may route a URL to the proxy
        assert direct_transport(other) is None
    finally:
        for client in (plain, proxied, other):
            client.close()
