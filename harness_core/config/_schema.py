"""The io.toml schema as one declarative table, and the checks that walk it.

Why hand-written and not pydantic: `io config check` and every command that loads a
config start with this module, and importing pydantic (with its compiled core) costs
more than the whole load of a typical file. The schema is small and flat, so a
table of `Field`s plus two walkers (`check_shape` for unknown keys and types, then
`annotate` for substitution and value checks) keeps every message in the one form
operators see: key, scope and file, e.g. ``unknown key 'policy.alow_exec' in project
scope (/w/io.toml)``.

The walkers never print and never echo a value that came from a substitution; they
raise `ConfigError`. Unlike the Rust contract, keys inside `[[mcp]]` are checked as
strictly as every other table (there is no serde `flatten` here to forbid it).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from harness_core.config._scopes import ConfigFile
from harness_core.config._substitute import Substituter
from harness_core.errors import ConfigError

__all__ = [
    "MAX_NUMBER",
    "SCHEMA",
    "Field",
    "FieldType",
    "Node",
    "Sourced",
    "Table",
    "TableArray",
    "TableMap",
    "annotate",
    "check_shape",
    "dotted",
    "keys_in",
    "schema_keys",
]


class FieldType(Enum):
    """The TOML value types a leaf key may take."""

    STR = "string"
    INT = "integer"
    NUM = "number"
    BOOL = "boolean"
    STR_LIST = "array of strings"
    STR_MAP = "table of strings"
    DATE = "date"


MAX_NUMBER = 10**12
"""The largest number any key takes: a trillion steps, tokens, seconds or dollars is no
budget anyone means, and larger values (2**64) overflow the store's integers."""


@dataclass(frozen=True)
class Field:
    """One leaf key.

    Attributes:
        type: Its TOML type.
        choices: The only strings it may take, when not empty.
        minimum: The smallest number it may take.
        ceiling: `false` is accepted and means "no ceiling" (projected as None).
        secret: Its value is a credential: shown as ``***`` and redacted everywhere.
        path: A path resolved against the directory of the file that names it.
    """

    type: FieldType
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    ceiling: bool = False
    secret: bool = False
    path: bool = False

    def expected(self) -> str:
        """The type as error messages name it."""
        name = self.type.value
        if self.type is FieldType.DATE:
            name = 'date (or a "YYYY-MM-DD" string)'
        return f"{name} or false" if self.ceiling else name


@dataclass(frozen=True)
class Table:
    """A table with a fixed set of keys."""

    fields: Mapping[str, Spec]


@dataclass(frozen=True)
class TableArray:
    """An array of tables (`[[mcp]]`): a higher scope replaces it wholesale."""

    item: Table


@dataclass(frozen=True)
class TableMap:
    """Tables named by the operator (`[agents.NAME]`), each with `item`'s keys.

    `fixed` keys are plain keys of the map itself (`[agents] max_depth`); no name
    may take one of them.
    """

    item: Table
    fixed: Mapping[str, Field] = field(default_factory=lambda: {})


Spec = Field | Table | TableArray | TableMap


@dataclass(frozen=True)
class Sourced:
    """A checked, substituted leaf value and the file that set it."""

    value: Any
    origin: ConfigFile
    secret: bool = False


Node = Sourced | dict[str, "Node"]
"""An annotated tree: tables are dicts; leaves and arrays of tables are `Sourced`."""

_S = Field(FieldType.STR)
_B = Field(FieldType.BOOL)
_L = Field(FieldType.STR_LIST)
_POS_INT = Field(FieldType.INT, minimum=1)
_POS_NUM = Field(FieldType.NUM, minimum=0)
_INT_CEIL = Field(FieldType.INT, minimum=1, ceiling=True)
_NUM_CEIL = Field(FieldType.NUM, minimum=0, ceiling=True)

PROVIDER_KINDS = ("anthropic", "openai", "openai-responses", "openrouter", "scripted")

_PROVIDER_FIELDS: dict[str, Spec] = {
    "kind": Field(FieldType.STR, choices=PROVIDER_KINDS),
    "model": _S,
    "api_key": Field(FieldType.STR, secret=True),
    "base_url": _S,
    "max_tokens": _POS_INT,
    "script": Field(FieldType.STR, path=True),
    "stream": _B,
    "timeout_seconds": Field(FieldType.NUM, minimum=0.001),
    "max_retries": Field(FieldType.INT, minimum=0),
    "ca_bundle": Field(FieldType.STR, path=True),
    "system_role": Field(FieldType.STR, choices=("system", "developer")),
    "previous_response_id": _B,
}

