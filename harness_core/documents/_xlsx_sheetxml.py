"""One worksheet's XML as text: where each row and cell is, and cell elements rebuilt.

xlsx_edit changes a workbook by replacing the text of the cells it names (and of the
formula cells whose cached results it must drop), leaving every other byte of the part
as the producer wrote it. This module finds those spans with regular expressions over
the decoded XML; it never parses the part into a tree and writes it back (a serialiser
would reorder attributes, namespaces and whitespace). It must not touch any byte
outside the spans it is asked to replace.
"""

from __future__ import annotations

import bisect
import re
from array import array
from dataclasses import dataclass

from openpyxl.utils.cell import (
    column_index_from_string,
    coordinate_from_string,
    get_column_letter,
)

__all__ = ["Cell", "SheetXml", "Unpatchable", "cell_element", "parse_coordinate"]


class Unpatchable(Exception):
    """The part cannot be patched in place (rows or cells without references, an
    encoding other than UTF-8): the caller names the reason and writes nothing."""


def parse_coordinate(ref: str) -> tuple[int, int]:
    """(row, column) of an A1-style reference, both 1-based."""
    letters, row = coordinate_from_string(ref)
    return row, column_index_from_string(letters)


@dataclass(slots=True)
class Cell:
    """One `<c>` element: its span in the part and what it holds."""

    ref: str
    row: int
    column: int
    start: int
    end: int
    attrs: str
    inner: str
    implicit: bool = False
    """Its position comes from the cell before it (no `r` attribute)."""

    def attr(self, name: str) -> str | None:
        found = re.search(rf'(?:^|\s){name}\s*=\s*"([^"]*)"', self.attrs)
        return None if found is None else found.group(1)

    def formula(self, prefix: str) -> tuple[str, str] | None:
        """(the `<f>` element's attributes, its text) or None for a plain value."""
        found = re.search(rf"<{prefix}f\b([^>]*?)(?:/>|>(.*?)</{prefix}f>)", self.inner,
                          re.DOTALL)
        return None if found is None else (found.group(1), found.group(2) or "")


@dataclass(slots=True)
class _Row:
    number: int
    start: int
    open_end: int  # just after the opening tag's ">"
    end: int  # just after `</row>` (or the self-closing tag)
    closed: bool  # a self-closing `<row .../>`
    attrs: str
    implicit: bool  # no `r`: the row after the one before it
    scanned: list[Cell] | None = None


