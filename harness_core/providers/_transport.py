"""A small HTTP/1.1 client over the standard library: what the providers send requests with.

Why not httpx: importing it and building one `httpx.Client` costs about 170 ms of CPU
(measured on the bench machine: httpx imports its own CLI, which pulls in rich, click
and pygments; httpcore imports trio when it is installed; the client builds a TLS
context from certifi's bundle even for a loopback ``http://`` URL). That alone is
most of `io run`'s start-up budget (0.2 s), and the providers need one thing from
it: POST a JSON body and read the answer, whole or line by line.

What this module does: one `POST` per call; keep-alive connections pooled per
origin (what a streamed reply still sends after its last event is read when the
connection is next taken, so the next step reuses the connection instead of paying a
new TCP, and TLS, handshake, and nobody waits for it in between); a connect timeout
and a read timeout; ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` read from the mapping
it is given (never from `os.environ`); TLS verified against certifi's bundle when it
is installed (httpx's behaviour), the system store otherwise. Failures below HTTP
are raised as `TransportError`, which `_http` turns into a `ProviderError`; no
header value (the key travels in one) ever reaches an error message.

It never retries a request on its own (the provider's retry policy decides), never
decompresses (it asks for identity encoding), and never touches the store or the
terminal.
"""

from __future__ import annotations

import base64
import http.client
import select
import socket
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    import ssl

__all__ = ["Reply", "Timeouts", "Transport", "TransportError"]

_DRAIN_BYTES = 1 << 20
"""A reply left unread after its last event is drained up to this much (waiting at most
`_DRAIN_SECONDS`) before its connection is reused; past either, a new connection."""
_DRAIN_SECONDS = 0.5
_READ_SIZE = 65536
_MAX_IDLE = 4
"""Idle connections kept per origin (one run uses one at a time)."""


