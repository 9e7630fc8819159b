"""Reading the models as a schema: what each key is, its TOML type, and every key.

The pydantic models (`_model`) are the declaration; this module answers the questions
the loader, the error messages, `io config init` and the docs test ask of them: is this
key a table, an array of tables or a leaf; what TOML type does it take; which keys exist
(`schema_keys`) and which a document sets (`keys_in`). It imports pydantic through
`_model`, so only a config load reaches it. It never reads a file.
"""

from __future__ import annotations

import datetime as dt
import types
from collections.abc import Iterator, Mapping
from dataclasses import replace
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel

from harness_core._record import record
from harness_core.config import _model
from harness_core.config._model import SECRET, IoToml, NoCeiling

__all__ = [
    "FieldSpec",
    "Kind",
    "json_schema",
    "keys_in",
    "locate",
    "schema_keys",
    "specs",
    "table_model",
]


class Kind(Enum):
    """What a key holds."""

    LEAF = "leaf"
    """A value, a plain array, or an inline table of strings."""
    TABLE = "table"
    """A table with fixed keys (`[sandbox]`)."""
    TABLES = "array of tables"
    """An array of tables (`[[mcp]]`): a higher scope replaces it wholesale."""
    NAMED = "table of tables"
    """Tables named by the operator (`[agents.NAME]`)."""


@record
class FieldSpec:
    """One key of one table.

    Attributes:
        name: The key.
        kind: What it holds.
        annotation: Its type (for a leaf), None-stripped.
        model: The table model (for a table, an array of tables or named tables).
        secret: It holds a credential.
        default: Its declared default.
        owner: The table model that declares it (None for an operator-named table).
    """

    name: str
    kind: Kind
    annotation: Any
    model: type[BaseModel] | None
    secret: bool
    default: Any
    owner: type[BaseModel] | None = None

    @property
    def description(self) -> str:
        """Its documentation (the attribute docstring), on one line; read from the
        models' source the first time any description is asked for, never on a load."""
        from harness_core.config._docs import field_doc

        if self.owner is None:
            return ""
        return " ".join(field_doc(self.owner, self.name).split())

    @property
    def ceiling(self) -> bool:
        """`false` means "no ceiling"."""
        return _has_false(self.annotation)

    def expected(self) -> str:
        """Its TOML type as error messages name it."""
        return self.kind.value if self.kind is not Kind.LEAF else _describe(self.annotation)

    def accepts(self, value: object) -> bool:
        """Whether `value` has a TOML type this key takes (bounds aside)."""
        if self.kind is Kind.TABLE:
            return isinstance(value, dict)
        if self.kind is Kind.TABLES:
            return isinstance(value, list) and all(isinstance(v, dict) for v in value)
        if self.kind is Kind.NAMED:
            return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
        return _accepts(self.annotation, value)

    def choices(self) -> tuple[str, ...]:
        """The only strings it may take, when closed."""
        return _choices(self.annotation)