RULE_KEYS = tuple(
    f"{effect}_{kind}" for kind in ("read", "write", "exec", "net") for effect in ("allow", "deny")
)
"""The `[policy]` rule lists; every scope's rules are kept, never merged as scalars."""

SCHEMA = Table(
    {
        "provider": Table({**_PROVIDER_FIELDS, "fallback": TableArray(Table(_PROVIDER_FIELDS))}),
        "policy": Table(
            {
                "tier": Field(FieldType.STR, choices=("read-only", "workspace-write", "full")),
                "approval": Field(FieldType.STR, choices=("ask", "deny")),
                **{key: _L for key in RULE_KEYS},
            }
        ),
        "sandbox": Table(
            {
                "backend": Field(FieldType.STR, choices=("auto", "native", "floor", "off")),
                "memory_mb": _INT_CEIL,
                "cpu_seconds": _INT_CEIL,
                "wall_seconds": _NUM_CEIL,
                "max_processes": _INT_CEIL,
                "open_files": _INT_CEIL,
                "network": _B,
                "commands": _B,
                "env_allow": _L,
                "read_paths": _L,
            }
        ),
        "budget": Table(
            {
                "max_steps": _INT_CEIL,
                "max_tokens": _INT_CEIL,
                "max_cost_usd": _NUM_CEIL,
                "wall_seconds": _NUM_CEIL,
            }
        ),
        "contract": Table(
            {
                "goal": _S,
                "constraints": _L,
                "verify": TableArray(
                    Table(
                        {
                            "kind": Field(
                                FieldType.STR,
                                choices=("command", "each_compiles_python", "document_contains"),
                            ),
                            "command": _S,
                            "timeout_seconds": Field(FieldType.NUM, minimum=0.001),
                            "path": _S,
                            "text": _S,
                            "regex": _S,
                            "page": _POS_INT,
                            "sheet": _S,
                            "inputs": _L,
                            "editable": _B,
                        }
                    )
                ),
            }
        ),
        "context": Table({"max_tokens": _POS_INT}),
        "toolchain": Table({"test": _S, "build": _S, "lint": _S}),
        "git": Table({
            "author": _S,
            "author_name": _S,
            "author_email": _S,
            "timeout_seconds": Field(FieldType.NUM, minimum=0.001),
            "history_depth": Field(FieldType.INT, minimum=1),
        }),
        "prices": Table(
            {
                "as_of": Field(FieldType.DATE),
                "models": TableMap(
                    Table(
                        {
                            "input_per_mtok": _POS_NUM,
                            "output_per_mtok": _POS_NUM,
                            "cache_read_per_mtok": _POS_NUM,
                            "cache_write_per_mtok": _POS_NUM,
                        }
                    )
                ),
            }
        ),
        "web": Table(
            {
                "search": _B,
                "fetch": _B,
                "allowed_domains": _L,
                "blocked_domains": _L,
                "max_uses": _POS_INT,
            }
        ),
        "mcp": TableArray(
            Table(
                {
                    "name": _S,
                    "command": _S,
                    "args": _L,
                    "env": Field(FieldType.STR_MAP, secret=True),
                    "cwd": Field(FieldType.STR, path=True),
                }
            )
        ),
        "agents": TableMap(
            Table({"model": _S, "role": _S, "deny_write": _L, "deny_net": _L}),
            fixed={"max_depth": Field(FieldType.INT, minimum=0), "max_children": _POS_INT,
                   "parallel": _POS_INT},
        ),
        "templates": Table({"dir": Field(FieldType.STR, path=True)}),
        "store": Table({"path": Field(FieldType.STR, path=True),
                        "url": Field(FieldType.STR, secret=True)}),
        "telemetry": Table(
            {
                "otlp_endpoint": _S,
                "include_content": _B,
                "headers": Field(FieldType.STR_MAP, secret=True),
                "service_name": _S,
                "timeout_seconds": Field(FieldType.NUM, minimum=0.001),
            }
        ),
        "run": Table(
            {
                "output_cap_bytes": Field(FieldType.INT, minimum=256),
                "exec_timeout_seconds": Field(FieldType.NUM, minimum=0.001),
                "stall_window": Field(FieldType.INT, minimum=2),
            }
        ),
    }
)
"""Every key io.toml accepts. `io.toml.example` documents each; a test keeps them equal."""

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


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


