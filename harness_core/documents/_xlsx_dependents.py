"""Which formula cells depend, directly or through other formulas, on the cells an edit sets.

A formula cell's cached result (its `<v>`) is what every reader that does not calculate
shows (pandas, io's own xlsx_read). After an edit, a cached result that depends on an
edited cell is stale: xlsx_edit drops exactly those and asks the application to
recalculate on open. Everything else keeps its cached result byte for byte.

A reference this module cannot resolve to cells (a name that is not a plain range, a
structured table reference, another workbook, INDIRECT or OFFSET)
counts as depending on every cell: a stale number is a wrong answer, a missing one is
only a missing one. It reads formula text; it never writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from openpyxl.formula.tokenizer import Token, Tokenizer, TokenizerError
from openpyxl.utils.cell import column_index_from_string

__all__ = ["Area", "Formula", "dependents", "references"]

_MAX = 1 << 20  # past any row or column Excel has


@dataclass(frozen=True)
class Area:
    """A rectangle of cells on one sheet (both corners included, 1-based); `sheet` None
    with every bound open means "any cell anywhere" (an unresolved reference)."""

    sheet: str | None
    first_row: int = 1
    first_column: int = 1
    last_row: int = _MAX
    last_column: int = _MAX

    def holds(self, sheet: str, row: int, column: int) -> bool:
        return (self.sheet is None or self.sheet == sheet) and \
            self.first_row <= row <= self.last_row and \
            self.first_column <= column <= self.last_column


ANYWHERE = Area(None)


@dataclass(frozen=True)
class Formula:
    """A formula cell: where it is and its text (a shared formula's child translated;
    None when it could not be, which reads as depending on every cell)."""

    sheet: str
    row: int
    column: int
    text: str | None


_CELL = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d+)$")
_COLUMN = re.compile(r"^\$?([A-Za-z]{1,3})$")
_ROW = re.compile(r"^\$?(\d+)$")
_UNRESOLVED_FUNCTIONS = ("INDIRECT(", "OFFSET(", "_XLFN.LET(", "LAMBDA(")


def _corner(text: str) -> tuple[int, int, int, int] | None:
    """(first_row, first_column, last_row, last_column) of one corner's text."""
    if found := _CELL.match(text):
        row, column = int(found.group(2)), column_index_from_string(found.group(1).upper())
        return row, column, row, column
    if found := _COLUMN.match(text):
        column = column_index_from_string(found.group(1).upper())
        return 1, column, _MAX, column
    if found := _ROW.match(text):
        return int(found.group(1)), 1, int(found.group(1)), _MAX
    return None


def _area(sheet: str, text: str) -> Area | None:
    """The cells of `A1`, `$A$1:B5`, `A:C` or `1:3` on `sheet`; None for anything else."""
    first, _, last = text.partition(":")
    one, two = _corner(first), _corner(last or first)
    if one is None or two is None:
        return None
    return Area(sheet, min(one[0], two[0]), min(one[1], two[1]), max(one[2], two[2]),
                max(one[3], two[3]))


def _split_sheet(operand: str, here: str, order: Sequence[str]
                 ) -> tuple[list[str], str] | None:
    """(sheets, reference) of an operand, a 3-D reference (`Sheet1:Sheet3!A1`) naming
    each sheet between in tab order; None for another workbook or an unknown sheet."""
    if "!" not in operand:
        return [here], operand
    sheet, _, ref = operand.rpartition("!")
    if sheet.startswith("'") and sheet.endswith("'"):
        sheet = sheet[1:-1].replace("''", "'")
    if sheet.startswith("["):
        return None
    first, colon, last = sheet.partition(":")
    if not colon:
        return [sheet], ref
    if first not in order or last not in order:
        return None
    lo, hi = sorted((order.index(first), order.index(last)))
    return list(order[lo:hi + 1]), ref


def references(text: str, here: str, names: dict[str, list[str]],
               order: Sequence[str] = (), seen: frozenset[str] = frozenset()
               ) -> list[Area]:
    """Every area the formula `text` (on sheet `here`) reads; ANYWHERE when unsure.

    Args:
        text: The formula, with or without its leading ``=``.
        here: The sheet the formula is on (unqualified references point there).
        names: Defined names (upper case) to their definitions.
        order: The sheets in tab order (for 3-D references).
        seen: Names being expanded (a name defined through itself resolves to ANYWHERE).
    """
    try:
        tokens = Tokenizer(text if text.startswith("=") else "=" + text).items
    except TokenizerError:
        return [ANYWHERE]
    areas: list[Area] = []
    for token in tokens:
        if token.type == Token.FUNC and token.value.upper() in _UNRESOLVED_FUNCTIONS:
            return [ANYWHERE]
        if token.type == Token.OP_IN and token.value == ":":
            return [ANYWHERE]  # a range built from two references: no plain rectangle
        if token.type == Token.OPERAND and token.subtype == Token.RANGE:
            found = _operand(token.value, here, names, order, seen)
            if found is None:
                return [ANYWHERE]
            areas.extend(found)
    return areas


def _operand(value: str, here: str, names: dict[str, list[str]], order: Sequence[str],
             seen: frozenset[str]) -> list[Area] | None:
    split = _split_sheet(value, here, order)
    if split is None:
        return None
    sheets, ref = split
    areas = [_area(sheet, ref) for sheet in sheets]
    if all(area is not None for area in areas):
        return [area for area in areas if area is not None]
    key = ref.upper()
    if key in names and key not in seen and "!" not in value:
        found: list[Area] = []
        for definition in names[key]:
            found.extend(references(definition, here, names, order, seen | {key}))
        return found
    return None


def dependents(formulas: Iterable[Formula], edited: set[tuple[str, int, int]],
               names: dict[str, list[str]], order: Sequence[str] = ()) -> list[Formula]:
    """The formulas whose results may change when the `edited` cells (sheet, row,
    column) change, following formulas that read other formulas."""
    pending = [(f, [ANYWHERE] if f.text is None else
                references(f.text, f.sheet, names, order))
               for f in formulas
               if (f.sheet, f.row, f.column) not in edited]
    changed = list(edited)
    found: list[Formula] = []
    while changed and pending:
        hit, rest = [], []
        for formula, areas in pending:
            if any(area.holds(*cell) for area in areas for cell in changed):
                hit.append(formula)
            else:
                rest.append((formula, areas))
        found.extend(hit)
        pending = rest
        changed = [(f.sheet, f.row, f.column) for f in hit]
    return found