def _strip_none(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
        return Union[tuple(args)]  # noqa: UP007 - rebuilt from parts at run time
    return annotation


def _base(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _kind(annotation: Any) -> tuple[Kind, type[BaseModel] | None]:
    tp = _base(_strip_none(annotation))
    if _is_model(tp):
        return Kind.TABLE, tp
    args = get_args(tp)
    if get_origin(tp) is list and args and _is_model(args[0]):
        return Kind.TABLES, args[0]
    if get_origin(tp) is dict and len(args) == 2 and _is_model(args[1]):
        return Kind.NAMED, args[1]
    return Kind.LEAF, None


@cache
def specs(model: type[BaseModel]) -> Mapping[str, FieldSpec]:
    """The keys of one table model, in declaration order."""
    out: dict[str, FieldSpec] = {}
    for name, info in model.model_fields.items():
        kind, sub = _kind(info.annotation)
        out[name] = FieldSpec(
            name=name,
            kind=kind,
            annotation=_strip_none(info.annotation),
            model=sub,
            secret=SECRET in info.metadata,
            default=info.default,
            owner=model,
        )
    return out


def named_model(model: type[BaseModel]) -> type[BaseModel] | None:
    """The model of the operator-named tables a table also holds (`[agents.NAME]` beside
    `[agents] max_depth`), from its typed `__pydantic_extra__`; None when it has none."""
    if model.model_config.get("extra") != "allow":
        return None
    extra = get_type_hints(model).get("__pydantic_extra__")
    args = get_args(extra)
    return args[1] if len(args) == 2 and _is_model(args[1]) else None


def item_spec(model: type[BaseModel]) -> FieldSpec:
    """The spec of one operator-named table of `model` (see `named_model`)."""
    sub = named_model(model)
    return FieldSpec("*", Kind.TABLE, None, sub, False, None)


def _members(annotation: Any) -> list[Any]:
    tp = _base(annotation)
    if get_origin(tp) in (Union, types.UnionType):
        return list(get_args(tp))
    return [tp]


def _has_false(annotation: Any) -> bool:
    return any(m == NoCeiling for m in _members(annotation))


def _describe(annotation: Any) -> str:
    parts = [m for m in _members(annotation) if m != NoCeiling]
    text = " or ".join(dict.fromkeys(_describe_one(_base(m)) for m in parts))
    return f"{text} or false" if _has_false(annotation) else text


def _describe_one(tp: Any) -> str:
    if tp is bool:
        return "boolean"
    if tp is int:
        return "integer"
    if tp is float:
        return "number"
    if tp is dt.date:
        return 'date (or a "YYYY-MM-DD" string)'
    if get_origin(tp) is list:
        return "array of strings"
    if get_origin(tp) is dict:
        return "table of strings"
    return "string"  # str, Path, an Enum, a Literal


def _accepts(annotation: Any, value: object) -> bool:
    if value is False and _has_false(annotation):
        return True
    return any(_accepts_one(_base(m), value) for m in _members(annotation) if m != NoCeiling)


def _accepts_one(tp: Any, value: object) -> bool:
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is dt.date:
        return isinstance(value, str) or (
            isinstance(value, dt.date) and not isinstance(value, dt.datetime)
        )
    if get_origin(tp) is list:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if get_origin(tp) is dict:
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    return isinstance(value, str | Path)


def _choices(annotation: Any) -> tuple[str, ...]:
    tp = _base(annotation)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tuple(str(member.value) for member in tp)
    if get_origin(tp) is Literal:
        return tuple(str(a) for a in get_args(tp))
    return ()


@record
class Located:
    """Where a pydantic error location points in the document.

    Attributes:
        path: The real key path (union branch tags and list-item indices of a leaf
            dropped).
        spec: The key at the end of `path`, None when it is unknown.
        parent: The table model whose keys `path[-1]` belongs to.
    """

    path: tuple[str | int, ...]
    spec: FieldSpec | None
    parent: type[BaseModel]


def locate(loc: tuple[str | int, ...]) -> Located:
    """Map a pydantic error `loc` onto the document's keys."""
    model: type[BaseModel] = IoToml
    parent = model
    path: tuple[str | int, ...] = ()
    spec: FieldSpec | None = None
    item_next = False  # the index of an [[array]] item or the NAME of a [table.NAME]
    for part in loc:
        if item_next:
            path += (part,)
            item_next = False
            if spec is not None and len(path) == len(loc):
                spec = replace(spec, kind=Kind.TABLE)  # the item itself is one table
            continue
        if not isinstance(part, str):
            break
        spec = specs(model).get(part)
        parent = model
        path += (part,)
        if spec is None and named_model(model) is not None:
            spec = item_spec(model)  # an operator-named table beside fixed keys
        if spec is None:
            break
        if spec.model is None:
            break  # a leaf: what follows are list indices or union branch tags
        model = spec.model
        item_next = spec.kind is not Kind.TABLE
    return Located(path, spec, parent)


def table_model(path: str) -> type[BaseModel]:
    """The model of the table at dotted `path` (``contract.verify``: one gate)."""
    model: type[BaseModel] = IoToml
    for part in path.split("."):
        sub = specs(model)[part].model
        if sub is None:
            raise KeyError(path)
        model = sub
    return model


def schema_keys() -> frozenset[str]:
    """Every key of the schema, dotted; operator-chosen names read ``*``.

    Arrays of tables contribute their item keys (``contract.verify.command``).
    """
    return frozenset(_walk_model(IoToml, ""))


def _walk_model(model: type[BaseModel], prefix: str) -> Iterator[str]:
    named = named_model(model)
    if named is not None:
        yield from _walk_model(named, f"{prefix}*.")
    for name, spec in specs(model).items():
        key = f"{prefix}{name}"
        if spec.model is None:
            yield key
        elif spec.kind is Kind.NAMED:
            yield from _walk_model(spec.model, f"{key}.*.")
        else:
            yield from _walk_model(spec.model, f"{key}.")


def keys_in(raw: Mapping[str, Any]) -> frozenset[str]:
    """The keys a parsed document sets, in `schema_keys` form (unknown keys included)."""
    return frozenset(_walk_doc(raw, IoToml, ""))


def _walk_doc(raw: Mapping[str, Any], model: type[BaseModel], prefix: str) -> Iterator[str]:
    for name, value in raw.items():
        spec = specs(model).get(name)
        key = f"{prefix}{name}"
        named = named_model(model)
        if spec is None and named is not None and isinstance(value, dict):
            yield from _walk_doc(value, named, f"{prefix}*.")
        elif spec is None or spec.model is None:
            yield key
        elif spec.kind is Kind.TABLE:
            yield from _walk_doc(value, spec.model, f"{key}.")
        elif spec.kind is Kind.TABLES:
            for item in value:
                yield from _walk_doc(item, spec.model, f"{key}.")
        else:
            for item in value.values():
                yield from _walk_doc(item, spec.model, f"{key}.*.")


def json_schema() -> dict[str, Any]:
    """The JSON Schema of io.toml (draft 2020-12), for editors (Taplo, Even Better TOML).

    TOML has no null, so the `null` branches pydantic writes for optional keys are
    dropped: an editor then offers exactly the values a file may hold. Descriptions are
    the attribute docstrings of the models, on one line each.
    """
    raw = IoToml.model_json_schema()
    _add_descriptions(raw, IoToml)
    for name, definition in raw.get("$defs", {}).items():
        _add_descriptions(definition, getattr(_model, name, None))
    schema = _drop_null(raw)
    assert isinstance(schema, dict)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
    }


def _add_descriptions(definition: dict[str, Any], model: Any) -> None:
    """Each property of a model's schema gets its key's docstring as description."""
    from harness_core.config._docs import field_doc

    if not isinstance(model, type) or not issubclass(model, BaseModel):
        return
    for name, prop in definition.get("properties", {}).items():
        doc = field_doc(model, name)
        if doc and "description" not in prop:
            prop["description"] = doc


def _drop_null(node: Any) -> Any:
    if isinstance(node, list):
        return [_drop_null(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _drop_null(v) for k, v in node.items() if not (k == "default" and v is None)}
    if isinstance(out.get("description"), str):
        out["description"] = " ".join(out["description"].split())
    branches = out.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            del out["anyOf"]
            out = {**kept[0], **out}
        else:
            out["anyOf"] = kept
    return out
