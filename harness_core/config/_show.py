"""What `io config show` prints: every value set by a file, with its scope, redacted.

This module turns annotated trees into flat `ShownValue`s and redacts them; it never
writes to the terminal (the CLI renders the list) and never returns a secret.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection, Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import Any

from harness_core._record import record
from harness_core.config._scopes import Scope
from harness_core.config._tree import Node, Sourced, dotted

__all__ = ["MIN_SCRUB_LENGTH", "REDACTED", "ShownValue", "flatten", "redact", "render"]

REDACTED = "***"
"""What a secret is replaced with."""


@record
class ShownValue:
    """One value of the merged configuration and where it came from.

    Attributes:
        key: Dotted key, e.g. ``provider.model`` or ``contract.verify[0].command``.
        value: JSON-able value, secrets replaced by ``***``.
        scope: The scope whose file set it.
        file: That file.
        held: The system scope's requirement that holds it (``requirements.max_steps``),
            or None: no lower scope, flag or definition may loosen a held value.
    """

    key: str
    value: Any
    scope: Scope
    file: Path
    held: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON object: key, value, scope, file, held (null when no requirement holds it)."""
        return {
            "key": self.key,
            "value": self.value,
            "scope": self.scope.value,
            "file": str(self.file),
            "held": self.held,
        }


MIN_SCRUB_LENGTH = 4
"""Secrets shorter than this are not scrubbed from free text. No credential is that
short, and replacing every ``1`` or ``UTC`` in a trace would mangle it while protecting
nothing. The value of a secret key (`api_key`, `[[mcp]] env`) is still shown as ``***``
whatever its length."""


def redact(text: str, secrets: Collection[str], *, min_length: int = MIN_SCRUB_LENGTH) -> str:
    """`text` with every occurrence of every secret replaced by ``***``, longest first.

    Secrets shorter than `min_length` characters are left alone (error messages pass 1).
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= max(min_length, 1):
            text = text.replace(secret, REDACTED)
    return text


def _jsonable(value: Any, secrets: Collection[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Path):
        return redact(str(value), secrets)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_jsonable(v, secrets) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, secrets) for k, v in value.items()}
    return value


def flatten(tree: Mapping[str, Node], secrets: Collection[str]) -> Iterator[ShownValue]:
    """Every leaf of an annotated tree as a `ShownValue`, secret keys as ``***``."""
    yield from _flatten(tree, (), secrets)


def _flatten(
    tree: Mapping[str, Node], path: tuple[str | int, ...], secrets: Collection[str]
) -> Iterator[ShownValue]:
    for key, node in tree.items():
        here = (*path, key)
        if isinstance(node, dict):
            yield from _flatten(node, here, secrets)
            continue
        if isinstance(node.value, list):  # an array of tables
            for index, item in enumerate(node.value):
                yield from _flatten(item, (*here, index), secrets)
            continue
        yield ShownValue(dotted(here), _leaf(node, secrets), node.origin.scope, node.origin.path)


def _leaf(node: Sourced, secrets: Collection[str]) -> Any:
    if node.ceiling and node.value is False:
        return None  # "no ceiling"
    if not node.secret:
        return _jsonable(node.value, secrets)
    if isinstance(node.value, Mapping):
        return {str(k): REDACTED for k in node.value}
    return REDACTED


def render(values: Collection[ShownValue]) -> str:
    """Plain text, one ``key = value  # scope (file)`` line per value, ``held by
    requirements.KEY`` added where a requirement holds it."""
    lines = [f"{v.key} = {json.dumps(v.value)}  # {v.scope.value} ({v.file})"
             + (f", held by {v.held}" if v.held else "") for v in values]
    return "\n".join(lines) + ("\n" if lines else "")
