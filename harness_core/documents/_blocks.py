"""The `blocks` argument shared by docx_write and pdf_write, checked once."""

from __future__ import annotations

from typing import Any

from harness_core._record import record
from harness_core.errors import InvalidToolArguments

__all__ = ["Block", "parse_blocks"]

_KINDS = ("heading", "paragraph", "bullets", "numbered", "table", "page_break")


@record
class Block:
    """One block of a document to write.

    Attributes:
        kind: heading, paragraph, bullets, numbered, table or page_break.
        text: The text of a heading or paragraph.
        level: A heading's level, 1-6.
        items: The items of a list.
        rows: A table's rows of cell text (the first is the header).
    """

    kind: str
    text: str = ""
    level: int = 1
    items: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _one(raw: Any, tool: str, index: int) -> Block:
    where = f"{tool}: block {index}"
    if not isinstance(raw, dict) or raw.get("type") not in _KINDS:
        raise InvalidToolArguments(f"{where}: needs `type`, one of {', '.join(_KINDS)}")
    kind = raw["type"]
    if kind in ("heading", "paragraph"):
        text, level = raw.get("text"), raw.get("level", 1)
        if not isinstance(text, str):
            raise InvalidToolArguments(f"{where}: a {kind} needs `text` (a string)")
        if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 6:
            raise InvalidToolArguments(f"{where}: `level` must be an integer from 1 to 6")
        return Block(kind, text=text, level=level)
    if kind in ("bullets", "numbered"):
        items = raw.get("items")
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise InvalidToolArguments(f"{where}: a list needs `items` (strings)")
        return Block(kind, items=tuple(items))
    if kind == "table":
        rows = raw.get("rows")
        if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
            raise InvalidToolArguments(f"{where}: a table needs `rows` (arrays of cells)")
        width = max(len(r) for r in rows)
        if width == 0:
            raise InvalidToolArguments(f"{where}: a table needs at least one column")
        return Block(kind, rows=tuple(
            tuple(_cell(c) for c in r) + ("",) * (width - len(r)) for r in rows))
    return Block(kind)


def parse_blocks(raw: Any, tool: str) -> list[Block]:
    """Check `raw` (the `blocks` argument) and return its blocks."""
    if not isinstance(raw, list) or not raw:
        raise InvalidToolArguments(f"{tool}: `blocks` must be a non-empty array")
    return [_one(item, tool, i) for i, item in enumerate(raw, 1)]