_DECL = re.compile(r"^\s*<\?xml[^>]*encoding\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)


class SheetXml:
    """A worksheet part's text, its rows and cells by position; replaced spans applied
    at the end in one pass (`render`)."""

    def __init__(self, data: bytes, part: str) -> None:
        declared = _DECL.match(data[:200].decode("ascii", "replace"))
        if declared and declared.group(1).lower().replace("-", "") != "utf8":
            raise Unpatchable(f"{part} is encoded in {declared.group(1)}, not UTF-8")
        try:
            self.text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Unpatchable(f"{part} is not valid UTF-8") from None
        self.part = part
        opening = re.search(r"<(\w+:)?sheetData\b[^>]*?(/?)>", self.text)
        if opening is None:
            raise Unpatchable(f"{part} has no <sheetData>")
        self.prefix = opening.group(1) or ""
        self._data_open, self._data_closed = opening.end(), opening.group(2) == "/"
        self._data_tag = opening.span()
        if self._data_closed:
            self._data_end = opening.end()
        else:
            close = self.text.find(f"</{self.prefix}sheetData>", opening.end())
            if close < 0:
                raise Unpatchable(f"{part}: <sheetData> is not closed")
            self._data_end = close
        self._numbers, self._spans, self._flags = array("q"), array("q"), bytearray()
        self._scan_rows()
        self._sorted = all(a < b for a, b in zip(self._numbers, self._numbers[1:], strict=False))
        self._made: dict[int, _Row] = {}
        self._replacements: dict[int, tuple[int, str]] = {}
        self._inserts: dict[int, list[str]] = {}

    def _scan_rows(self) -> None:
        """Each row's number, span and flags, in arrays: a `_Row` object is made only
        for a row an edit touches (400,000 row objects took 160 MiB)."""
        p = re.escape(self.prefix)
        pattern = re.compile(rf"<{p}row\b([^>]*?)(/?)>")
        number_attr = re.compile(r'(?:^|\s)r\s*=\s*"(\d+)"')
        close = f"</{self.prefix}row>"
        pos, last = self._data_open, 0
        while found := pattern.search(self.text, pos, self._data_end):
            number = number_attr.search(found.group(1))
            last = last + 1 if number is None else int(number.group(1))
            closed = found.group(2) == "/"
            end = found.end() if closed else self.text.find(close, found.end())
            if end < 0:
                raise Unpatchable(f"{self.part}: a row is not closed")
            pos = end if closed else end + len(close)
            self._numbers.append(last)
            self._spans.extend((found.start(), found.end(), pos))
            self._flags.append(int(closed) | (2 if number is None else 0))

    def _row(self, index: int) -> _Row:
        if index not in self._made:
            start, open_end, end = self._spans[3 * index:3 * index + 3]
            flags = self._flags[index]
            self._made[index] = _Row(self._numbers[index], start, open_end, end,
                                     bool(flags & 1), self.text[start + 1:open_end],
                                     bool(flags & 2))
        return self._made[index]

    def row(self, number: int) -> _Row | None:
        """The row numbered `number`, or None."""
        if self._sorted:
            at = bisect.bisect_left(self._numbers, number)
            found = at < len(self._numbers) and self._numbers[at] == number
            return self._row(at) if found else None
        return next((self._row(i) for i, n in enumerate(self._numbers) if n == number),
                    None)

    def _row_after(self, number: int) -> _Row | None:
        if self._sorted:
            at = bisect.bisect_right(self._numbers, number)
            return self._row(at) if at < len(self._numbers) else None
        later = [(n, i) for i, n in enumerate(self._numbers) if n > number]
        return self._row(min(later)[1]) if later else None

    def _scan_cells(self, number: int, start: int, stop: int) -> list[Cell]:
        p = re.escape(self.prefix)
        cells: list[Cell] = []
        pattern = re.compile(rf"<{p}c\b([^>]*?)(/?)>")
        close = f"</{self.prefix}c>"
        pos = start
        while True:
            found = pattern.search(self.text, pos, stop)
            if found is None:
                return cells
            ref = re.search(r'(?:^|\s)r\s*=\s*"([A-Za-z]{1,3}[0-9]+)"', found.group(1))
            if ref is None:
                column = (cells[-1].column if cells else 0) + 1
                row = number
            else:
                row, column = parse_coordinate(ref.group(1).upper())
            if found.group(2) == "/":
                end, inner = found.end(), ""
            else:
                end = self.text.find(close, found.end(), stop)
                if end < 0:
                    raise Unpatchable(f"{self.part}: a cell is not closed")
                inner = self.text[found.end():end]
                end += len(close)
            cells.append(Cell(f"{get_column_letter(column)}{row}", row, column,
                              found.start(), end, found.group(1), inner, ref is None))
            pos = end

    def cells_of(self, row: _Row) -> list[Cell]:
        """The cells of one row, scanned on first use (a sheet's other rows never are)."""
        if row.scanned is None:
            row.scanned = [] if row.closed else self._scan_cells(
                row.number, row.open_end, row.end - len(f"</{self.prefix}row>"))
        return row.scanned

    def cell(self, ref: str) -> Cell | None:
        number, _ = parse_coordinate(ref)
        row = self.row(number)
        return None if row is None else next(
            (c for c in self.cells_of(row) if c.ref == ref), None)

    def formula_cells(self) -> list[Cell]:
        """Every cell holding a `<f>` element (only the rows that hold one are scanned)."""
        starts = self._spans[0::3]
        wanted: set[int] = set()
        pattern = re.compile(rf"<{re.escape(self.prefix)}f\b")
        for found in pattern.finditer(self.text, self._data_open, self._data_end):
            at = bisect.bisect_right(starts, found.start()) - 1
            if at >= 0:
                wanted.add(at)
        return [c for at in sorted(wanted) for c in self.cells_of(self._row(at))
                if c.formula(self.prefix) is not None]

    def ranges(self, element: str) -> list[str]:
        """The `ref` of every `<element ref=…>` outside the cells (e.g. mergeCell)."""
        p = re.escape(self.prefix)
        return re.findall(rf'<{p}{element}\b[^>]*?\sref\s*=\s*"([^"]+)"', self.text)

    def replace(self, cell: Cell, text: str) -> None:
        """Replace one existing cell's element with `text`."""
        self._replacements[cell.start] = (cell.end, text)

    def insert(self, new: dict[str, str]) -> None:
        """Add cell elements that do not exist yet (reference -> element), in row and
        column order."""
        by_row: dict[int, list[tuple[int, str]]] = {}
        for ref, text in new.items():
            number, column = parse_coordinate(ref)
            by_row.setdefault(number, []).append((column, text))
        for number in sorted(by_row):
            cells = sorted(by_row[number])
            row = self.row(number)
            if row is None:
                self._insert_row(number, "".join(text for _, text in cells))
            elif row.closed:  # `<row r="5"/>` becomes `<row r="5">…</row>`
                tag = _widened(self.text[row.start:row.end], [c for c, _ in cells])
                self._replacements[row.start] = (row.end, tag[:-2].rstrip() + ">" + "".join(
                    text for _, text in cells) + f"</{self.prefix}row>")
            else:
                tag = self.text[row.start:row.open_end]
                wider = _widened(tag, [c for c, _ in cells])
                if wider != tag:
                    self._replacements[row.start] = (row.open_end, wider)
                for column, text in cells:
                    after = next((c for c in self.cells_of(row) if c.column > column),
                                 None)
                    if after is not None and after.implicit:
                        raise Unpatchable(f"{self.part}: row {number}'s cells carry no"
                                          " references, so none can be added before them")
                    at = after.start if after is not None else \
                        row.end - len(f"</{self.prefix}row>")
                    self._inserts.setdefault(at, []).append(text)

    def _insert_row(self, number: int, cells: str) -> None:
        element = f'<{self.prefix}row r="{number}">{cells}</{self.prefix}row>'
        after = self._row_after(number)
        if after is not None and after.implicit:
            raise Unpatchable(f"{self.part}: its rows carry no references, so none can be"
                              " added before them")
        if after is not None:
            self._inserts.setdefault(after.start, []).append(element)
        elif self._data_closed:
            start, end = self._data_tag
            tag = self.text[start:end]
            done = self._replacements.get(start, (end, tag[:-2].rstrip() + ">"))[1]
            self._replacements[start] = (end, done.removesuffix(
                f"</{self.prefix}sheetData>") + element + f"</{self.prefix}sheetData>")
        else:
            self._inserts.setdefault(self._data_end, []).append(element)

    def set_dimension(self, refs: list[str]) -> None:
        """Widen `<dimension ref>` to hold `refs` (new cells past it)."""
        p = re.escape(self.prefix)
        found = re.search(rf'<{p}dimension\b[^>]*?\sref\s*=\s*"([^"]+)"', self.text)
        if found is None:
            return
        first, _, last = found.group(1).partition(":")
        try:
            r1, c1 = parse_coordinate(first)
            r2, c2 = parse_coordinate(last or first)
        except ValueError:
            return
        for ref in refs:
            r, c = parse_coordinate(ref)
            r1, c1, r2, c2 = min(r1, r), min(c1, c), max(r2, r), max(c2, c)
        wider = f"{get_column_letter(c1)}{r1}:{get_column_letter(c2)}{r2}"
        if wider != found.group(1) and found.start(1) not in self._replacements:
            self._replacements[found.start(1)] = (found.end(1), wider)

    def render(self) -> bytes:
        out: list[str] = []
        pos = 0
        for start in sorted({*self._replacements, *self._inserts}):
            out.append(self.text[pos:start])
            out.extend(self._inserts.get(start, ()))
            end, text = self._replacements.get(start, (start, ""))
            out.append(text)
            pos = end
        out.append(self.text[pos:])
        return "".join(out).encode("utf-8")

    @property
    def changed(self) -> bool:
        return bool(self._replacements or self._inserts)


def _widened(tag: str, columns: list[int]) -> str:
    """A row's opening tag with its `spans` hint ("1:3") widened to hold `columns`."""
    found = re.search(r'\bspans\s*=\s*"(\d+):(\d+)"', tag)
    if found is None:
        return tag
    first = min(int(found.group(1)), *columns)
    last = max(int(found.group(2)), *columns)
    return tag[:found.start()] + f'spans="{first}:{last}"' + tag[found.end():]


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]|_x[0-9A-Fa-f]{4}_")


