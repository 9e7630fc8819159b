"""The egress proxy: the only way out of a sandbox whose `[sandbox] network = true`.

A sandboxed command always gets its own network namespace (only its own loopback), so
it has no route to anything. With `network = true`, `io` starts one `EgressProxy` for
the run: an HTTP proxy on a unix socket in a private host directory, bound into the
sandbox at `SANDBOX_SOCKET`. Inside, a small forwarder (`FORWARDER`, run by the
interpreter io runs on) listens on the sandbox's loopback, points `HTTP_PROXY`,
`HTTPS_PROXY` (and the lower-case forms) at itself, starts the command as its child,
relays each TCP connection to the unix socket, and exits with the command's status.

The proxy understands `CONNECT host:port` (HTTPS and any other TLS) and absolute-form
plain-HTTP requests (`GET http://host/...`, rewritten to origin form with
`Connection: close`, so one connection reaches one host). Each request names a host and
port; the proxy asks `decide(host, port)`, which the run backs with the policy's
`Act.net` check (deny wins) and which records every refusal. The answer, an
`Admission`, carries the addresses the decision checked (a name is resolved once, by
the decider, and every address it resolves to is checked); the proxy dials those
addresses and nothing else, so there is no second lookup that could answer
differently (DNS rebinding). The request's `Host` header and the TLS server name inside
a tunnel pass untouched. A refused request gets `403` with the reason; an admission
with no address is refused too (fail closed). The proxy decides nothing itself.

Why a namespace plus a unix socket rather than the host's loopback: with the host's
network namespace a command could dial any address directly, and a seccomp filter
cannot tell a proxy's address from any other; a namespace with no route out can.
"""

from __future__ import annotations

import contextlib
import ipaddress
import select
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from harness_core._record import record

__all__ = ["FORWARDER", "SANDBOX_SOCKET", "Admission", "Decide", "EgressProxy", "dial",
           "parse_request"]

SANDBOX_SOCKET = "/run/io-egress.sock"
"""Where the proxy's socket appears inside the sandbox."""



@record
class Admission:
    """A decider's answer about one destination.

    Attributes:
        admitted: Whether the request may go out.
        reason: Why (sent back in the 403 when refused).
        addresses: The addresses the decision checked, in the order to try them: the
            only ones the proxy dials. Empty when refused.
    """

    admitted: bool
    reason: str
    addresses: tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...] = ()


Decide = Callable[[str, int], Admission]
"""(host, port) -> the admission, with the addresses checked."""

_HEAD_LIMIT = 64 * 1024
_TIMEOUT = 30.0
_CONNECT_TIMEOUT = 10.0
_HOP_HEADERS = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


def parse_request(head: bytes) -> tuple[str, int, bytes]:
    """Where a proxy request wants to go, and what to send upstream first.

    Args:
        head: The request line and headers, up to and including the blank line.

    Returns:
        (host, port, bytes to send upstream; empty for CONNECT).

    Raises:
        ValueError: Not a CONNECT or absolute-form http:// request.
    """
    line, _, rest = head.partition(b"\r\n")
    parts = line.split()
    if len(parts) != 3:
        raise ValueError("malformed request line")
    method, target, version = (p.decode("latin-1") for p in parts)
    if method.upper() == "CONNECT":
        url = urlsplit("//" + target)
        if not url.hostname or url.port is None:
            raise ValueError("CONNECT needs host:port")
        return url.hostname, url.port, b""
    url = urlsplit(target)
    if url.scheme.lower() != "http" or not url.hostname:
        raise ValueError("only CONNECT and absolute http:// requests are proxied")
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    headers = [
        h for h in rest.split(b"\r\n")
        if h and h.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS
    ]
    upstream = f"{method} {path} {version}\r\n".encode("latin-1")
    upstream += b"".join(h + b"\r\n" for h in headers) + b"Connection: close\r\n\r\n"
    return url.hostname, url.port or 80, upstream


def _read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _HEAD_LIMIT:
            raise ValueError("request head too large")
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("connection closed before the request was complete")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _reply(conn: socket.socket, status: str, text: str) -> None:
    body = (text + "\n").encode()
    with contextlib.suppress(OSError):
        conn.sendall(
            f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode() + body
        )


def relay(left: socket.socket, right: socket.socket) -> None:
    """Copy bytes both ways until both directions reached EOF (or an error)."""
    open_ends = {left: right, right: left}
    while open_ends:
        ready, _, _ = select.select(list(open_ends), [], [], _TIMEOUT * 10)
        if not ready:
            return
        for source in ready:
            try:
                chunk = source.recv(65536)
            except OSError:
                chunk = b""
            target = open_ends[source]
            if chunk:
                try:
                    target.sendall(chunk)
                    continue
                except OSError:
                    return
            del open_ends[source]
            with contextlib.suppress(OSError):
                target.shutdown(socket.SHUT_WR)


