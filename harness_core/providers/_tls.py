"""Which certificates the HTTP providers trust: one store, chosen explicitly.

The order is fixed and documented (docs/guide/providers.md): the operating system's
store through `truststore` (a base dependency), and certifi's Mozilla bundle only when
truststore cannot be imported. Whatever PEM files `[provider] ca_bundle` names are
trusted in addition (a corporate CA that re-signs traffic). Nothing here depends on
which unrelated packages happen to be installed, and nothing reads ``SSL_CERT_FILE``
itself (OpenSSL's own default-path lookup, which truststore uses on Linux, still may).
`trust_store` only describes the choice (for `io config show`) and imports nothing
heavy; `ssl_context` builds it. Never opens a connection.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness_core._record import record
from harness_core.errors import ConfigError

if TYPE_CHECKING:
    import ssl

__all__ = ["TrustStore", "ssl_context", "trust_store"]


@record
class TrustStore:
    """The trust store the HTTP providers verify servers against.

    Attributes:
        kind: ``system`` (the OS store through truststore) or ``certifi``.
        source: Where it comes from: ``truststore`` or the certifi bundle's path.
        ca_bundles: Extra PEM files trusted in addition (`[provider] ca_bundle`).
    """

    kind: str
    source: str
    ca_bundles: tuple[Path, ...] = ()

    def describe(self) -> str:
        """One line for humans, e.g. ``system (truststore) + /etc/corp-ca.pem``."""
        text = f"{self.kind} ({self.source})"
        return text + "".join(f" + {path}" for path in self.ca_bundles)


def trust_store(ca_bundles: Sequence[Path] = ()) -> TrustStore:
    """Say which store `ssl_context` would build, without building it.

    Args:
        ca_bundles: The `[provider] ca_bundle` files of the run's providers.

    Returns:
        The store: the system's when truststore is installed, else certifi's.

    Raises:
        ConfigError: Neither truststore nor certifi is installed.
    """
    extra = tuple(dict.fromkeys(ca_bundles))
    if importlib.util.find_spec("truststore") is not None:
        return TrustStore("system", "truststore", extra)
    return TrustStore("certifi", _certifi_path(), extra)


def ssl_context(ca_bundles: Sequence[Path] = ()) -> ssl.SSLContext:
    """A client TLS context over the chosen store plus every file in `ca_bundles`.

    Raises:
        ConfigError: A `ca_bundle` file cannot be read or holds no certificate, or
            no store is installed.
    """
    import ssl

    store = trust_store(ca_bundles)
    context: ssl.SSLContext
    if store.kind == "system":
        import truststore

        context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    else:
        context = ssl.create_default_context(cafile=store.source)
    for path in store.ca_bundles:
        try:
            context.load_verify_locations(cafile=str(path))
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"[provider] ca_bundle {path}: not a readable PEM file of certificates ({exc})",
                hint="point ca_bundle at your CA's certificate in PEM form",
            ) from exc
    return context


def _certifi_path() -> str:
    try:
        import certifi
    except ImportError as exc:
        raise ConfigError(
            "no TLS trust store: neither truststore nor certifi is installed",
            hint="pip install truststore",
        ) from exc
    return str(certifi.where())
