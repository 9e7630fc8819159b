"""The system scope's `[requirements]` table read into a `Requirements`, strictly.

An unknown key, a wrong type or an unknown tier, approval mode or backend is a
`ConfigError` naming the key and the file; a version range is checked with `packaging`,
and refused when that package is missing (a range io cannot check is not one it meets).
This module reads no file and no environment.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness_core.config._requirements import CEILINGS, McpAllowed, Requirements
from harness_core.errors import ConfigError, PolicyError
from harness_core.policy import ApprovalMode, Tier
from harness_core.sandbox import BackendChoice

__all__ = ["parse", "specifier_set"]

_STRINGS = ("providers", "models", "base_url_hosts", "hooks")
_KEYS = frozenset({*Requirements.__dataclass_fields__} - {"source"})


def parse(table: Any, source: Path) -> Requirements:
    """The `[requirements]` table of the system scope file `source`, checked strictly.

    Raises:
        ConfigError: An unknown key, a wrong type, or an unknown tier, mode or backend
            (the message names the key and the file).
    """
    where = f"system scope ({source})"
    if not isinstance(table, Mapping):
        raise ConfigError(f"'requirements' in {where} must be a table")
    values: dict[str, Any] = {"source": source}
    for key, value in table.items():  # pyright: ignore[reportUnknownVariableType]
        name = str(key)  # pyright: ignore[reportUnknownArgumentType]
        if name not in _KEYS:
            raise ConfigError(f"unknown key 'requirements.{name}' in {where}",
                              hint="see the [requirements] section of docs/guide/configuration.md")
        try:
            values[name] = _value(name, value)
        except (ValueError, TypeError, PolicyError) as exc:
            raise ConfigError(f"'requirements.{name}' in {where}: {exc}") from None
    return Requirements(**values)


def _value(name: str, value: Any) -> Any:
    if name == "max_tier":
        return Tier.parse(_string(value))
    if name == "approval":
        return tuple(ApprovalMode.parse(v) for v in _strings(value))
    if name == "sandbox_backends":
        return tuple(BackendChoice(v) for v in _strings(value))
    if name in ("sandbox_fallback", "telemetry"):
        if not isinstance(value, bool):
            raise TypeError("must be true or false")
        return value
    if name in CEILINGS:
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise TypeError("must be a number, 0 or more")
        return float(value) if name in ("max_cost_usd", "wall_seconds") else int(value)
    if name in _STRINGS:
        return _strings(value)
    if name == "mcp":
        return tuple(_mcp(item) for item in _list(value))
    if name == "telemetry_endpoint":
        endpoint = _string(value)
        if urlsplit(endpoint).scheme not in ("http", "https"):
            raise ValueError("must be an http(s) URL")
        return endpoint
    return _version(_string(value))


def _string(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError("must be a non-empty string")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("must be an array")
    return list(value)  # pyright: ignore[reportUnknownArgumentType]


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(_string(v) for v in _list(value))


def _mcp(item: Any) -> McpAllowed:
    if not isinstance(item, Mapping):
        raise TypeError("each entry must be a table with name and command or url")
    entry: dict[str, Any] = {str(k): v for k, v in item.items()}  # pyright: ignore[reportUnknownVariableType]
    if set(entry) - {"name", "command", "url"} or "name" not in entry \
            or ("command" in entry) == ("url" in entry):
        raise ValueError("each entry takes a name and exactly one of command and url")
    command, url = entry.get("command"), entry.get("url")
    return McpAllowed(_string(entry["name"]), None if command is None else _string(command),
                      None if url is None else _string(url))


def _version(spec: str) -> str:
    try:
        specifier_set(spec)
    except ImportError:  # fail closed: a range io cannot check is not a range it meets
        raise ValueError("checking a version range needs the `packaging` package"
                         " (pip install packaging)") from None
    return spec


@functools.lru_cache(maxsize=8)
def specifier_set(spec: str) -> Any:
    """`spec` parsed as a `packaging` `SpecifierSet` (parsed once a process).

    Raises:
        ImportError: `packaging` is not installed.
        ValueError: `spec` is not a PEP 440 version range.
    """
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        raise ValueError(f"{spec!r} is not a version range like '>=0.1,<1'") from None
