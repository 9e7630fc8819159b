"""The checks io.toml's models run beyond types and bounds, written without pydantic.

Each takes the value and the validation context (``{"base_dir": ...}`` or None) and
returns the value to keep, or raises `Invalid` with the error type and message that
`_validate` turns into an operator's message. `_model` runs them through pydantic (on
`io config check` and whenever the plain validator hands a config over); the generated
plain validator (`_plain`) runs the same functions on the normal path, so a check is
written once.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["Invalid", "iso_date", "only_false", "path_nonempty", "resolve_path"]

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class Invalid(ValueError):
    """A value a check refuses: `kind` is the error type `_validate` translates."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def resolve_path(value: Path, context: Mapping[str, Any] | None) -> Path:
    """A relative path made absolute against the naming file's directory, normalised."""
    base = context.get("base_dir") if isinstance(context, dict) else None
    if base is not None and not value.is_absolute():
        value = Path(base) / value
    return Path(os.path.normpath(value))


def iso_date(value: Any, context: Mapping[str, Any] | None) -> Any:
    """A ``"YYYY-MM-DD"`` string as a date; a datetime refused; anything else unchanged."""
    if isinstance(value, dt.datetime):
        raise Invalid("date_type", "expected a date")
    if isinstance(value, str):
        if _ISO_DATE.fullmatch(value):
            try:
                return dt.date.fromisoformat(value)
            except ValueError:
                pass
        raise Invalid("date_format", "expected a date written YYYY-MM-DD")
    return value


def path_nonempty(value: Any, context: Mapping[str, Any] | None) -> Any:
    """An empty string is no path."""
    if value == "":
        raise Invalid("path_empty", "a path must not be empty")
    return value


def only_false(value: bool, context: Mapping[str, Any] | None) -> bool:
    """`true` is not a ceiling; `false` means none."""
    if value:
        raise Invalid("ceiling_true", "true is not a ceiling: write a number, or false")
    return value
