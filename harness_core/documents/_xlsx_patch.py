"""xlsx_edit's lossless write: the named cells patched into the workbook's own XML.

Loading and saving a workbook through openpyxl rewrites every part: floats lose their
last digits (15 significant), formulas lose their cached results, and what openpyxl
does not model is dropped. Here the package is copied member by member and only these
change:
- the worksheet parts holding an edited cell: that cell's element, and the cached
  result (`<v>`) of each formula cell that depends on an edited cell
  (`_xlsx_dependents`); a shared formula whose master cell is overwritten has its
  other cells written out as plain formulas; `<dimension>` grows to a new cell;
- `xl/workbook.xml`: `fullCalcOnLoad="1"` on `<calcPr>` when a cached result was
  dropped or a formula written, so Excel and LibreOffice recalculate on open;
- `xl/calcChain.xml` (with its relationship and content type) is removed when a formula
  cell is added or overwritten: Excel "repairs" a workbook whose chain names a cell that
  holds no formula, and rebuilds the chain itself.
Strings are written inline (`t="inlineStr"`), so the shared string table stays as it
was. Every other part's bytes, and every other byte of a patched part, stay identical.
The package itself (its parts, sheets, and the workbook-level changes) is
`_xlsx_package`; a sheet's text is `_xlsx_sheetxml`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from xml.etree import ElementTree

from harness_core.documents._xlsx_dependents import dependents
from harness_core.documents._xlsx_package import (
    BookIndex,
    Workbook,
    drop_calc_chain,
    escape_text,
    set_full_calc,
    unescape,
    zipped,
)
from harness_core.documents._xlsx_sheetxml import (
    Cell,
    SheetXml,
    Unpatchable,
    cell_element,
    parse_coordinate,
)

__all__ = ["Patched", "Unpatchable", "patch_cells"]


@dataclass
class Patched:
    """The new package and what the edit did."""

    data: bytes
    changes: list[dict[str, object]]
    stale: list[str] = field(default_factory=list)
    """Formula cells (``Sheet!C4``) whose cached results were dropped."""
    recalc: bool = False
    """`fullCalcOnLoad` was set."""


def _target(ref: str, default: str, book: BookIndex) -> tuple[str, str]:
    sheet, bang, cell = ref.rpartition("!")
    sheet = sheet.strip("'").replace("''", "'") if bang else default
    if sheet not in book.order:
        raise LookupError(f"no sheet {sheet!r}; sheets: {', '.join(book.order)}")
    if sheet not in book.sheets:
        raise LookupError(f"{sheet!r} is a chart sheet, it has no cells")
    cell = cell.replace("$", "").upper()
    parse_coordinate(cell)  # raises ValueError for a bad reference
    return sheet, cell


def _in_ranges(row: int, column: int, ranges: list[str]) -> str | None:
    """The range (`A1:B2`) holding the cell other than as its top-left corner."""
    for text in ranges:
        first, _, last = text.partition(":")
        try:
            r1, c1 = parse_coordinate(first)
            r2, c2 = parse_coordinate(last or first)
        except ValueError:
            continue
        if r1 <= row <= r2 and c1 <= column <= c2 and (row, column) != (r1, c1):
            return text
    return None


def _check_value(value: object) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("a cell value must be a finite number")
    if value is not None and not isinstance(value, (str, int, float, bool)):
        raise ValueError("a cell value must be a string, number, boolean or null")


def _array_ranges(sheet: SheetXml) -> list[str]:
    """The ranges of array and data-table formulas (one formula over many cells)."""
    found: list[str] = []
    for cell in sheet.formula_cells():
        formula = cell.formula(sheet.prefix)
        if formula is not None and re.search(r'\bt\s*=\s*"(?:array|dataTable)"',
                                             formula[0]):
            ref = re.search(r'\bref\s*=\s*"([^"]+)"', formula[0])
            if ref is not None and ":" in ref.group(1):
                found.append(ref.group(1))
    return found


def _without_cached(sheet: SheetXml, cell: Cell, text: str | None) -> str:
    """The cell's element (or its rewritten `text`) without `<v>` and its type."""
    element = text if text is not None else sheet.text[cell.start:cell.end]
    p = re.escape(sheet.prefix)
    head_end = element.index(">")
    head, rest = element[:head_end], element[head_end:]
    head = re.sub(r'\s+t\s*=\s*"[^"]*"', "", head)
    rest = re.sub(rf"<{p}v\b[^>]*?(?:/>|>.*?</{p}v>)", "", rest, flags=re.DOTALL)
    return head + rest


def _style(sheet: SheetXml, cell: Cell | None, ref: str) -> str:
    """The style attribute a written cell keeps: its own, else its row's or column's."""
    if cell is not None:
        own = cell.attr("s")
        return f' s="{own}"' if own else ""
    row, column = parse_coordinate(ref)
    element = sheet.row(row)
    if element is not None and re.search(r'\bcustomFormat\s*=\s*"(?:1|true)"',
                                         element.attrs):
        found = re.search(r'(?:^|\s)s\s*=\s*"(\d+)"', element.attrs)
        if found:
            return f' s="{found.group(1)}"'
    p = re.escape(sheet.prefix)
    for attrs in re.findall(rf"<{p}col\b([^>]*?)/?>", sheet.text):
        bounds = re.search(r'\bmin\s*=\s*"(\d+)".*?\bmax\s*=\s*"(\d+)"', attrs)
        style = re.search(r'\bstyle\s*=\s*"(\d+)"', attrs)
        if bounds and style and int(bounds.group(1)) <= column <= int(bounds.group(2)):
            return f' s="{style.group(1)}"'
    return ""


