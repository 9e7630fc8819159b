"""Issue 24 item 1: every record of the package behaves as the dataclass it replaced.

`harness_core._record.record` gives a class dataclass's methods without compiling code at
import. Each record found in harness_core and io_harness_cli is held here to an oracle: a
real `@dataclass(frozen=..., slots=...)` built from the same fields (names, annotations,
defaults, `field(...)` options) and the same hand-written methods. Both are built from the
same arguments and must agree on the constructor's verdict, `repr`, `==` (with a copy, with
an instance differing in one compared field, with another type), `hash`, assignment
(`FrozenInstanceError` or not), `__doc__`, `__match_args__`, `__slots__`,
`dataclasses.fields/replace/asdict`, and pickling.
"""

from __future__ import annotations

import dataclasses
import importlib
import pickle
import pkgutil
from dataclasses import MISSING, FrozenInstanceError
from typing import Any

import pytest

import harness_core
import io_harness_cli
from harness_core._record import record

_GENERATED = {"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__",
              "__getstate__", "__setstate__", "__match_args__", "__dataclass_fields__",
              "__record_params__", "__slots__", "__dict__", "__weakref__"}


def _records() -> list[type]:
    found: dict[str, type] = {}
    for package in (harness_core, io_harness_cli):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if isinstance(value, type) and "__record_params__" in vars(value) \
                        and value.__module__ == module.__name__:
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


RECORDS = _records()


def _oracle(cls: type) -> type:
    """The dataclass `cls` was before `record`: same fields, same hand-written methods."""
    frozen, slots = vars(cls)["__record_params__"]
    body: dict[str, Any] = {name: value for name, value in vars(cls).items()
                            if name not in _GENERATED and not _is_generated(value)}
    annotations: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):
        annotations[spec.name] = spec.type
        body[spec.name] = dataclasses.field(
            default=spec.default, default_factory=spec.default_factory, init=spec.init,
            repr=spec.repr, hash=spec.hash, compare=spec.compare)
    body["__annotations__"] = annotations
    if "__doc__" in body and body["__doc__"] == cls.__doc__ and _doc_was_generated(cls):
        body["__doc__"] = None
    bases = tuple(base for base in cls.__bases__ if "__record_params__" not in vars(base)) \
        or (object,)
    made = type(cls.__name__, bases, body)
    made.__qualname__ = cls.__qualname__
    made.__module__ = cls.__module__
    return dataclasses.dataclass(frozen=frozen, slots=slots)(made)


def _is_generated(value: object) -> bool:
    return getattr(value, "__module__", None) == "harness_core._record"


def _doc_was_generated(cls: type) -> bool:
    return bool(cls.__doc__) and cls.__doc__.startswith(f"{cls.__name__}(")  # type: ignore[union-attr]


_SAMPLES: tuple[object, ...] = ("alpha", 7, None, (), "", 0, 1.5, ("x",), frozenset({"y"}))


def _arguments(cls: type, shift: int) -> dict[str, Any]:
    """Keyword arguments for every init field without a default, varied by `shift`."""
    arguments: dict[str, Any] = {}
    for at, spec in enumerate(dataclasses.fields(cls)):
        if spec.init and spec.default is MISSING and spec.default_factory is MISSING:
            arguments[spec.name] = _SAMPLES[(at + shift) % len(_SAMPLES)]
    return arguments


def _build(cls: type, arguments: dict[str, Any]) -> tuple[object | None, str | None]:
    try:
        return cls(**arguments), None
    except Exception as error:  # the verdict itself is compared
        return None, type(error).__name__


def _safe_repr(value: object) -> str:
    try:
        return repr(value)
    except Exception as error:
        return f"<repr raised {type(error).__name__}>"


def _outcome(act: Any) -> object:
    """What `act()` gives, or the name of what it raised: both sides must agree."""
    try:
        return act()
    except Exception as error:
        return f"raised {type(error).__name__}"