def _toml_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dt.datetime):
        return "datetime"
    if isinstance(value, dt.date):
        return "date"
    return "time"


def _wrong_type(
    path: tuple[str | int, ...], expected: str, got: object, cf: ConfigFile
) -> ConfigError:
    return ConfigError(
        f"wrong type for '{dotted(path)}' in {cf.describe()}: "
        f"expected {expected}, got {_toml_type(got)}"
    )


def _leaf_has_type(spec: Field, value: object) -> bool:
    if spec.ceiling and value is False:
        return True
    kind = spec.type
    if kind is FieldType.STR:
        return isinstance(value, str)
    if kind is FieldType.INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is FieldType.NUM:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is FieldType.BOOL:
        return isinstance(value, bool)
    if kind is FieldType.STR_LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind is FieldType.STR_MAP:
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    # DATE: a TOML local date, or a string checked after substitution.
    return isinstance(value, str) or (
        isinstance(value, dt.date) and not isinstance(value, dt.datetime)
    )


def check_shape(raw: Mapping[str, Any], cf: ConfigFile) -> None:
    """Reject unknown keys and wrong types in one parsed file.

    Raises:
        ConfigError: The first unknown key or wrong type, naming key, scope and file.
    """
    _shape_table(raw, SCHEMA, (), cf)


def _shape_table(
    raw: Mapping[str, Any], table: Table, path: tuple[str | int, ...], cf: ConfigFile
) -> None:
    for key, value in raw.items():
        here = (*path, key)
        spec = table.fields.get(key)
        if spec is None:
            raise ConfigError(
                f"unknown key '{dotted(here)}' in {cf.describe()}",
                hint=_suggest(key, table, path),
            )
        _shape(spec, value, here, cf)


def _suggest(key: str, table: Table, path: tuple[str | int, ...]) -> str:
    import difflib  # only on the error path

    close = difflib.get_close_matches(key, list(table.fields), n=1)
    known = "io.toml.example lists every key io accepts"
    return f"did you mean '{dotted((*path, close[0]))}'? {known}" if close else known


def _shape(spec: Spec, value: Any, here: tuple[str | int, ...], cf: ConfigFile) -> None:
    if isinstance(spec, Field):
        if not _leaf_has_type(spec, value):
            raise _wrong_type(here, spec.expected(), value, cf)
    elif isinstance(spec, Table):
        if not isinstance(value, dict):
            raise _wrong_type(here, "table", value, cf)
        _shape_table(value, spec, here, cf)
    elif isinstance(spec, TableArray):
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise _wrong_type(here, "array of tables", value, cf)
        for index, item in enumerate(value):
            _shape_table(item, spec.item, (*here, index), cf)
    else:
        if not isinstance(value, dict):
            raise _wrong_type(here, "table of tables", value, cf)
        for name, item in value.items():
            leaf = spec.fixed.get(name)
            if leaf is not None:
                _shape(leaf, item, (*here, name), cf)
            elif not isinstance(item, dict):
                raise _wrong_type((*here, name), "table", item, cf)
            else:
                _shape_table(item, spec.item, (*here, name), cf)


