"""The runtime of the generated plain validator (`_plain`): the classes' base, the
builder of one table, and the checks a field's generated code calls. No pydantic.

`No` is how a check says "not accepted"; `validate` in `_plain` turns it into None, and
the loader then asks pydantic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

__all__ = [
    "Ctx", "Fields", "No", "Plain", "build", "enum_value", "first", "literal", "make",
    "path_value", "run_check",
]

class No(Exception):
    """The plain validator cannot accept a value: pydantic decides instead."""


class Ctx:
    __slots__ = ("context", "pre")

    def __init__(self, context: dict[str, Any] | None, pre: bool) -> None:
        self.context = context
        self.pre = pre


class Plain:
    """Base of the plain twins: compared, hashed and printed by their fields."""

    __slots__ = ("__pydantic_extra__", "model_fields_set")
    model_fields: ClassVar[tuple[str, ...]] = ()
    __pydantic_extra__: dict[str, Any] | None
    model_fields_set: set[str]

    def _items(self) -> tuple[Any, ...]:
        return (*(getattr(self, n) for n in self.model_fields), self.__pydantic_extra__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plain) and type(other) is type(self) and (
            self._items() == other._items())

    def __hash__(self) -> int:
        return hash(repr(self._items()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.model_fields)
        return f"{type(self).__name__}({fields})"


Fields = tuple[tuple[str, str, Callable[[Any, Ctx], Any], Callable[[], Any]], ...]


def build(cls: type[Plain], fields: Fields, extra: str,
           extra_check: Callable[[Any, Ctx], Any] | None, v: Any, c: Ctx) -> Any:
    if c.pre and type(v) is str and "${" in v:
        return v
    if type(v) is not dict:
        raise No
    obj = object.__new__(cls)
    seen: set[str] = set()
    used = 0
    for name, alias, check, default in fields:
        if alias in v:
            object.__setattr__(obj, name, check(v[alias], c))
            seen.add(name)
            used += 1
        else:
            object.__setattr__(obj, name, default())
    others: dict[str, Any] | None = None
    if used != len(v):
        if extra == "forbid" and not all_unresolved(v, fields, c):
            raise No
        if extra == "allow":
            aliases = {alias for _n, alias, _c, _d in fields}
            others = {k: extra_check(x, c) if extra_check else x
                      for k, x in v.items() if k not in aliases}
            seen.update(others)
    if extra == "allow" and others is None:
        others = {}
    object.__setattr__(obj, "__pydantic_extra__", others)
    object.__setattr__(obj, "model_fields_set", seen)
    return obj


def all_unresolved(v: dict[str, Any], fields: Fields, c: Ctx) -> bool:
    # Before substitution, pydantic's verdict ignores an unknown key holding `${...}`.
    aliases = {alias for _n, alias, _c, _d in fields}
    return c.pre and all(type(x) is str and "${" in x for k, x in v.items() if k not in aliases)


def make(cls: type[Plain], fields_set: list[str], extra: dict[str, Any] | None,
          **values: Any) -> Any:
    obj = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(obj, name, value)
    object.__setattr__(obj, "__pydantic_extra__", extra)
    object.__setattr__(obj, "model_fields_set", set(fields_set))
    return obj


def run_check(check: Callable[[Any, Mapping[str, Any] | None], Any], v: Any, c: Ctx) -> Any:
    try:
        return check(v, c.context)
    except Exception:
        raise No from None


def first(v: Any, c: Ctx, branches: tuple[Callable[[Any, Ctx], Any], ...]) -> Any:
    for branch in branches:
        try:
            return branch(v, c)
        except No:
            continue
    raise No


def literal(v: Any, choices: tuple[Any, ...]) -> Any:
    for choice in choices:
        if type(v) is type(choice) and v == choice:
            return choice
    raise No


def enum_value(cls: type[Enum], v: Any, strict: bool) -> Any:
    if isinstance(v, cls):
        return v
    if strict or type(v) not in {type(m.value) for m in cls}:
        raise No
    try:
        return cls(v)
    except ValueError:
        raise No from None


def path_value(v: Any, strict: bool) -> Path:
    if isinstance(v, Path):
        return v
    if strict or type(v) is not str:
        raise No
    return Path(v)
