"""httpx, imported without its command-line client: the one place providers import it from.

httpx's package ``__init__`` imports ``httpx._main`` (click, rich.progress, rich.syntax,
pygments) whenever those are installed, which beside typer and rich they are: about
25 ms of a one-step `io run` measured here, for a client io never runs. A None entry in
`sys.modules` makes that import fail, and httpx falls back to a stub ``main`` (its own
``except ImportError`` path). Nothing is changed when httpx was already imported.
"""

from __future__ import annotations

import sys

if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import httpx as httpx  # noqa: E402

__all__ = ["httpx"]