@dataclass
class _Annotator:
    cf: ConfigFile
    subst: Substituter
    base_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.base_dir = self.cf.path.parent

    def where(self, path: tuple[str | int, ...]) -> str:
        return f"'{dotted(path)}' in {self.cf.describe()}"

    def string(self, text: str, path: tuple[str | int, ...]) -> str:
        return self.subst.resolve(text, where=self.where(path), base_dir=self.base_dir)

    def table(
        self, raw: Mapping[str, Any], table: Table, path: tuple[str | int, ...]
    ) -> dict[str, Node]:
        out: dict[str, Node] = {}
        for key, value in raw.items():
            here = (*path, key)
            spec = table.fields[key]
            if isinstance(spec, Field):
                out[key] = Sourced(self.leaf(spec, value, here), self.cf, spec.secret)
            elif isinstance(spec, Table):
                out[key] = self.table(value, spec, here)
            elif isinstance(spec, TableArray):
                items = [self.table(v, spec.item, (*here, i)) for i, v in enumerate(value)]
                out[key] = Sourced(items, self.cf)
            else:
                out[key] = {
                    n: (Sourced(self.leaf(spec.fixed[n], v, (*here, n)), self.cf)
                        if n in spec.fixed else self.table(v, spec.item, (*here, n)))
                    for n, v in value.items()}
        return out

    def leaf(self, spec: Field, value: Any, path: tuple[str | int, ...]) -> Any:
        if spec.ceiling and value is False:
            return None
        if spec.type is FieldType.STR_LIST:
            return tuple(self.string(v, (*path, i)) for i, v in enumerate(value))
        if spec.type is FieldType.STR_MAP:
            return {k: self.string(v, (*path, k)) for k, v in value.items()}
        if spec.type is FieldType.DATE:
            return self.date(value, path)
        if isinstance(value, str):
            value = self.string(value, path)
            if spec.choices and value not in spec.choices:
                raise ConfigError(
                    f"{self.where(path)}: {self.subst.redact(repr(value))} is not one of "
                    + ", ".join(spec.choices)
                )
            if spec.path:
                if not value:
                    raise ConfigError(f"{self.where(path)}: a path must not be empty")
                return Path(os.path.normpath(self.base_dir / value))
            return value
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{self.where(path)}: must be a finite number")
        if spec.minimum is not None and value < spec.minimum:
            raise ConfigError(f"{self.where(path)}: must be at least {spec.minimum:g}")
        if abs(value) > MAX_NUMBER:
            shown = value if isinstance(value, int) else f"{value:g}"
            raise ConfigError(f"{self.where(path)}: {shown} is out of range (at most"
                              f" {MAX_NUMBER:,}; write false for no ceiling where allowed)")
        return value

    def date(self, value: Any, path: tuple[str | int, ...]) -> dt.date:
        if isinstance(value, dt.date):
            return value
        text = self.string(value, path)
        if _ISO_DATE.fullmatch(text):
            try:
                return dt.date.fromisoformat(text)
            except ValueError:
                pass
        raise ConfigError(f"{self.where(path)}: expected a date written YYYY-MM-DD")


def annotate(raw: Mapping[str, Any], cf: ConfigFile, subst: Substituter) -> dict[str, Node]:
    """Substitute, check values and tag every leaf with `cf`, for a shape-checked file.

    Relative paths (`script`, `[store] path`, `[[mcp]] cwd`) become absolute against
    the directory of `cf`. A `false` ceiling becomes None; string lists become tuples.

    Raises:
        ConfigError: A substitution failed, a string is not one of its choices, a number
            is below its minimum, or a date is malformed.
    """
    return _Annotator(cf, subst).table(raw, SCHEMA, ())


def schema_keys() -> frozenset[str]:
    """Every key of the schema, dotted; operator-chosen names read ``*``.

    Arrays of tables contribute their item keys (``contract.verify.command``).
    """
    return frozenset(_walk_spec(SCHEMA, ""))


def _walk_spec(table: Table, prefix: str) -> Iterator[str]:
    for key, spec in table.fields.items():
        name = f"{prefix}{key}"
        if isinstance(spec, Field):
            yield name
        elif isinstance(spec, Table):
            yield from _walk_spec(spec, f"{name}.")
        elif isinstance(spec, TableArray):
            yield from _walk_spec(spec.item, f"{name}.")
        else:
            yield from (f"{name}.{k}" for k in spec.fixed)
            yield from _walk_spec(spec.item, f"{name}.*.")


def keys_in(raw: Mapping[str, Any]) -> frozenset[str]:
    """The keys a parsed document sets, in `schema_keys` form (unknown keys included)."""
    return frozenset(_walk_doc(raw, SCHEMA, ""))


def _walk_doc(raw: Mapping[str, Any], table: Table, prefix: str) -> Iterator[str]:
    for key, value in raw.items():
        spec = table.fields.get(key)
        name = f"{prefix}{key}"
        if spec is None or isinstance(spec, Field):
            yield name
        elif isinstance(spec, Table):
            yield from _walk_doc(value, spec, f"{name}.")
        elif isinstance(spec, TableArray):
            for item in value:
                yield from _walk_doc(item, spec.item, f"{name}.")
        else:
            for key2, item in value.items():
                if key2 in spec.fixed or not isinstance(item, dict):
                    yield f"{name}.{key2}"
                else:
                    yield from _walk_doc(item, spec.item, f"{name}.*.")