def _escape(text: str) -> str:
    """XML text, with characters XML cannot hold written as OOXML `_xHHHH_` escapes
    (and a literal `_xHHHH_` escaped itself, as Excel does)."""
    def one(match: re.Match[str]) -> str:
        found = match.group(0)
        return "_x005F" + found if found.startswith("_x") else f"_x{ord(found):04X}_"

    text = _CONTROL.sub(one, text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cell_element(ref: str, keep_attrs: str, value: object, prefix: str) -> str:
    """A `<c>` element for `value` (None, bool, int, float, str; `=` starts a formula),
    with `keep_attrs` (the old cell's style and the like) after its reference."""
    p = prefix
    head = f'<{p}c r="{ref}"{keep_attrs}'
    if value is None:
        return head + "/>"
    if isinstance(value, bool):
        return head + f' t="b"><{p}v>{int(value)}</{p}v></{p}c>'
    if isinstance(value, (int, float)):
        return head + f"><{p}v>{value!r}</{p}v></{p}c>"
    text = str(value)
    if text.startswith("=") and len(text) > 1:
        return head + f"><{p}f>{_escape(text[1:])}</{p}f></{p}c>"
    space = ' xml:space="preserve"' if text != text.strip() or "\n" in text else ""
    return head + (f' t="inlineStr"><{p}is><{p}t{space}>{_escape(text)}</{p}t></{p}is>'
                   f"</{p}c>")
