"""One scope file through the generated plain validator: the normal path of `load`.

The same steps as `_validate` (check before substitution, substitute, check again,
annotate every leaf with its file; then the merged tree as one model), with `_plain`
instead of pydantic. Every function returns None where the plain validator does not
accept something; `load` then starts over with `_validate`, so every verdict an operator
reads is pydantic's. Substitution errors are io's own and the same on both paths. This
module imports no pydantic.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from enum import Enum
from typing import Any

from harness_core.config import _plain
from harness_core.config._scopes import ConfigFile
from harness_core.config._substitute import Substituter
from harness_core.config._tree import Node, Sourced, dotted

__all__ = ["check_file", "is_deferred", "plain_value", "substitute", "unwrap", "validate_merged"]


def check_file(
    raw: Mapping[str, Any],
    cf: ConfigFile,
    subst: Substituter,
    tables: Collection[str] | None = None,
) -> dict[str, Node] | None:
    """`_validate.check_file` without pydantic; None: let pydantic decide.

    Raises:
        ConfigError: A substitution failed (the same error on either path).
    """
    context = {"base_dir": cf.path.parent}
    if _plain.validate(raw, context, pre=True) is None:
        return None
    if tables is not None:
        raw = {key: value for key, value in raw.items() if key in tables}
    resolved = substitute(raw, (), cf, subst)
    model = _plain.validate(resolved, context)
    if model is None:
        return None
    return _annotate(resolved, model, cf)


def validate_merged(tree: Mapping[str, Node]) -> Any:
    """The merged tree as the plain twin of `IoToml`; None: let pydantic decide."""
    return _plain.validate(unwrap(tree), None)


def is_deferred(path: tuple[str | int, ...]) -> bool:
    """Whether the value at `path` is substituted only when it is needed: a provider's
    key, resolved when the provider is built (`Config.provider_for_run`), so a command
    that calls no model never needs it."""
    return (path == ("provider", "api_key")
            or (len(path) == 4 and path[:2] == ("provider", "fallback") and path[3] == "api_key"))


def substitute(value: Any, path: tuple[str | int, ...], cf: ConfigFile,
               subst: Substituter) -> Any:
    """Every string of a parsed file with its `${...}` substitutions made (a deferred
    one only checked)."""
    if isinstance(value, str):
        where = f"'{dotted(path)}' in {cf.describe()}"
        if is_deferred(path):
            subst.check(value, where=where)
            return value
        return subst.resolve(value, where=where, base_dir=cf.path.parent)
    if isinstance(value, list):
        return [substitute(v, (*path, i), cf, subst) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: substitute(v, (*path, k), cf, subst) for k, v in value.items()}
    return value


def plain_value(value: Any) -> Any:
    """A validated leaf as the tree keeps it: enums by value, arrays as tuples."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list):
        return tuple(plain_value(v) for v in value)  # a tuple: a leaf; a list: tables
    return value


def _annotate(raw: Mapping[str, Any], model: Any, cf: ConfigFile) -> dict[str, Node]:
    out: dict[str, Node] = {}
    table: dict[str, tuple[str, bool, bool]] = type(model).specs
    for key, value in raw.items():
        spec = table.get(key)
        if spec is None:  # an operator-named table beside fixed keys (`[agents.NAME]`)
            out[key] = _annotate(value, model.__pydantic_extra__[key], cf)
            continue
        kind, secret, ceiling = spec
        got = getattr(model, key)
        if kind == "TABLE":
            out[key] = _annotate(value, got, cf)
        elif kind == "TABLES":
            out[key] = Sourced([_annotate(v, g, cf) for v, g in zip(value, got, strict=True)], cf)
        elif kind == "NAMED":
            out[key] = {name: _annotate(value[name], got[name], cf) for name in value}
        else:
            out[key] = Sourced(plain_value(got), cf, secret, ceiling)
    return out


def unwrap(node: Mapping[str, Node]) -> dict[str, Any]:
    """The annotated tree as plain data again (what the merged model is built from)."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict):
            out[key] = unwrap(value)
        elif isinstance(value.value, list):
            out[key] = [unwrap(item) for item in value.value]
        elif isinstance(value.value, tuple):
            out[key] = list(value.value)
        else:
            out[key] = value.value
    return out
