"""The generated plain validator (`_plain`) and pydantic give the same verdict on io.toml
and build the same objects; the checked-in `_plain.py` is what the generator writes.

Documents are drawn at random from the models' own field types (valid values, values at
and past every bound, wrong TOML types, `${...}` strings, unknown keys), so a key added
to `_model` is covered as soon as the generator is re-run.
"""

from __future__ import annotations

import datetime as dt
import math
import types
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import annotated_types as at
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from harness_core.config import _gen_plain, _plain
from harness_core.config._model import MAX_NUMBER, IoToml

_SETTINGS = settings(max_examples=250, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_SCALARS = st.one_of(
    st.booleans(), st.integers(), st.floats(), st.text(max_size=6),
    st.sampled_from(["", "${env:X}", "a/${env:Y}", "2024-02-30", "2024-01-02", "auto"]),
    st.dates(), st.datetimes(), st.times(),
)
_JUNK = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=2),
                  st.dictionaries(st.text(max_size=3), _SCALARS, max_size=2))


def _bounds(items: Any) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if hasattr(item, "metadata") and not isinstance(item, type):
            out += _bounds(item.metadata)
        for kind, attr in ((at.Ge, "ge"), (at.Gt, "gt"), (at.Le, "le"), (at.Lt, "lt")):
            if isinstance(item, kind):
                out.append(getattr(item, attr))
    return out


def _numbers(tp: Any, bounds: list[Any]) -> st.SearchStrategy[Any]:
    near = [b + d for b in bounds for d in (-1, 0, 1)] + [0, 1, MAX_NUMBER + 1]
    ints = st.one_of(st.integers(-3, 300), st.sampled_from(near))
    if tp is int:
        return ints
    specials = st.sampled_from([0.0005, 0.001, 0.5, 1.0, math.inf, -math.inf, math.nan])
    return st.one_of(ints, specials, st.floats(-10, 1e13))


def _leaf(tp: Any, bounds: list[Any]) -> st.SearchStrategy[Any]:
    if isinstance(tp, type) and issubclass(tp, Enum):
        return st.sampled_from([m.value for m in tp])
    table: dict[Any, st.SearchStrategy[Any]] = {
        bool: st.booleans(),
        str: st.one_of(st.text(max_size=5), st.just("${env:X}")),
        Path: st.sampled_from(["", "a", "../b", "/abs/c", "d/./e"]),
        dt.date: st.one_of(st.dates(), st.sampled_from(["2024-01-02", "2024-1-2", "x"])),
        Any: _SCALARS,
    }
    if tp in (int, float):
        return _numbers(tp, bounds)
    return table.get(tp, _JUNK)


def values(tp: Any, bounds: list[Any] | None = None) -> st.SearchStrategy[Any]:
    """Values a key of type `tp` may hold, at and past its bounds, or junk."""
    bounds = list(bounds or [])
    while get_origin(tp) is Annotated:
        bounds += _bounds(get_args(tp)[1:])
        tp = get_args(tp)[0]
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        good = st.one_of(*(values(a, bounds) for a in get_args(tp) if a is not type(None)))
    elif origin is Literal:
        good = st.sampled_from(get_args(tp))
    elif origin is list:
        good = st.lists(values(get_args(tp)[0]), max_size=3)
    elif origin is dict:
        good = st.dictionaries(st.sampled_from(["a", "b.c", "m"]), values(get_args(tp)[1]),
                               max_size=3)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        good = documents(tp)
    else:
        good = _leaf(tp, bounds)
    return st.one_of(good, good, good, _JUNK)


