"""The run's one `httpx.Client`: trust store, proxies, timeouts, HTTP/2, failure words.

`make_client` builds the synchronous client every HTTP provider of a run shares (a
fallback chain included): TLS verified against `_tls.ssl_context`, HTTP/2 when the
``h2`` package is installed (the ``http2`` extra), proxies taken from the environment
mapping it is given (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, in
either case) rather than from `os.environ`, which httpx would read itself
(``trust_env`` is off: no ``.netrc``, no ``SSL_CERT_FILE`` surprise). `timeouts` splits
a provider's one `timeout_seconds` into httpx's four. `describe_failure` turns an
httpx exception into words and a retry decision without any header value (the key
travels in one). This module imports httpx; only vendor modules import it, so the
scripted provider and `io --help` never load httpx. It never touches the store.
"""

from __future__ import annotations

import importlib.util
import ssl
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness_core.providers._httpx import httpx
from harness_core.providers._tls import ssl_context

__all__ = [
    "describe_failure",
    "direct_transport",
    "has_http2",
    "make_client",
    "proxy_mounts",
    "timeouts",
]

_CONNECT_CEILING = 10.0
"""Seconds to wait for a TCP (and TLS) connection at most: an API that does not accept
within 10 s is down or unreachable, and the retry (or the fallback) does better."""
_WRITE_CEILING = 30.0
"""Seconds to send one request body at most (a long conversation is a few MB)."""
_POOL_CEILING = 10.0
"""Seconds to wait for a free pooled connection (one run uses one at a time)."""
_MAX_CONNECTIONS = 8
_KEEPALIVE = 4
"""Idle connections kept (one per origin a run speaks to is the common case)."""


def has_http2() -> bool:
    """Whether the ``h2`` package (the ``http2`` extra) is installed."""
    return importlib.util.find_spec("h2") is not None


def timeouts(seconds: float) -> httpx.Timeout:
    """httpx's four timeouts from one ``timeout_seconds``: read waits the full time
    (a model may think before its first token); connect, write and pool are capped."""
    return httpx.Timeout(
        connect=min(_CONNECT_CEILING, seconds),
        read=seconds,
        write=min(_WRITE_CEILING, seconds),
        pool=min(_POOL_CEILING, seconds),
    )


def make_client(
    env: Mapping[str, str],
    *,
    ca_bundles: Sequence[Path] = (),
    timeout_seconds: float = 120.0,
    urls: Sequence[str] = ("https://",),
) -> httpx.Client:
    """The synchronous client of one run.

    Args:
        env: Where proxy settings are looked up; nothing else is read from it.
        ca_bundles: PEM files trusted in addition to the store (`ca_bundle`).
        timeout_seconds: The default timeout (providers pass their own per request).
        urls: The base URLs the client will reach. HTTP/2 is offered (with ``h2``
            installed) only when one is https: it is negotiated in the TLS handshake,
            so a plain-http server (a local model) never speaks it.

    Raises:
        ConfigError: A `ca_bundle` cannot be loaded, or no trust store is installed.
    """
    https = any(url.startswith("https://") for url in urls)
    verify = ssl_context(ca_bundles) if https or ca_bundles or _proxied(env) else _no_tls()
    http2 = https and has_http2()
    limits = httpx.Limits(max_connections=_MAX_CONNECTIONS, max_keepalive_connections=_KEEPALIVE)
    mounts = proxy_mounts(env, verify=verify, http2=http2, limits=limits)
    transport = httpx.HTTPTransport(verify=verify, http2=http2, limits=limits)
    client = httpx.Client(
        transport=transport,
        timeout=timeouts(timeout_seconds),
        mounts=mounts,
        trust_env=False,
        follow_redirects=False,
    )
    if isinstance(getattr(client, "_cookies", None), httpx.Cookies):
        client._cookies = _ReplyCookies()
    if not mounts:
        _DIRECT[client] = transport
    return client


_DIRECT: weakref.WeakKeyDictionary[httpx.Client, httpx.BaseTransport] = (
    weakref.WeakKeyDictionary())
"""The transport of each client `make_client` built with no proxy: every URL it is
asked for goes to that one transport."""