class TransportError(Exception):
    """A request that failed below HTTP: no connection, a timeout, a cut or garbled reply.

    Attributes:
        kind: ``ConnectError``, ``ConnectTimeout``, ``ReadTimeout``, ``ReadError``,
            ``RemoteProtocolError`` or ``TLSError``.
        retryable: Whether another try may succeed.
    """

    def __init__(self, kind: str, detail: str, *, retryable: bool) -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.retryable = retryable


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for a connection, and for each read once connected."""

    connect: float
    read: float


class Reply:
    """One HTTP response: status and headers at once, the body on demand.

    Close it (or use it as a context manager): its connection goes back to the pool,
    and whatever of the reply is still unread is read when the connection is next
    taken. Leaving the context manager with an exception closes the connection.
    """

    def __init__(
        self, transport: Transport, origin: str, conn: http.client.HTTPConnection,
        response: http.client.HTTPResponse, timeouts: Timeouts,
    ) -> None:
        self._transport = transport
        self._origin = origin
        self._conn: http.client.HTTPConnection | None = conn
        self._response = response
        self._timeouts = timeouts
        self.status = response.status
        self.headers: dict[str, str] = {k.lower(): v for k, v in response.getheaders()}

    def __enter__(self) -> Reply:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is not None:
            self._discard()  # a reply abandoned half-read is not worth draining
        else:
            self.close()

    def read(self) -> bytes:
        """The whole (rest of the) body."""
        try:
            return self._response.read()
        except (OSError, http.client.HTTPException) as exc:
            self._discard()
            raise _translate(exc, reading=True) from exc

    def text(self) -> str:
        """The whole body as text (UTF-8, undecodable bytes replaced)."""
        return self.read().decode("utf-8", errors="replace")

    def iter_lines(self) -> Iterator[str]:
        """The body as lines without their ending (``\\n``, ``\\r\\n`` or ``\\r``)."""
        pending = b""
        parts: list[bytes] = []  # a line longer than one read, kept in pieces
        read1 = self._response.read1
        while True:
            try:
                chunk = read1(_READ_SIZE)
            except (OSError, http.client.HTTPException) as exc:
                self._discard()
                raise _translate(exc, reading=True) from exc
            if not chunk:
                break
            if b"\n" not in chunk and b"\r" not in chunk:
                parts.append(chunk)
                continue
            if parts:
                pending += b"".join(parts)
                parts = []
            pending += chunk
            if b"\r" in pending:
                # A "\r" at the very end may be half of a "\r\n": wait for the next byte.
                held = pending.endswith(b"\r")
                body = pending[:-1] if held else pending
                lines = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
                pending = lines.pop() + (b"\r" if held else b"")
            else:
                lines = pending.split(b"\n")
                pending = lines.pop()
            for line in lines:
                yield line.decode("utf-8", errors="replace")
        pending += b"".join(parts)
        if pending:
            yield pending.rstrip(b"\r").decode("utf-8", errors="replace")

    def close(self) -> None:
        """Give the connection back to the pool (with what is left of the reply, if any)."""
        conn = self._conn
        if conn is None:
            return
        self._conn = None
        if self._response.will_close:
            conn.close()
            return
        # What follows the last event (a chunked body's terminator, usually) is read
        # when the connection is next taken: by then it has arrived, and the caller
        # did not wait for it.
        pending = None if self._response.isclosed() else self._response
        self._transport.give_back(self._origin, conn, pending)

    def _discard(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


class Transport:
    """POSTs bodies over pooled keep-alive connections; safe to share between threads.

    Args:
        env: Where proxy settings are looked up (``HTTPS_PROXY``, ``HTTP_PROXY``,
            ``NO_PROXY``, in either case); nothing else is read from it.
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(env or {})
        self._idle: dict[str, list[_Idle]] = {}
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None
        self._closed = False

    def __repr__(self) -> str:
        return "Transport()"

    def post(self, url: str, body: bytes, headers: Mapping[str, str], timeouts: Timeouts) -> Reply:
        """Send ``POST url`` with `body` and return the reply once its headers arrived.

        Raises:
            TransportError: No connection, a timeout, or a reply that is not HTTP.
        """
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TransportError("UnsupportedURL", f"not an http(s) URL: {parts.scheme}://…",
                                 retryable=False)
        origin = f"{parts.scheme}://{parts.netloc}"
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        sent = {"host": parts.netloc, "accept-encoding": "identity", **headers,
                "content-length": str(len(body))}
        proxy = self._proxy_for(parts.scheme, parts.hostname)
        if proxy is not None and parts.scheme == "http":
            target = url  # a plain-HTTP proxy takes the absolute URL
            if proxy.auth:
                sent["proxy-authorization"] = proxy.auth
        conn, reused = self._checkout(origin, parts.scheme, parts.hostname, parts.port, proxy,
                                      timeouts)
        sending = True
        try:
            conn.request("POST", target, body=body, headers=sent)
            sending = False
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            if reused and _is_stale(exc):
                # The server closed the idle connection as we reused it: nothing was
                # processed, so one fresh connection is not a retry of the request.
                return self.post(url, body, headers, timeouts)
            raise _translate(exc, reading=not sending) from exc
        return Reply(self, origin, conn, response, timeouts)

    def give_back(
        self,
        origin: str,
        conn: http.client.HTTPConnection,
        pending: http.client.HTTPResponse | None = None,
    ) -> None:
        """Return a connection to the pool; `pending` is a reply not yet read to its end."""
        with self._lock:
            idle = self._idle.setdefault(origin, [])
            if self._closed or len(idle) >= _MAX_IDLE:
                conn.close()
                return
            idle.append((conn, pending))

    def close(self) -> None:
        """Close every idle connection, and each busy one as its reply is closed.

        A request after this still works, on a connection of its own that is closed
        with its reply rather than kept.
        """
        with self._lock:
            self._closed = True
            pools, self._idle = self._idle, {}
        for idle in pools.values():
            for conn, _ in idle:
                conn.close()

    # --- connections -------------------------------------------------------------------

    def _checkout(
        self, origin: str, scheme: str, host: str, port: int | None, proxy: _Proxy | None,
        timeouts: Timeouts,
    ) -> tuple[http.client.HTTPConnection, bool]:
        while True:
            with self._lock:
                idle = self._idle.get(origin)
                if not idle:
                    break
                conn, pending = idle.pop()
            if (pending is None or _drained(conn, pending)) and _is_usable(conn):
                if conn.sock is not None:
                    conn.sock.settimeout(timeouts.read)
                return conn, True
            conn.close()
        return self._connect(scheme, host, port, proxy, timeouts), False

    def _connect(
        self, scheme: str, host: str, port: int | None, proxy: _Proxy | None, timeouts: Timeouts
    ) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if scheme == "https":
            tls = self._tls_context()
            if proxy is not None:
                conn = http.client.HTTPSConnection(proxy.host, proxy.port,
                                                   timeout=timeouts.connect, context=tls)
                tunnel_headers = {"Proxy-Authorization": proxy.auth} if proxy.auth else None
                conn.set_tunnel(host, port, headers=tunnel_headers)
            else:
                conn = http.client.HTTPSConnection(host, port, timeout=timeouts.connect,
                                                   context=tls)
        elif proxy is not None:
            conn = http.client.HTTPConnection(proxy.host, proxy.port, timeout=timeouts.connect)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeouts.connect)
        try:
            conn.connect()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise _translate(exc, reading=False, connecting=True) from exc
        if conn.sock is not None:
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.sock.settimeout(timeouts.read)
        return conn

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            import ssl

            try:
                import certifi

                cafile: str | None = certifi.where()
            except ImportError:
                cafile = None
            self._tls = ssl.create_default_context(cafile=cafile)
        return self._tls

    # --- proxies -----------------------------------------------------------------------

    def _setting(self, name: str) -> str:
        return self._env.get(name) or self._env.get(name.lower()) or ""

    def _proxy_for(self, scheme: str, host: str) -> _Proxy | None:
        raw = self._setting("HTTPS_PROXY" if scheme == "https" else "HTTP_PROXY")
        if not raw or _bypassed(host, self._setting("NO_PROXY")):
            return None
        return _Proxy.parse(raw)


