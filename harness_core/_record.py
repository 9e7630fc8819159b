"""`record`: io's typed records, defined without compiling code at import.

`@dataclass` writes the source of `__init__`, `__repr__`, `__eq__`, `__hash__` and, when
frozen, `__setattr__`/`__delattr__` for each class and compiles it with `exec` when the
module is imported: about half a millisecond a class, and a plain `io run` defines some
170 of them. `record` gives a class the same behaviour from methods written once, here,
and loaded from this module's bytecode: it reads the same annotations and the same
`dataclasses.field(...)` specifiers, and fills `__dataclass_fields__` with the same
`dataclasses.Field` objects, so `dataclasses.fields`, `replace`, `asdict` and
`is_dataclass` work on a record as on a dataclass.

What a record keeps of `@dataclass(frozen=..., slots=...)` (eq on, order off, no
`kw_only`, no `InitVar`): the keyword and positional `__init__` with defaults and
`default_factory`, fields with `init=False`, `__post_init__`, `__repr__` (fields with
`repr=True`, the class's `__qualname__`), `__eq__` (same class, the `compare=True` fields
in order), `__hash__` (a frozen record hashes the tuple of its compared fields, a mutable
one is unhashable, a `__hash__` the class writes itself is kept), `FrozenInstanceError` on
assignment to a frozen record, `__slots__` (a new class, as dataclass makes it),
`__match_args__`, pickling of frozen slotted records, and the generated `__doc__`.
tests/unit/test_records.py holds every record of the package to a real dataclass built
from the same class body.
"""

from __future__ import annotations

import dataclasses
from _thread import get_ident as _get_ident
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError
from typing import Any, ClassVar, TypeVar, dataclass_transform, overload

__all__ = ["record"]

_T = TypeVar("_T")
_FIELDS = "__dataclass_fields__"
_FIELD = dataclasses._FIELD  # type: ignore[attr-defined]
_CLASSVAR = dataclasses._FIELD_CLASSVAR  # type: ignore[attr-defined]
_set = object.__setattr__
_new_field: Any = Field  # called positionally as `dataclasses.field` calls it


class _Factory:
    """Stands for a default made by a factory in the generated `__doc__` (as dataclass's)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _is_classvar(annotation: object) -> bool:
    if isinstance(annotation, str):
        if "ClassVar" not in annotation:  # nearly every field: no split, no strip
            return False
        head = annotation.split("[", 1)[0].strip()
        return head in ("ClassVar", "typing.ClassVar", "t.ClassVar")
    return getattr(annotation, "__origin__", annotation) is ClassVar


def _collect(cls: type) -> dict[str, Field[Any]]:
    """The fields of `cls`: its bases' (a record's or a dataclass's) first, then its own."""
    found: dict[str, Field[Any]] = {}
    for base in reversed(cls.__mro__[1:]):
        found.update(getattr(base, _FIELDS, None) or {})
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        default = cls.__dict__.get(name, MISSING)
        # `dataclasses.field(default=default)` without its keyword checks (nothing here
        # can fail them): default, default_factory, init, repr, hash, compare, metadata,
        # kw_only, in `Field`'s order.
        spec: Any = default if isinstance(default, Field) else _new_field(
            default, MISSING, True, True, None, True, None, MISSING)
        spec.name, spec.type = name, annotation
        if _is_classvar(annotation):
            spec._field_type = _CLASSVAR
        else:
            spec._field_type = _FIELD
            if spec.default_factory is not MISSING and spec.default is not MISSING:
                raise ValueError("cannot specify both default and default_factory")
            if type(spec.default).__hash__ is None:  # dataclass's guard on list/dict/set
                raise ValueError(f"mutable default {type(spec.default)} for field {name} "
                                 "is not allowed: use default_factory")
        found[name] = spec
    return {name: spec for name, spec in found.items()
            if spec._field_type is _FIELD}  # type: ignore[attr-defined]


def _check_order(cls: type, specs: list[Field[Any]]) -> None:
    seen_default = False
    for spec in specs:
        if not spec.init:
            continue
        if spec.default is not MISSING or spec.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {spec.name!r} follows default argument")


def _make_init(cls: type, specs: list[Field[Any]], frozen: bool) -> Callable[..., None]:
    names = tuple(spec.name for spec in specs if spec.init)
    width = len(names)
    index = {name: at for at, name in enumerate(names)}
    qualname = f"{cls.__qualname__}.__init__()"
    fills = tuple(_filler(spec, qualname) for spec in specs if spec.init)
    later = tuple((spec.name, _filler(spec, qualname)) for spec in specs if not spec.init
                  and (spec.default is not MISSING or spec.default_factory is not MISSING))
    post_init = hasattr(cls, "__post_init__")
    assign = _set if frozen else setattr

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        if len(args) > width:
            raise TypeError(f"{qualname} takes {width + 1} positional arguments but "
                            f"{len(args) + 1} were given")
        values = [*args, *([_UNSET] * (width - len(args)))]
        for key, value in kwargs.items():
            at = index.get(key)
            if at is None:
                raise TypeError(f"{qualname} got an unexpected keyword argument {key!r}")
            if at < len(args):
                raise TypeError(f"{qualname} got multiple values for argument {key!r}")
            values[at] = value
        for at, value in enumerate(values):
            if value is _UNSET:
                values[at] = fills[at]()
        return values

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        values = args if len(args) == width and not kwargs else bind(args, kwargs)
        for name, value in zip(names, values, strict=True):
            assign(self, name, value)
        for name, fill in later:
            assign(self, name, fill())
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