def direct_transport(client: httpx.Client) -> httpx.BaseTransport | None:
    """The transport every request of `client` goes through, when `make_client` built
    it with no proxy (so no mount routes any URL elsewhere); None for any other client
    (one a caller built, a test's mock), which is used through its `send`."""
    return _DIRECT.get(client)


class _ReplyCookies(httpx.Cookies):
    """The client's cookie jar, which looks at a reply only when it sets a cookie.

    httpx hands every reply to the standard library's cookie machinery (a
    `urllib.request.Request` built per reply, the URL parsed again, the headers
    scanned): a tenth of a millisecond per model call, for API replies that mostly set
    none. A reply with ``Set-Cookie`` is handled exactly as before, so a vendor's
    cookie (a load balancer's, say) still goes back with the next request.
    """

    def extract_cookies(self, response: httpx.Response) -> None:
        if "set-cookie" in response.headers:
            super().extract_cookies(response)


def _proxied(env: Mapping[str, str]) -> bool:
    return any(_setting(env, name) for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"))


def _no_tls() -> ssl.SSLContext:
    """The context of a client that never speaks TLS: every URL plain http, no proxy,
    no redirect followed. It verifies certificates and host names but trusts no CA, so
    a TLS connection through it fails closed. Building the real store would import
    truststore (~13 ms of start-up) for a local model's plain-http server."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _setting(env: Mapping[str, str], name: str) -> str:
    return (env.get(name) or env.get(name.lower()) or "").strip()


def proxy_mounts(
    env: Mapping[str, str], *, verify: ssl.SSLContext, http2: bool, limits: httpx.Limits
) -> dict[str, httpx.BaseTransport | None]:
    """httpx mounts for the proxies `env` names; a ``NO_PROXY`` host maps to None (direct).

    ``NO_PROXY`` entries match the host and its subdomains (``example.com`` and
    ``.example.com`` both cover ``api.example.com``); ``*`` turns every proxy off.
    """
    proxies = {
        scheme: url
        for scheme, name in (("http", "HTTP_PROXY"), ("https", "HTTPS_PROXY"), ("all", "ALL_PROXY"))
        if (url := _setting(env, name))
    }
    if not proxies:
        return {}
    bypass = [e.strip().lower() for e in _setting(env, "NO_PROXY").split(",") if e.strip()]
    if "*" in bypass:
        return {}
    mounts: dict[str, httpx.BaseTransport | None] = {}
    for scheme, url in proxies.items():
        proxy = url if "://" in url else "http://" + url
        mounts[f"{scheme}://"] = httpx.HTTPTransport(
            proxy=proxy, verify=verify, http2=http2, limits=limits
        )
    for entry in bypass:
        host = entry.removeprefix("*.").lstrip(".")
        if "://" in host:
            mounts[host] = None
            continue
        if host.count(":") > 1 and not host.startswith("["):
            host = f"[{host}]"  # a bare IPv6 address
        mounts[f"all://{host}"] = None
        if not host.startswith("[") and not host.split(":")[0].replace(".", "").isdigit():
            mounts[f"all://*.{host}"] = None
    return mounts


def describe_failure(exc: httpx.HTTPError) -> tuple[str, bool, bool]:
    """Words for a failure below HTTP, whether it is worth a retry, and whether it is a
    TLS certificate that did not verify.

    Only the exception's own words are used: httpx never puts header values in them.
    """
    cert = _cert_error(exc)
    if cert is not None:
        host = _host_of(exc)
        what = f"TLS certificate of {host}" if host else "TLS certificate"
        return f"{what} not trusted ({cert.verify_message or cert})", False, True
    kind = type(exc).__name__
    detail = str(exc) or kind
    if isinstance(exc, httpx.ProxyError):
        return f"ProxyError: {detail}", False, False
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL | httpx.DecodingError):
        return f"{kind}: {detail}", False, False
    if isinstance(exc, httpx.TooManyRedirects):
        return f"{kind}: {detail}", False, False
    return f"{kind}: {detail}", True, False


def _host_of(exc: httpx.HTTPError) -> str:
    try:
        return str(exc.request.url.host)
    except RuntimeError:  # an exception raised without its request
        return ""


def _cert_error(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLCertVerificationError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
