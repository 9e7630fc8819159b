"""Write `_plain.py`: io.toml's validator without pydantic, generated from the models.

    python -m harness_core.config._gen_plain          # rewrite harness_core/config/_plain.py
    python -m harness_core.config._gen_plain --check  # exit 1 when the file is stale

The pydantic models in `_model` stay the one declaration of io.toml. Pydantic costs
about 110 ms to import and build on every start, so the normal path (`io run`, `resume`,
`tool`, `runs`, `trace`...) checks a config with the code this script writes instead: one
plain class per model (same attribute names, `model_fields_set`, `__pydantic_extra__`)
and one check function per field type, read off the models' annotations, bounds,
defaults, aliases and `extra` setting. It is deliberately stricter than pydantic where in
doubt: anything it does not know (a lax type, an unknown constraint or validator, a
union it cannot decide) makes that key "hand over", and any rejection at all sends the
whole config to pydantic, so an operator only ever reads pydantic's verdict and
`_validate`'s messages. tests/unit/config/test_plain_validator.py holds the two to the
same verdict and the same objects, and fails when this file's output differs from the
checked-in `_plain.py`.
"""

from __future__ import annotations

import datetime as dt
import math
import sys
import types
from collections.abc import Callable
from dataclasses import field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import annotated_types as at
from pydantic import AfterValidator, BaseModel, BeforeValidator, Strict, WithJsonSchema
from pydantic.fields import FieldInfo

from harness_core._record import record
from harness_core.config._fields import specs
from harness_core.config._model import PLAIN_CHECKS, IoToml

__all__ = ["COMMAND", "handed_over", "main", "render"]

TARGET = Path(__file__).with_name("_plain.py")
COMMAND = "python -m harness_core.config._gen_plain"


@record(frozen=False)
class _Meta:
    """What an `Annotated` (or a field's metadata) adds to a type."""

    strict: bool | None = None
    bounds: list[tuple[str, Any]] = field(default_factory=list)
    finite: bool = False
    before: list[Callable[..., Any]] = field(default_factory=list)
    after: list[Callable[..., Any]] = field(default_factory=list)
    unknown: list[Any] = field(default_factory=list)


_BOUNDS = {at.Ge: ("ge", ">="), at.Gt: ("gt", ">"), at.Le: ("le", "<="), at.Lt: ("lt", "<")}
_LENGTHS = (at.MinLen, at.MaxLen)


def _read_meta(items: tuple[Any, ...] | list[Any], meta: _Meta) -> None:
    for item in items:
        if isinstance(item, FieldInfo):
            _read_meta(item.metadata, meta)
        elif type(item) in _BOUNDS:
            op = _BOUNDS[type(item)]
            meta.bounds.append((op[1], getattr(item, op[0])))
        elif isinstance(item, Strict):
            meta.strict = item.strict
        elif isinstance(item, BeforeValidator):
            meta.before.append(item.func)
        elif isinstance(item, AfterValidator):
            meta.after.append(item.func)
        elif getattr(item, "allow_inf_nan", None) is False:
            meta.finite = True
        elif isinstance(item, WithJsonSchema) or type(item).__name__ == "_Marker":
            continue  # documentation, or the SECRET marker: no effect on validation
        else:
            meta.unknown.append(item)


