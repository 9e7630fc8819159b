"""The models' attribute docstrings, read from `_model.py`'s source when asked for.

A key's documentation is the string literal under its declaration in `_model.py`.
pydantic can collect these itself (`use_attribute_docstrings`), but it does so while
building every model class, through `inspect` and one parse of the source per class:
about 30 ms of every `io run`'s start-up, for text only `io config schema`, `io config
init` and the docs tests read. Here the module's source is parsed once, and only by
them. It never imports pydantic.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from functools import cache

__all__ = ["field_doc"]


@cache
def _docs() -> Mapping[str, Mapping[str, str]]:
    """Class name -> field name -> attribute docstring, for every class of `_model`."""
    from harness_core.config import _model

    tree = ast.parse(inspect.getsource(_model))
    out: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = _class_docs(node.body)
    return out


def _class_docs(body: list[ast.stmt]) -> dict[str, str]:
    docs: dict[str, str] = {}
    for statement, following in zip(body, body[1:], strict=False):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def field_doc(model: type, name: str) -> str:
    """The docstring of field `name` of `model` (or of the class it inherits it from);
    empty when it has none."""
    docs = _docs()
    for cls in model.__mro__:
        doc = docs.get(cls.__name__, {}).get(name)
        if doc is not None and cls.__module__ == "harness_core.config._model":
            return doc
    return ""
