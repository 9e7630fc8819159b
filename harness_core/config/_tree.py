"""The annotated tree a scope file becomes: every leaf with the file that set it.

Tables are dicts; a leaf (a value, a plain array, an inline table of strings) and an
array of tables (replaced wholesale by a higher scope) are `Sourced`. This module has
no dependency beyond the standard library and `_scopes`.
"""

from __future__ import annotations

import re
from typing import Any

from harness_core._record import record
from harness_core.config._scopes import ConfigFile

__all__ = ["RULE_KEYS", "Node", "Sourced", "dotted"]

RULE_KEYS = tuple(
    f"{effect}_{kind}" for kind in ("read", "write", "exec", "net", "mcp")
    for effect in ("allow", "deny")
)
"""The `[policy]` rule lists; every scope's rules are kept, never merged as scalars."""


@record
class Sourced:
    """A checked, substituted value and the file that set it.

    Attributes:
        value: The value as validated (an array of tables holds a list of trees).
        origin: The scope file that set it.
        secret: Its key holds a credential (shown as ``***``).
        ceiling: Its key is a ceiling, where `false` means "no ceiling".
    """

    value: Any
    origin: ConfigFile
    secret: bool = False
    ceiling: bool = False


Node = Sourced | dict[str, "Node"]
"""An annotated tree: tables are dicts; leaves and arrays of tables are `Sourced`."""

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def dotted(path: tuple[str | int, ...]) -> str:
    """``agents.reviewer.deny_write``, ``contract.verify[1].command``, ``prices.models."a.b"``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = part if _BARE.fullmatch(part) else '"' + part.replace('"', '\\"') + '"'
            out += f".{name}" if out else name
    return out