class _Writer:
    """Accumulates the generated module: check functions, classes, imports."""

    def __init__(self) -> None:
        self.functions: list[str] = []
        self.classes: list[str] = []
        self.builders: list[str] = []
        self.imports: dict[str, set[str]] = {}
        self.models: dict[type[BaseModel], str] = {}
        self.handed_over: list[str] = []
        self._memo: dict[str, str] = {}

    def need(self, module: str, name: str) -> str:
        self.imports.setdefault(module, set()).add(name)
        return name

    def function(self, body: list[str]) -> str:
        key = "\n".join(body)
        if key in self._memo:
            return self._memo[key]
        name = f"_t{len(self._memo)}"
        self._memo[key] = name
        lines = [f"def {name}(v: Any, c: Ctx) -> Any:",
                 "    if c.pre and type(v) is str and '${' in v:",
                 "        return v", *(f"    {line}" for line in body)]
        self.functions.append("\n".join(lines))
        return name

    def check(self, tp: Any, meta: _Meta | None = None, where: str = "") -> str:
        """The name of a function checking one value of type `tp`."""
        meta = meta or _Meta()
        while get_origin(tp) is Annotated:
            args = get_args(tp)
            _read_meta(args[1:], meta)
            tp = args[0]
        if meta.unknown:
            return self._hand_over(where, f"unknown metadata {meta.unknown!r}")
        core = self._core(tp, meta, where)
        if not (meta.before or meta.after):
            return core
        calls = [self._plain_check(f, where) for f in (*reversed(meta.before), *meta.after)]
        if None in calls:
            return self._hand_over(where, "a validator with no entry in _model.PLAIN_CHECKS")
        body = [f"v = run_check({calls[i]}, v, c)" for i in range(len(meta.before))]
        body += [f"v = {core}(v, c)"]
        body += [f"v = run_check({name}, v, c)" for name in calls[len(meta.before):]]
        return self.function([*body, "return v"])

    def _plain_check(self, func: Callable[..., Any], where: str) -> str | None:
        plain = PLAIN_CHECKS.get(func)
        if plain is None:
            return None
        return self.need(plain.__module__, plain.__name__)

    def _hand_over(self, where: str, why: str) -> str:
        self.handed_over.append(f"{where}: {why}")
        return self.function(["raise No"])

    def _core(self, tp: Any, meta: _Meta, where: str) -> str:
        strict = True if meta.strict is None else meta.strict
        origin = get_origin(tp)
        if tp is type(None):
            return self.function(["if v is None:", "    return None", "raise No"])
        if origin in (Union, types.UnionType):
            branches = [self.check(arg, None, where) for arg in get_args(tp)]
            return self.function([f"return first(v, c, ({', '.join(branches)},))"])
        if origin is Literal:
            return self.function([f"return literal(v, {get_args(tp)!r})"])
        if origin is list:
            item = self.check(get_args(tp)[0], None, f"{where}[]")
            if meta.bounds or meta.finite:
                return self._hand_over(where, "bounds on an array")
            return self.function(["if type(v) is not list:", "    raise No",
                                  f"return [{item}(x, c) for x in v]"])
        if origin is dict:
            key, value = (self.check(a, None, f"{where}{{}}") for a in get_args(tp))
            return self.function(["if type(v) is not dict:", "    raise No",
                                  f"return {{{key}(k, c): {value}(x, c) for k, x in v.items()}}"])
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return self.model(tp)
        return self._scalar(tp, meta, strict, where)

    def _scalar(self, tp: Any, meta: _Meta, strict: bool, where: str) -> str:
        if isinstance(tp, type) and issubclass(tp, Enum):
            name = self.need(tp.__module__, tp.__name__)
            return self.function([f"return enum_value({name}, v, {strict})"])
        if tp is Any:
            return self.function(["return v"])
        if tp is Path and not (meta.bounds or meta.finite):
            return self.function([f"return path_value(v, {strict})"])
        tests = {bool: "type(v) is bool", int: "type(v) is int", str: "type(v) is str",
                 float: "type(v) is float or type(v) is int", dt.date: "type(v) is dt.date"}
        if tp not in tests or not strict:
            return self._hand_over(where, f"type {tp!r} (strict={strict})")
        if tp is bool and meta.bounds:
            return self._hand_over(where, "bounds on a boolean")
        value = "float(v)" if tp is float else "v"
        body = [f"if not ({tests[tp]}):", "    raise No", f"v = {value}"]
        if meta.finite:
            body += ["if not math.isfinite(v):", "    raise No"]
        for op, bound in meta.bounds:
            body += [f"if not (v {op} {_literal(bound)}):", "    raise No"]
        return self.function([*body, "return v"])

    def model(self, model: type[BaseModel]) -> str:
        """The builder of one model's plain twin (written once per model)."""
        if model in self.models:
            return self.models[model]
        builder = f"_m_{model.__name__}"
        self.models[model] = builder
        self.classes.append(self._class(model))
        rows = [self._row(model, name, info) for name, info in model.model_fields.items()]
        extra = model.model_config.get("extra") or "ignore"
        extra_check = "None"
        if extra == "allow":
            hint = get_type_hints(model).get("__pydantic_extra__")
            args = get_args(hint)
            extra_check = self.check(args[1] if len(args) == 2 else Any, None,
                                     f"{model.__name__}.*")
        call = (f"    return build({model.__name__}, _F_{model.__name__}, {extra!r},"
                f" {extra_check}, v, c)")
        why = _whole_model(model)
        if why:  # checks the generator cannot see: pydantic decides every such table
            self.handed_over.append(f"{model.__name__}: {why}")
            call = "    raise No"
        self.builders.append("\n".join([
            f"_F_{model.__name__}: Fields = (", *rows, ")", "", "",
            f"def {builder}(v: Any, c: Ctx) -> Any:", call,
        ]))
        return builder

    def _row(self, model: type[BaseModel], name: str, info: FieldInfo) -> str:
        where = f"{model.__name__}.{name}"
        meta = _Meta()
        _read_meta(info.metadata, meta)
        check = self.check(info.annotation, meta, where)
        alias = info.alias or name
        if info.validation_alias is not None:
            if isinstance(info.validation_alias, str):
                alias = info.validation_alias
            else:  # AliasChoices / AliasPath: pydantic looks in places the twin does not
                check = self._hand_over(where, f"validation alias {info.validation_alias!r}")
        return f"    ({name!r}, {alias!r}, {check}, lambda: {self._default(info)}),"

    def _default(self, info: FieldInfo) -> str:
        if info.default_factory is not None:
            return self.value(info.default_factory())  # type: ignore[call-arg]
        return self.value(info.default)

    def value(self, value: Any) -> str:
        """Python source that builds `value` afresh (a default)."""
        if isinstance(value, BaseModel):
            self.model(type(value))
            parts = ", ".join(f"{k}={self.value(getattr(value, k))}" for k in type(value).model_fields)
            extra = self.value(value.__pydantic_extra__)
            return (f"make({type(value).__name__}, {sorted(value.model_fields_set)!r}, "
                    f"{extra}, {parts})")
        if isinstance(value, Enum):
            return f"{self.need(type(value).__module__, type(value).__name__)}.{value.name}"
        if isinstance(value, Path):
            return f"Path({str(value)!r})"
        if isinstance(value, list | tuple):
            inner = ", ".join(self.value(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if value else ''})"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k!r}: {self.value(v)}" for k, v in value.items()) + "}"
        return _literal(value)

    def _class(self, model: type[BaseModel]) -> str:
        names = list(model.model_fields)
        hints = {n: self.annotation(i.annotation) for n, i in model.model_fields.items()}
        table = {n: (s.kind.name, s.secret, s.ceiling) for n, s in specs(model).items()}
        doc = ((model.__doc__ or "").strip().splitlines() or [model.__name__])[0]
        lines = [f"class {model.__name__}(Plain):",
                 f'    """{doc} (plain twin of `_model.{model.__name__}`)."""', "",
                 f"    __slots__ = {tuple(names)!r}",
                 f"    model_fields: ClassVar[tuple[str, ...]] = {tuple(names)!r}",
                 f"    specs: ClassVar[dict[str, tuple[str, bool, bool]]] = {table!r}"]
        lines += [f"    {n}: {hints[n]}" for n in names]
        return "\n".join(lines)

    def annotation(self, tp: Any) -> str:
        """Source text of `tp` for the plain class's attribute annotations."""
        while get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
        origin = get_origin(tp)
        if origin in (Union, types.UnionType):
            return " | ".join(dict.fromkeys(self.annotation(a) for a in get_args(tp)))
        if origin is Literal:
            return f"Literal[{', '.join(repr(a) for a in get_args(tp))}]"
        if origin in (list, dict):
            return f"{origin.__name__}[{', '.join(self.annotation(a) for a in get_args(tp))}]"
        if tp is type(None):
            return "None"
        if tp is dt.date:
            return "dt.date"
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            self.model(tp)
            return tp.__name__
        if isinstance(tp, type) and issubclass(tp, Enum):
            return self.need(tp.__module__, tp.__name__)
        return getattr(tp, "__name__", "Any")