def patch_cells(data: bytes, cells: dict[str, object], sheet: str | None) -> Patched:
    """`data` (an xlsx package) with `cells` set and nothing else changed but what the
    module docstring lists.

    Args:
        data: The workbook's zip bytes (decrypted, zip-guarded).
        cells: ``B2`` or ``Sheet2!B2`` to a value; a string starting with ``=`` is a
            formula.
        sheet: The sheet of references without one (None: the active sheet).

    Raises:
        LookupError: A sheet that is not there, or a cell inside a merged range or an
            array formula (nothing is written).
        ValueError: A bad cell reference or value.
        Unpatchable: The package cannot be patched in place.
    """
    try:
        book = Workbook(data)
    except ElementTree.ParseError as exc:
        raise ValueError(f"not a valid xlsx file: a part is not well-formed XML ({exc})"
                         ) from None
    default = sheet or book.book.active
    targets: dict[str, dict[str, object]] = {}
    for ref, value in cells.items():
        name, coord = _target(ref, default, book.book)
        _check_value(value)
        targets.setdefault(name, {})[coord] = value
    changes, formula_changed, stale = _apply(book, targets)
    recalc = bool(stale) or any(isinstance(v, str) and v.startswith("=") and len(v) > 1
                                for t in targets.values() for v in t.values())
    for name, xml in book.sheets.items():
        if xml.changed:
            book.parts[book.book.sheets[name]] = xml.render()
    if recalc:
        set_full_calc(book)
    if formula_changed:
        drop_calc_chain(book)
    return Patched(zipped(book), changes, stale, recalc)


_Texts = dict[tuple[str, str], str]


def _apply(book: Workbook, targets: dict[str, dict[str, object]]
           ) -> tuple[list[dict[str, object]], bool, list[str]]:
    """Write each edited cell; drop the cached results that depend on one. Returns the
    changes, whether a formula cell was added or overwritten, and the stale cells."""
    changes: list[dict[str, object]] = []
    formula_changed = False
    texts: _Texts = {}
    edited: set[tuple[str, int, int]] = set()
    for name, wanted in targets.items():
        xml = book.sheets[name]
        merged, arrays = xml.ranges("mergeCell"), _array_ranges(xml)
        new: dict[str, str] = {}
        for coord, value in wanted.items():
            row, column = parse_coordinate(coord)
            if inside := _in_ranges(row, column, merged):
                raise LookupError(f"{name}!{coord} is inside the merged range {inside}; set"
                                  " its top-left cell instead")
            if inside := _in_ranges(row, column, arrays):
                raise LookupError(f"{name}!{coord} is inside the array formula over"
                                  f" {inside}; set its first cell instead")
            cell = xml.cell(coord)
            had_formula = cell is not None and cell.formula(xml.prefix) is not None
            formula_changed |= had_formula or (isinstance(value, str)
                                               and value.startswith("=") and len(value) > 1)
            element = cell_element(coord, _style(xml, cell, coord), value, xml.prefix)
            if cell is None:
                new[coord] = element
            else:
                texts[(name, coord)] = element
                if had_formula:
                    _unshare(book, name, cell, texts, wanted)
            edited.add((name, row, column))
            changes.append({"sheet": name, "cell": coord,
                            "old": book.old_value(xml, cell), "new": value})
        if new:
            xml.insert(new)
            xml.set_dimension(list(new))
    stale = _drop_stale(book, edited, texts)
    for (name, ref), text in texts.items():
        xml = book.sheets[name]
        found = xml.cell(ref)
        if found is not None:
            xml.replace(found, text)
    return changes, formula_changed, stale


def _drop_stale(book: Workbook, edited: set[tuple[str, int, int]], texts: _Texts
                ) -> list[str]:
    from openpyxl.utils import get_column_letter

    stale: list[str] = []
    for formula in dependents(book.formulas(), edited, book.book.names,
                                  book.book.order):
        xml = book.sheets[formula.sheet]
        key = (formula.sheet, f"{get_column_letter(formula.column)}{formula.row}")
        cell = xml.cell(key[1])
        if cell is None or not re.search(rf"<{re.escape(xml.prefix)}v\b", cell.inner):
            continue  # no cached result: nothing stale
        texts[key] = _without_cached(xml, cell, texts.get(key))
        stale.append(f"{key[0]}!{key[1]}")
    return stale


def _unshare(book: Workbook, name: str, master: Cell, texts: _Texts,
             wanted: dict[str, object]) -> None:
    """A shared formula's master is overwritten: its other cells get their own formula."""
    xml = book.sheets[name]
    found = master.formula(xml.prefix)
    if found is None or not found[1].strip():
        return
    si = re.search(r'\bt\s*=\s*"shared"[^>]*?\bsi\s*=\s*"(\d+)"|'
                   r'\bsi\s*=\s*"(\d+)"[^>]*?\bt\s*=\s*"shared"', found[0])
    if si is None:
        return
    group = si.group(1) or si.group(2)
    p = re.escape(xml.prefix)
    for cell in xml.formula_cells():
        own = cell.formula(xml.prefix)
        if cell.ref in wanted or own is None or own[1].strip() or \
                not re.search(rf'\bsi\s*=\s*"{group}"', own[0]):
            continue
        text = book.translated((master.ref, unescape(found[1])), cell.ref)
        if text is None:
            raise Unpatchable(f"the shared formula of {name}!{master.ref} cannot be written"
                              f" out for {cell.ref}")
        element = texts.get((name, cell.ref), xml.text[cell.start:cell.end])
        own_f = f"<{xml.prefix}f>{escape_text(text)}</{xml.prefix}f>"
        old_f = re.search(rf"<{p}f\b[^>]*?(?:/>|>\s*</{p}f>)", element)
        if old_f is not None:
            texts[(name, cell.ref)] = element[:old_f.start()] + own_f + element[old_f.end():]
