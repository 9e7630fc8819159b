"""docs/public-api.txt, `harness_core.__all__` and the lazy table agree; every name
resolves. There is deliberately no flag that regenerates the file."""

from __future__ import annotations

import importlib
import inspect
from enum import Enum
from pathlib import Path

import harness_core

API = Path(__file__).resolve().parent.parent / "docs" / "public-api.txt"


def _kind(value: object) -> str:
    if inspect.isclass(value):
        if issubclass(value, BaseException):
            return "exception"
        if issubclass(value, Enum):
            return "enum"
        if getattr(value, "_is_protocol", False):
            return "protocol"
        return "class"
    if inspect.isfunction(value):
        return "function"
    return "constant"


def _listed() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for line in API.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, kind, module = line.split()
        out[name] = (kind, module)
    return out


def test_public_api_file_lists_exactly_all() -> None:
    assert sorted(_listed()) == sorted(harness_core.__all__)


def test_every_listed_name_resolves_with_its_kind_and_module() -> None:
    for name, (kind, module) in _listed().items():
        value = getattr(harness_core, name)
        assert _kind(value) == kind, name
        table_module = harness_core._EXPORTS[name].split(":")[0]
        assert table_module == module, name
        assert getattr(importlib.import_module(module), harness_core._EXPORTS[name].split(":")[1]) is value


def test_lazy_table_and_all_agree() -> None:
    assert sorted(harness_core._EXPORTS) == sorted(harness_core.__all__)
