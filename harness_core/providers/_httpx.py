"""httpx and httpcore, imported without what io never uses: the one place providers
import httpx from.

Two optional imports of theirs cost start-up for nothing here, measured on a one-step
`io run` under load: httpx's package ``__init__`` imports its command-line client
(``httpx._main``: click, rich.progress, rich.syntax, pygments; ~25 ms), and httpcore
imports trio whenever it is installed (~45 ms, and several MiB), for async code under
trio, which io never runs (its client is synchronous). Both are guarded by
``except ImportError`` in those libraries, so a None entry in `sys.modules` for the
length of the import makes them fall back (httpx to a stub ``main``, httpcore to
``trio = None``); the entries are removed afterwards, so a later ``import trio`` by
anything else works as usual. anyio is held back the same way (httpcore's async locks
use it; ~5 ms): io's client is synchronous, and its locks are `threading`'s. h2 is held back the same way (httpcore's package imports
its HTTP/2 module eagerly, ~10-25 ms): the connection that negotiates HTTP/2 imports it
when it is needed, and `_client` asks for HTTP/2 only when a provider's URL is https.
Nothing is done when httpx was already imported.
"""

from __future__ import annotations

import sys

_SKIPPED = ("httpx._main", "trio", "h2", "anyio")

_blocked = [name for name in _SKIPPED if name not in sys.modules and "httpx" not in sys.modules]
for _name in _blocked:
    sys.modules[_name] = None  # type: ignore[assignment]
try:
    import httpcore  # noqa: F401 - httpx imports it lazily; imported here, under the guard
    import httpx as httpx
finally:
    for _name in _blocked:
        if _name in sys.modules and sys.modules[_name] is None:
            del sys.modules[_name]

__all__ = ["httpx"]