_Idle = tuple[http.client.HTTPConnection, "http.client.HTTPResponse | None"]
"""A pooled connection and the reply it still has to finish reading, if any."""


@dataclass(frozen=True)
class _Proxy:
    host: str
    port: int
    auth: str | None

    @staticmethod
    def parse(raw: str) -> _Proxy | None:
        parts = urlsplit(raw if "://" in raw else "http://" + raw)
        if not parts.hostname:
            return None
        auth = None
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            auth = "Basic " + base64.b64encode(pair.encode()).decode()
        return _Proxy(parts.hostname, parts.port or 8080, auth)


def _bypassed(host: str, no_proxy: str) -> bool:
    host = host.lower().rstrip(".")
    for entry in no_proxy.split(","):
        entry = entry.strip().lower().lstrip(".")
        if entry.startswith("*."):
            entry = entry[2:]
        if entry == "*" or (entry and (host == entry or host.endswith("." + entry))):
            return True
    return False


def _drained(conn: http.client.HTTPConnection, response: http.client.HTTPResponse) -> bool:
    """Read the rest of a reply left in a pooled connection; whether it ended cleanly."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        sock.settimeout(_DRAIN_SECONDS)
        left = _DRAIN_BYTES
        while not response.isclosed() and left > 0:
            chunk = response.read1(_READ_SIZE)
            if not chunk:
                break
            left -= len(chunk)
    except (OSError, http.client.HTTPException):
        return False
    return response.isclosed() and not response.will_close


def _is_usable(conn: http.client.HTTPConnection) -> bool:
    """An idle connection is reusable when the server has not closed (or written to) it."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _is_stale(exc: BaseException) -> bool:
    return isinstance(exc, http.client.RemoteDisconnected | BrokenPipeError |
                      ConnectionResetError)


def _translate(
    exc: BaseException, *, reading: bool, connecting: bool = False
) -> TransportError:
    """A transport failure with its kind and only the exception's own words (no headers)."""
    import ssl

    detail = str(exc) or type(exc).__name__
    if isinstance(exc, ssl.SSLCertVerificationError):
        return TransportError("TLSError", detail, retryable=False)
    if isinstance(exc, TimeoutError | socket.timeout):
        kind = "ConnectTimeout" if connecting else "ReadTimeout" if reading else "WriteTimeout"
        return TransportError(kind, detail, retryable=True)
    if isinstance(exc, http.client.IncompleteRead):
        return TransportError("RemoteProtocolError", "the reply ended early", retryable=True)
    if isinstance(exc, http.client.HTTPException):
        return TransportError("RemoteProtocolError", detail, retryable=True)
    if connecting:
        return TransportError("ConnectError", detail, retryable=True)
    return TransportError("ReadError" if reading else "WriteError", detail, retryable=True)