def _whole_model(model: type[BaseModel]) -> str:
    """Why no table of `model` can be checked without pydantic ("" when one can)."""
    decorators = model.__pydantic_decorators__
    if (decorators.validators or decorators.field_validators or decorators.root_validators
            or decorators.model_validators):
        return "validators declared with decorators"
    if model.model_config.get("populate_by_name") or model.model_config.get("validate_by_name"):
        return "keys accepted by name as well as by alias"
    if type(model).__getattribute__(model, "model_post_init") is not BaseModel.model_post_init:
        return "a model_post_init"
    return ""


def _literal(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, dt.date):
        return f"dt.date({value.year}, {value.month}, {value.day})"
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    raise TypeError(f"{COMMAND}: cannot write the default {value!r} as source")




def handed_over(root: type[BaseModel] = IoToml) -> list[str]:
    """The keys (``Model.field``) the plain validator hands to pydantic whenever set."""
    writer = _Writer()
    writer.model(root)
    return writer.handed_over


def render(root: type[BaseModel] = IoToml) -> str:
    """The source of `_plain.py` as the models declare it now (`root`: another model,
    for the generator's own tests)."""
    writer = _Writer()
    writer.model(root)
    imports = "\n".join(
        f"from {module} import {', '.join(sorted(names))}"
        for module, names in sorted(writer.imports.items()))
    notes = "".join(f"\n#   {line}" for line in writer.handed_over) or " none"
    header = f'''"""io.toml's validator without pydantic. GENERATED by `{COMMAND}`: do not edit.

One plain class per model of `_model` and one check per field type; any value it does
not accept makes `validate` return None, and the loader then asks pydantic.
"""
# ruff: noqa
# mypy: disable-error-code="no-untyped-def"
# Keys handed to pydantic whenever set:{notes}

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any, ClassVar, Literal

from harness_core.config._plain_base import (
    Ctx, Fields, No, Plain, build, enum_value, first, literal, make, path_value, run_check,
)
{imports}

__all__ = ["{root.__name__}", "validate"]


def validate(data: Any, context: dict[str, Any] | None = None, *, pre: bool = False) -> Any:
    """`data` as the plain twin of `{root.__name__}`, or None when pydantic must decide.

    With `pre`, a string holding `${{` is accepted wherever it stands (the check before
    substitution ignores it, as `_validate.check_file` does); the result is then only a
    verdict.
    """
    try:
        return _m_{root.__name__}(data, Ctx(context, pre))
    except No:
        return None
'''
    parts = [header, *writer.classes, *writer.functions, *writer.builders]
    return "\n\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write `_plain.py` (or, with ``--check``, report whether it is stale)."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in args:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