@cache
def documents(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    """Tables of `model`: any subset of its keys, sometimes an unknown or extra one."""
    optional = {
        (info.alias or name): values(info.annotation, _bounds(info.metadata))
        for name, info in model.model_fields.items()
    }
    extra: st.SearchStrategy[dict[str, Any]] = st.dictionaries(
        st.sampled_from(["bogus", "x-y"]), _JUNK, max_size=1)
    if model.model_config.get("extra") == "allow":
        named = get_args(get_type_hints(model).get("__pydantic_extra__"))
        item = documents(named[1]) if len(named) == 2 else _JUNK
        extra = st.dictionaries(st.sampled_from(["reviewer", "w"]), st.one_of(item, _JUNK),
                                max_size=2)
    base = st.fixed_dictionaries({}, optional=optional)
    rare = st.one_of(st.just({}), st.just({}), st.just({}), extra)
    return st.builds(lambda a, b: {**b, **a}, base, rare)


def dump(value: Any) -> Any:
    """A comparable picture of a model (pydantic or plain) down to each value's type."""
    if hasattr(value, "model_fields_set"):  # a pydantic model or a plain twin
        names = type(value).model_fields
        extra = value.__pydantic_extra__
        return (type(value).__name__, {n: dump(getattr(value, n)) for n in names},
                sorted(value.model_fields_set), dump(extra))
    if isinstance(value, list):
        return [dump(v) for v in value]
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    return (type(value), value)


def _unresolved(value: object) -> bool:
    return isinstance(value, str) and "${" in value


def pydantic_verdict(model: type[BaseModel], data: Any, context: dict[str, Any] | None,
                     pre: bool) -> tuple[bool, Any]:
    """What `_validate.check_file` makes of `data` (before substitution: `pre`)."""
    try:
        return True, model.model_validate(data, context=context or {})
    except ValidationError as exc:
        if pre and not [e for e in exc.errors() if not _unresolved(e.get("input"))]:
            return True, None
        return False, None


def _compare(model: type[BaseModel], validate: Any, data: Any, context: Any, pre: bool,
             excused: list[str]) -> None:
    plain = validate(data, context, pre=pre)
    ok, expected = pydantic_verdict(model, data, context, pre)
    if plain is None and ok:
        # "Model.key: why" excuses a key; "_Model: why" the key holding such a table.
        names = {key.split(":")[0].split(".")[-1].strip("_").lower() for key in excused}
        assert any(f"'{name}'" in repr(data) for name in names), (
            f"plain refused what pydantic accepts: {data!r}")
        return
    assert (plain is not None) == ok, f"verdicts differ on {data!r} (pre={pre})"
    if ok and not pre:
        assert dump(plain) == dump(expected)


_CONTEXTS = st.sampled_from([None, {"base_dir": Path("/etc/io")}, {"base_dir": Path("/w/p")}])


@_SETTINGS
@given(data=documents(IoToml), context=_CONTEXTS, pre=st.booleans())
def test_plain_and_pydantic_agree_on_random_io_toml(data: dict[str, Any], context: Any,
                                                    pre: bool) -> None:
    _compare(IoToml, _plain.validate, data, context, pre, _gen_plain.handed_over())


@_SETTINGS
@given(data=st.one_of(_JUNK, st.lists(_JUNK)), context=_CONTEXTS)
def test_plain_refuses_what_is_not_a_table(data: Any, context: Any) -> None:
    _compare(IoToml, _plain.validate, data, context, False, [])


def test_a_valid_config_builds_the_same_objects_with_defaults_filled_in() -> None:
    data = {
        "provider": {"kind": "openai", "model": "m", "script": "s.jsonl",
                     "fallback": [{"kind": "scripted", "script": "x"}]},
        "policy": {"tier": "read-only", "allow_read": ["**"]},
        "sandbox": {"memory_mb": False, "wall_seconds": 3},
        "budget": {"max_cost_usd": 2, "cache_read_weight": 0},
        "contract": {"verify": [{"command": "true", "inputs": ["a"]}]},
        "prices": {"as_of": "2024-05-01", "models": {"m": {"input_per_mtok": 1}}},
        "agents": {"max_depth": 1, "reviewer": {"deny_net": ["*"]}},
        "telemetry": {"headers": {"k": "v"}},
    }
    context = {"base_dir": Path("/w")}
    plain = _plain.validate(data, context)
    assert plain is not None
    assert dump(plain) == dump(IoToml.model_validate(data, context=context))
    assert plain.provider.script == Path("/w/s.jsonl")
    assert plain.telemetry.model_fields_set == {"headers"}
    assert plain.agents.__pydantic_extra__["reviewer"].deny_net == ["*"]


@pytest.mark.parametrize("data", [
    {"sandbox": {"memory_mb": True}},  # true is not a ceiling
    {"sandbox": {"memory_mb": 0}},  # below the bound
    {"budget": {"wall_seconds": math.inf}},  # not finite
    {"prices": {"as_of": "2024-02-30"}},  # no such date
    {"store": {"path": ""}},  # an empty path
    {"run": {"stall_window": True}},  # a boolean is not an integer
    {"provider": {"kind": "gpt"}},  # not one of the kinds
    {"policy": {"tier": "everything"}},  # not a tier
    {"mcp": {"name": "x"}},  # a table where an array of tables goes
    {"web": {"search": True, "serach": True}},  # an unknown key
])
def test_what_pydantic_refuses_the_plain_validator_refuses(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        IoToml.model_validate(data)
    assert _plain.validate(data) is None


def test_the_checked_in_plain_validator_is_what_the_generator_writes() -> None:
    checked_in = Path(_plain.__file__).read_text(encoding="utf-8")
    assert checked_in == _gen_plain.render(), (
        "harness_core/config/_plain.py is stale: the io.toml models changed; run "
        f"`{_gen_plain.COMMAND}` and commit the result")


def test_no_io_toml_key_is_handed_to_pydantic_on_every_load() -> None:
    """Every key's type and check is known to the generator (a validator without a
    pydantic-free twin in `_model.PLAIN_CHECKS` would make every file setting it slow)."""
    assert _gen_plain.handed_over() == []


# The generator on a model using what io.toml does not use yet: aliases, extra="ignore",
# a lax type, a validator without a plain twin, named tables, nested arrays of tables.

def _shout(value: str) -> str:
    return value.upper()


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    n: Annotated[int, Field(ge=-2, lt=5)] = 0
    tags: list[Literal["a", "b"]] = []


class _Named(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    __pydantic_extra__: dict[str, _Item] = Field(init=False)
    size: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None


class _Checked(BaseModel):
    """A table with a check the generator cannot see: pydantic decides all of it."""

    model_config = ConfigDict(extra="forbid", strict=True)
    odd: int = 1

    @field_validator("odd")
    @classmethod
    def _odd(cls, value: int) -> int:
        if value % 2 == 0:
            raise ValueError("must be odd")
        return value


class _Sample(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    dashed: str = Field("d", alias="dashed-key")
    loud: Annotated[str, AfterValidator(_shout)] = "x"
    lax: Annotated[int, Field(strict=False)] = 1
    items: list[_Item] = []
    byname: dict[str, _Item] = {}
    named: _Named = _Named()
    either: int | str | None = None
    weight: float = 0.5
    checked: _Checked = _Checked()
    choice: int = Field(0, validation_alias=AliasChoices("choice", "pick"))


@cache
def _sample_validator() -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(_gen_plain.render(_Sample), "<plain _Sample>", "exec"), namespace)  # noqa: S102
    return namespace["validate"]


def test_the_generator_hands_over_what_it_does_not_know() -> None:
    assert sorted(_gen_plain.handed_over(_Sample)) == [
        "_Checked: validators declared with decorators",
        "_Sample.choice: validation alias AliasChoices(choices=['choice', 'pick'])",
        "_Sample.lax: type <class 'int'> (strict=False)",
        "_Sample.loud: a validator with no entry in _model.PLAIN_CHECKS",
    ]


@_SETTINGS
@given(data=documents(_Sample), pre=st.booleans())
def test_the_generator_agrees_with_pydantic_on_other_field_types(data: dict[str, Any],
                                                                  pre: bool) -> None:
    _compare(_Sample, _sample_validator(), data, None, pre, _gen_plain.handed_over(_Sample))


def _both(workspace: Path, env: dict[str, str]) -> tuple[Any, Any]:
    from harness_core.config import load

    return (load(workspace, env=env, validator="plain"),
            load(workspace, env=env, validator="pydantic"))


def test_load_projects_the_same_config_on_either_path(tmp_path: Path) -> None:
    (tmp_path / "key").write_text("sk-file\n")
    (tmp_path / "io.toml").write_text(
        '[provider]\nkind = "openai"\nmodel = "m"\napi_key = "${env:KEY}"\n'
        'ca_bundle = "certs/ca.pem"\n[[provider.fallback]]\nkind = "scripted"\n'
        'script = "r.jsonl"\n[policy]\ntier = "full"\ndeny_read = ["secrets/**"]\n'
        '[sandbox]\nmemory_mb = false\n[budget]\nmax_cost_usd = 3\n'
        '[prices]\nas_of = 2024-05-01\n[prices.models.m]\ninput_per_mtok = 1\n'
        'output_per_mtok = 2\n[[contract.verify]]\ncommand = "pytest -q"\n'
        '[agents.reviewer]\ndeny_write = ["**"]\n[[mcp]]\nname = "fs"\ncommand = "srv"\n'
        'env = { T = "${file:key}" }\n[telemetry]\nservice_name = "x"\n')
    (tmp_path / "io.local.toml").write_text('[sandbox]\ncpu_seconds = 5\n[policy]\n'
                                            'allow_exec = ["make *"]\n')
    env = {"KEY": "sk-env", "HOME": str(tmp_path), "IO_SYSTEM_CONFIG": str(tmp_path / "no")}
    plain, checked = _both(tmp_path, env)
    assert plain == checked
    assert plain.provider.api_key_ref == "${env:KEY}" and plain.mcp[0].env == {"T": "sk-file"}
    assert "sk-file" in plain.secrets


def test_a_config_the_plain_validator_refuses_gets_pydantics_message(tmp_path: Path) -> None:
    from harness_core.config import load
    from harness_core.errors import ConfigError

    (tmp_path / "io.toml").write_text("[sandbox]\nmemory_mb = 0\n")
    env = {"HOME": str(tmp_path), "IO_SYSTEM_CONFIG": str(tmp_path / "no")}
    messages = []
    for validator in ("plain", "pydantic"):
        with pytest.raises(ConfigError) as caught:
            load(tmp_path, env=env, validator=validator)  # type: ignore[arg-type]
        messages.append(caught.value.message)
    assert messages[0] == messages[1]
    assert "sandbox.memory_mb" in messages[0] and "must be at least 1" in messages[0]