def _sockaddr(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int
) -> tuple[socket.AddressFamily, tuple[str, int] | tuple[str, int, int, int]]:
    if isinstance(address, ipaddress.IPv4Address):
        return socket.AF_INET, (str(address), port)
    zone = address.scope_id
    scope = 0
    if zone:
        scope = int(zone) if zone.isdigit() else socket.if_nametoindex(zone)
    return socket.AF_INET6, (str(ipaddress.IPv6Address(int(address))), port, 0, scope)


def dial(
    addresses: Sequence[ipaddress.IPv4Address | ipaddress.IPv6Address], port: int
) -> socket.socket:
    """Connect to the first of `addresses` that answers on `port`; no name is looked up.

    Raises:
        OSError: None answered (the last failure), or `addresses` is empty.
    """
    failure: OSError = OSError("no address to dial")
    for address in addresses:
        try:
            family, sockaddr = _sockaddr(address, port)
        except OSError as exc:  # an unknown zone id
            failure = exc
            continue
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(_CONNECT_TIMEOUT)
        try:
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            failure = exc
            continue
        return sock
    raise failure


class EgressProxy:
    """One run's egress proxy on a unix socket; `close` stops it and removes the socket.

    Args:
        decide: Admits (host, port) or not, with the reason; called from proxy threads.
    """

    def __init__(self, decide: Decide) -> None:
        self._decide = decide
        self._lock = threading.Lock()
        self._folder = Path(tempfile.mkdtemp(prefix="io-egress-"))
        self.socket_path = self._folder / "egress.sock"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.socket_path))
        self._server.listen(64)
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="io-egress", daemon=True)
        self._thread.start()

    def set_decide(self, decide: Decide) -> None:
        """Replace the decision function (the run attaches its recording gate)."""
        with self._lock:
            self._decide = decide

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(_TIMEOUT)
            try:
                head, rest = _read_head(conn)
                host, port, first = parse_request(head)
            except (ValueError, OSError) as exc:
                _reply(conn, "400 Bad Request", f"io egress proxy: {exc}")
                return
            with self._lock:
                decide = self._decide
            admission = decide(host, port)
            if not admission.admitted or not admission.addresses:
                reason = admission.reason if not admission.admitted else "no address was checked"
                _reply(conn, "403 Forbidden", f"io egress proxy: {host}:{port} refused: {reason}")
                return
            try:
                upstream = dial(admission.addresses, port)
            except OSError as exc:
                _reply(conn, "502 Bad Gateway", f"io egress proxy: {host}:{port}: {exc}")
                return
            with upstream:
                upstream.settimeout(None)
                conn.settimeout(None)
                if first:
                    upstream.sendall(first)
                else:
                    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
                relay(conn, upstream)

    def close(self) -> None:
        """Stop accepting and remove the socket; open tunnels end with the run's commands."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        shutil.rmtree(self._folder, ignore_errors=True)


FORWARDER = r"""
import os, select, signal, socket, sys
path, argv = sys.argv[1], sys.argv[2:]
lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lst.bind(("127.0.0.1", 0))
lst.listen(64)
url = "http://127.0.0.1:%d" % lst.getsockname()[1]
env = dict(os.environ)
for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
    env[k] = url
env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"
child = os.fork()
if child == 0:
    lst.close()
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        os.write(2, ("io: cannot run %s: %s\n" % (argv[0], exc.strerror)).encode())
        os._exit(127)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
peers = {}
watch = [lst]
pidfd = os.pidfd_open(child) if hasattr(os, "pidfd_open") else None
if pidfd is not None:
    watch.append(pidfd)
def drop(s):
    other = peers.pop(s, None)
    if other is not None:
        try:
            other.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        if other not in peers:
            for x in (s, other):
                x.close()
while True:
    done, status = os.waitpid(child, os.WNOHANG)
    if done:
        break
    try:
        ready, _, _ = select.select(watch + list(peers), [], [], 0.5)
    except InterruptedError:
        continue
    for s in ready:
        if s is lst:
            conn, _ = lst.accept()
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                up.connect(path)
            except OSError:
                conn.close()
                continue
            peers[conn], peers[up] = up, conn
        elif s is pidfd:
            continue
        elif s in peers:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if data:
                try:
                    peers[s].sendall(data)
                except OSError:
                    drop(s)
            else:
                drop(s)
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
os._exit(os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 128)
"""
"""The in-sandbox forwarder (run as `python -I -S -c FORWARDER SOCKET PROGRAM ARGS...`)."""