def test_the_package_defines_its_records_with_record() -> None:
    assert len(RECORDS) > 150, [r.__qualname__ for r in RECORDS]


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_record_behaves_as_its_dataclass(cls: type) -> None:
    oracle = _oracle(cls)
    assert [(f.name, f.init, f.repr, f.compare, f.default) for f in dataclasses.fields(cls)] \
        == [(f.name, f.init, f.repr, f.compare, f.default) for f in dataclasses.fields(oracle)]
    assert cls.__match_args__ == oracle.__match_args__  # type: ignore[attr-defined]
    assert getattr(cls, "__slots__", None) == getattr(oracle, "__slots__", None)
    assert cls.__doc__ == oracle.__doc__
    assert (cls.__hash__ is None) == (oracle.__hash__ is None)
    earlier: tuple[object, object] | None = None
    for shift in range(3):
        arguments = _arguments(cls, shift)
        mine, mine_error = _build(cls, arguments)
        theirs, their_error = _build(oracle, arguments)
        assert mine_error == their_error, arguments
        if mine is None:
            continue
        theirs = _mirror(oracle, mine)  # the same values, factories' random ones included
        assert _safe_repr(mine) == _safe_repr(theirs)
        twin, their_twin = _build(cls, arguments)[0], _build(oracle, arguments)[0]
        assert _outcome(lambda: mine == twin) == _outcome(lambda: theirs == their_twin)
        assert (mine == theirs) is False and (mine != 0) is True
        assert _outcome(lambda: hash(mine)) == _outcome(lambda: hash(theirs))
        assert _outcome(lambda: dataclasses.asdict(mine)) == _outcome(  # type: ignore[call-overload]
            lambda: dataclasses.asdict(theirs))  # type: ignore[call-overload]
        _same_after_replace(mine, theirs)
        if earlier is not None:  # instances built from other values
            assert _outcome(lambda: mine == earlier[0]) == _outcome(  # noqa: B023
                lambda: theirs == earlier[1])  # noqa: B023
        earlier = (mine, theirs)
        _same_on_assignment(mine, theirs)


def _mirror(oracle: type, mine: object) -> object:
    """An oracle instance holding exactly `mine`'s field values (same objects)."""
    specs = dataclasses.fields(mine)  # type: ignore[arg-type]
    made = oracle(**{f.name: getattr(mine, f.name) for f in specs if f.init})
    for spec in specs:
        if not spec.init and hasattr(mine, spec.name):
            object.__setattr__(made, spec.name, getattr(mine, spec.name))
    return made


def _same_after_replace(mine: Any, theirs: Any) -> None:
    assert _outcome(lambda: _safe_repr(dataclasses.replace(mine))) == _outcome(
        lambda: _safe_repr(dataclasses.replace(theirs)))


def _same_on_assignment(mine: Any, theirs: Any) -> None:
    names = [f.name for f in dataclasses.fields(mine)]
    if not names:
        return
    verdicts = []
    for target in (mine, theirs):
        try:
            setattr(target, names[0], getattr(target, names[0]))
            verdicts.append("assigned")
        except FrozenInstanceError:
            verdicts.append("frozen")
        except AttributeError:
            verdicts.append("attribute error")
    assert verdicts[0] == verdicts[1]


@record
class _Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = dataclasses.field(default=(), compare=False)
    note: str = dataclasses.field(default="", repr=False)


@record(slots=True)
class _Slotted:
    name: str
    items: list[int] = dataclasses.field(default_factory=list)


@record(frozen=False)
class _Box:
    content: str
    seen: list[str] = dataclasses.field(default_factory=list)
    size: int = dataclasses.field(init=False, default=0)

    def __post_init__(self) -> None:
        self.size = len(self.content)


def test_compare_hash_and_repr_follow_the_field_options() -> None:
    assert _Point(1) == _Point(1, 0, ("other",), "")  # tags not compared
    assert _Point(1) != _Point(1, 0, (), "n")  # note is compared, though not shown
    assert _Point(1) != _Point(1, 2)
    assert hash(_Point(1, tags=("a",))) == hash(_Point(1))
    assert repr(_Point(1, 2, ("a",), "hidden")) == "_Point(x=1, y=2, tags=('a',))"
    assert _Point(1).__eq__(object()) is NotImplemented


def test_the_constructor_refuses_as_a_function_call_would() -> None:
    with pytest.raises(TypeError, match="missing 1 required argument: 'x'"):
        _Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        _Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        _Point(1, x=2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="takes 5 positional arguments but 6 were given"):
        _Point(1, 2, (), "", 5)  # type: ignore[call-arg]


def test_frozen_slotted_records_pickle_and_refuse_assignment() -> None:
    first = _Slotted("a", [1])
    assert pickle.loads(pickle.dumps(first)) == first
    assert _Slotted.__slots__ == ("name", "items")
    with pytest.raises(FrozenInstanceError):
        first.name = "b"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del first.items
    assert _Slotted("a").items is not _Slotted("a").items  # a new list each time


def test_a_mutable_record_runs_post_init_and_is_unhashable() -> None:
    box = _Box("four")
    assert box.size == 4 and box.seen == []
    box.content = "changed"
    assert _Box.__hash__ is None
    with pytest.raises(TypeError):
        hash(box)
    assert dataclasses.replace(box, content="xy").size == 2


def test_record_refuses_what_dataclass_refuses() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default"):
        @record
        class _Bad:
            a: int = 0
            b: int  # type: ignore[misc]
    with pytest.raises(ValueError, match="mutable default"):
        @record
        class _Shared:
            items: list[int] = []  # noqa: RUF012
