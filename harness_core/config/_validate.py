"""One scope file through the models: shape, substitution, values, and the boundary where
pydantic's `ValidationError` becomes the `ConfigError` an operator reads.

A file is validated twice: before substitution (so an unknown key or a wrong type is
reported even when a `${env:...}` beside it is unset) and after (choices, bounds, dates
and paths, which only a substituted value can be judged on). Every message names the
key, the scope and the file, and never holds a substituted value. Imports pydantic:
reached only from `load`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from harness_core.config._fast import is_deferred, plain_value, substitute, unwrap
from harness_core.config._fields import Kind, Located, locate, named_model, specs
from harness_core.config._model import IoToml
from harness_core.config._scopes import ConfigFile
from harness_core.config._substitute import Substituter
from harness_core.config._tree import Node, Sourced, dotted
from harness_core.errors import ConfigError

__all__ = ["check_file", "is_deferred", "validate_merged"]

_HINT = "io.toml.example lists every key io accepts (`io config schema` prints them all)"


def _validate(data: Mapping[str, Any], cf: ConfigFile | None) -> IoToml:
    context = {"base_dir": cf.path.parent} if cf is not None else {}
    return IoToml.model_validate(data, context=context)


def check_file(
    raw: Mapping[str, Any],
    cf: ConfigFile,
    subst: Substituter,
    tables: Collection[str] | None = None,
) -> dict[str, Node]:
    """Check, substitute and annotate one parsed scope file.

    Relative paths become absolute against the file's directory, `"YYYY-MM-DD"` strings
    become dates, and every leaf is tagged with `cf`. With `tables`, only those
    top-level tables are substituted and kept; the others are checked for unknown keys
    and types only.

    Raises:
        ConfigError: The first unknown key, wrong type, failed substitution, value
            outside its choices, number below its bound, malformed date or empty path.
    """
    try:
        _validate(raw, cf)
    except ValidationError as exc:
        # Before substitution, a value still holding `${` cannot be judged yet.
        problems = [e for e in exc.errors() if not _unresolved(e.get("input"))]
        if problems:
            raise _translate(problems, raw, cf, lambda text: text) from None
    if tables is not None:
        raw = {key: value for key, value in raw.items() if key in tables}
    resolved = substitute(raw, (), cf, subst)
    try:
        model = _validate(resolved, cf)
    except ValidationError as exc:
        raise _translate(exc.errors(), resolved, cf, subst.redact) from None
    return _annotate(resolved, model, cf)


def _unresolved(value: object) -> bool:
    return isinstance(value, str) and "${" in value


def _annotate(raw: Mapping[str, Any], model: BaseModel, cf: ConfigFile) -> dict[str, Node]:
    out: dict[str, Node] = {}
    table = specs(type(model))
    for key, value in raw.items():
        spec = table.get(key)
        if spec is None:  # an operator-named table beside fixed keys (`[agents.NAME]`)
            extra = model.__pydantic_extra__ or {}
            out[key] = _annotate(value, extra[key], cf)
            continue
        got = getattr(model, key)
        if spec.kind is Kind.TABLE:
            out[key] = _annotate(value, got, cf)
        elif spec.kind is Kind.TABLES:
            out[key] = Sourced([_annotate(v, g, cf) for v, g in zip(value, got, strict=True)], cf)
        elif spec.kind is Kind.NAMED:
            out[key] = {name: _annotate(value[name], got[name], cf) for name in value}
        else:
            out[key] = Sourced(plain_value(got), cf, spec.secret, spec.ceiling)
    return out


def validate_merged(tree: Mapping[str, Node]) -> IoToml:
    """The merged tree as one model: every default filled in.

    Raises:
        ConfigError: A merged value fails its model (each file passed on its own, so
            this names the file that set the offending value).
    """
    plain = unwrap(tree)
    try:
        return _validate(plain, None)
    except ValidationError as exc:
        path = locate(exc.errors()[0]["loc"]).path
        origin = _origin_at(tree, path)
        if origin is None:
            raise ConfigError(f"'{dotted(path)}': {exc.errors()[0]['msg']}") from None
        raise _translate(exc.errors(), plain, origin, lambda text: text) from None


def _origin_at(tree: Mapping[str, Node], path: tuple[str | int, ...]) -> ConfigFile | None:
    node: Any = tree
    for part in path:
        if isinstance(node, Sourced):
            if isinstance(part, int) and isinstance(node.value, list):
                node = node.value[part]
                continue
            return node.origin
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node.origin if isinstance(node, Sourced) else None


def _lookup(raw: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        if isinstance(raw, dict) and part in raw:
            raw = raw[part]
        elif isinstance(raw, list) and isinstance(part, int) and part < len(raw):
            raw = raw[part]
        else:
            return None
    return raw


def _toml_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    names: list[tuple[type, str]] = [
        (int, "integer"), (float, "float"), (str, "string"), (dict, "table"), (list, "array"),
        (dt.datetime, "datetime"), (dt.date, "date"),
    ]
    return next((name for tp, name in names if isinstance(value, tp)), "time")


def _suggest(found: Located) -> str:
    import difflib  # only on the error path

    key = str(found.path[-1])
    close = difflib.get_close_matches(key, list(specs(found.parent)), n=1)
    if named_model(found.parent) is not None:
        close = []  # beside named tables, any other name is a name, not a typo
    return f"did you mean '{dotted((*found.path[:-1], close[0]))}'? {_HINT}" if close else _HINT


_VALUE_MESSAGES: dict[str, Callable[[dict[str, Any]], str]] = {
    "greater_than_equal": lambda ctx: f"must be at least {float(ctx['ge']):g}",
    "greater_than": lambda ctx: f"must be more than {float(ctx['gt']):g}",
    "less_than_equal": lambda ctx: (
        f"is out of range (at most {int(ctx['le']):,}; write false for no ceiling where"
        " allowed)"
    ),
    "finite_number": lambda ctx: "must be a finite number",
    "path_empty": lambda ctx: "a path must not be empty",
    "date_format": lambda ctx: "expected a date written YYYY-MM-DD",
    "ceiling_true": lambda ctx: "true is not a ceiling: write a number, or false",
}


def _translate(
    errors: list[Any], raw: Mapping[str, Any], cf: ConfigFile, redact: Callable[[str], str]
) -> ConfigError:
    found = locate(tuple(errors[0]["loc"]))
    if found.spec is None:
        return ConfigError(
            f"unknown key '{dotted(found.path)}' in {cf.describe()}", hint=_suggest(found)
        )
    spec = found.spec
    value = _lookup(raw, found.path)
    if not spec.accepts(value):
        return ConfigError(
            f"wrong type for '{dotted(found.path)}' in {cf.describe()}: "
            f"expected {spec.expected()}, got {_toml_type(value)}"
        )
    where = f"'{dotted(found.path)}' in {cf.describe()}"
    group = [e for e in errors if locate(tuple(e["loc"])).path == found.path]
    for error in group:
        message = _VALUE_MESSAGES.get(error["type"])
        if message is not None:
            return ConfigError(f"{where}: {message(error.get('ctx') or {})}")
    choices = spec.choices()
    if choices and any(e["type"] in ("enum", "literal_error") for e in group):
        return ConfigError(f"{where}: {redact(repr(value))} is not one of " + ", ".join(choices))
    return ConfigError(f"{where}: {redact(str(group[0]['msg']))}")