class _Missing:
    """A required argument that was not given: raises as a function call would."""

    def __init__(self, qualname: str, name: str) -> None:
        self.message = f"{qualname} missing 1 required argument: {name!r}"

    def __call__(self) -> Any:
        raise TypeError(self.message)


def _filler(spec: Field[Any], qualname: str) -> Callable[[], Any]:
    """What gives a field its value when the caller did not."""
    if spec.default_factory is not MISSING:
        return spec.default_factory
    if spec.default is not MISSING:
        default = spec.default
        return lambda: default
    return _Missing(qualname, spec.name)


_UNSET: Any = object()


def _make_repr(cls: type, names: tuple[str, ...]) -> Callable[[Any], str]:
    busy: set[tuple[int, int]] = set()

    def __repr__(self: Any) -> str:
        key = (id(self), _get_ident())
        if key in busy:
            return "..."
        busy.add(key)
        try:
            inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        finally:
            busy.discard(key)
        return f"{type(self).__qualname__}({inner})"

    __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
    return __repr__


def _make_eq(cls: type, names: tuple[str, ...]) -> Callable[[Any, object], Any]:
    def __eq__(self: Any, other: object) -> Any:
        if other.__class__ is self.__class__:
            return tuple(getattr(self, n) for n in names) == tuple(
                getattr(other, n) for n in names)
        return NotImplemented

    __eq__.__qualname__ = f"{cls.__qualname__}.__eq__"
    return __eq__


def _make_hash(cls: type, names: tuple[str, ...]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in names))

    __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
    return __hash__


def _make_frozen(cls: Any, names: frozenset[str]) -> None:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    for method in (__setattr__, __delattr__):
        if method.__name__ in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute {method.__name__} in class "
                            f"{cls.__name__}")
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)


def _doc(cls: type, specs: list[Field[Any]]) -> str:
    """The `__doc__` dataclass gives a class without one: its name and init signature."""
    parts = ["self"]
    for spec in specs:
        if not spec.init:
            continue
        text = f"{spec.name}: {spec.type!r}" if isinstance(spec.type, str) else spec.name
        if spec.default is not MISSING:
            text += f" = {spec.default!r}"
        elif spec.default_factory is not MISSING:
            text += f" = {_FACTORY!r}"
        parts.append(text)
    return f"{cls.__name__}({', '.join(parts[1:])})"


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, name) for name in getattr(self, _FIELDS)]


def _setstate(self: Any, state: list[Any]) -> None:
    for name, value in zip(getattr(self, _FIELDS), state, strict=False):
        _set(self, name, value)


def _with_slots(cls: type, fields: dict[str, Field[Any]]) -> type:
    """A copy of `cls` with `__slots__` for its own fields (dataclass's `slots=True`)."""
    body = dict(cls.__dict__)
    inherited = {slot for base in cls.__mro__[1:-1]
                 for slot in getattr(base, "__slots__", ())}
    body["__slots__"] = tuple(name for name in fields if name not in inherited)
    for name in fields:
        body.pop(name, None)
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    qualname = getattr(cls, "__qualname__", None)
    made = type(cls)(cls.__name__, cls.__bases__, body)
    if qualname is not None:
        made.__qualname__ = qualname
    return made


def _install(cls: type, name: str, value: object) -> None:
    if name not in cls.__dict__:
        setattr(cls, name, value)


def _build(cls: type, frozen: bool, slots: bool) -> type:
    fields = _collect(cls)
    specs = list(fields.values())
    _check_order(cls, specs)
    for spec in specs:  # a class attribute that held a Field becomes its default, or goes
        if isinstance(cls.__dict__.get(spec.name), Field):
            if spec.default is MISSING:
                delattr(cls, spec.name)
            else:
                setattr(cls, spec.name, spec.default)
    setattr(cls, _FIELDS, fields)
    cls.__record_params__ = (frozen, slots)  # type: ignore[attr-defined]
    if slots:
        cls = _with_slots(cls, fields)
    shown = tuple(spec.name for spec in specs if spec.repr)
    compared = tuple(spec.name for spec in specs if spec.compare)
    hashed = tuple(spec.name for spec in specs
                   if (spec.compare if spec.hash is None else spec.hash))
    _install(cls, "__init__", _make_init(cls, specs, frozen))
    _install(cls, "__repr__", _make_repr(cls, shown))
    explicit_hash = "__hash__" in cls.__dict__ and not (
        cls.__dict__["__hash__"] is None and "__eq__" in cls.__dict__)
    _install(cls, "__eq__", _make_eq(cls, compared))
    if not explicit_hash:
        cls.__hash__ = _make_hash(cls, hashed) if frozen else None  # type: ignore[assignment]
    if frozen:
        _make_frozen(cls, frozenset(fields))
    if frozen and slots:
        _install(cls, "__getstate__", _getstate)
        _install(cls, "__setstate__", _setstate)
    _install(cls, "__match_args__", tuple(spec.name for spec in specs if spec.init))
    if not cls.__doc__:
        cls.__doc__ = _doc(cls, specs)
    return cls


@overload
def record(cls: type[_T], /) -> type[_T]: ...


@overload
def record(*, frozen: bool = True, slots: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, Field))
def record(cls: type[_T] | None = None, /, *, frozen: bool = True,
           slots: bool = False) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """Make `cls` a record: `@dataclass(frozen=True)` without compiling code at import.

    `@record` is frozen; `@record(frozen=False)` is a plain mutable `@dataclass`;
    `slots=True` gives the class `__slots__` as dataclass's option does.
    """
    def wrap(target: type[_T]) -> type[_T]:
        made: type[_T] = _build(target, frozen, slots)
        return made

    return wrap if cls is None else wrap(cls)
