"""xlsx_read, xlsx_write and xlsx_edit over openpyxl (the `xlsx` extra).

Reading uses openpyxl's read-only mode (a 10,000-row sheet streams, bench/README.md).
Editing patches the named cells into the workbook's own XML (`_xlsx_patch`), so every
other cell and part stays byte-identical; openpyxl loads and saves the whole workbook
only for a package that cannot be patched, and the observation says what that lost.
"""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

import openpyxl
from openpyxl.utils.cell import range_boundaries
from openpyxl.utils.exceptions import CellCoordinatesException

from harness_core.documents._common import failed, opt_str, read_input, req_list, write_output
from harness_core.documents._office import (
    OLE_MAGIC,
    context_limits,
    encrypt,
    office_bytes,
    opt_password,
)
from harness_core.documents._xlsx_patch import Unpatchable, patch_cells
from harness_core.documents._xlsx_scan import count_cells
from harness_core.documents._xlsx_scan import left_out as _left_out
from harness_core.documents._xlsx_scan import scan_bounds as _scan_bounds
from harness_core.errors import InvalidToolArguments, ToolError
from harness_core.tool_data import DocumentRead
from harness_core.tools import DocumentLimits, ToolContext, ToolOutcome
from harness_core.tools._support import bounded, opt_int, req_str

__all__ = ["edit", "read", "sheet_text", "write"]

_DEFAULT_MAX_ROWS = 1000

MAX_EDIT_CELLS = 500_000
"""Cells a workbook may hold for xlsx_edit, which loads every one (openpyxl's full mode:
about 30 µs and 1 KB of memory a cell; 300,000 cells took 10 s and 310 MB)."""


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.time() == dt.time(0):
        return value.date().isoformat()  # a date cell: openpyxl gives midnight
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _shown(value: Any) -> str:
    return "" if value is None else str(value)


def _load(data: bytes, *, values: bool) -> Any:
    return openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=values)


def _bounds(ws: Any, cell_range: str | None) -> tuple[int, int, int, int]:
    """(min_col, min_row, max_col, max_row) of `cell_range`, or the sheet's used range."""
    if cell_range:
        try:
            bounds = range_boundaries(cell_range.replace("$", ""))
        except (ValueError, CellCoordinatesException) as exc:
            raise InvalidToolArguments(f"xlsx_read: invalid range {cell_range!r}: {exc}") from exc
        if any(b is None for b in bounds):  # a whole-column or whole-row range
            raise InvalidToolArguments(
                f"xlsx_read: range {cell_range!r} must name both corners, e.g. A1:D20")
        return (int(bounds[0]), int(bounds[1]), int(bounds[2]), int(bounds[3]))
    return _scan_bounds(ws)


def _read_sheet(ws: Any, cell_range: str | None, max_rows: int) -> dict[str, Any]:
    """One pass over the stored cells: values, and formulas as written (no results)."""
    from openpyxl.utils import get_column_letter

    min_col, min_row, max_col, max_row = _bounds(ws, cell_range)
    last = min(max_row, min_row + max_rows - 1)
    if last < min_row:  # an empty sheet
        return {"name": ws.title, "first_row": 1, "first_column": 1, "rows": [],
                "formulas": {}, "truncated": False, "omitted_rows": 0, "_spots": [],
                "_bounds": (1, 1, 1, 0)}
    letters = [get_column_letter(c) for c in range(min_col, max_col + 1)]
    rows: list[list[Any]] = []
    formulas: dict[str, str] = {}
    spots: list[tuple[int, int]] = []
    for r, cells in enumerate(ws.iter_rows(min_row=min_row, max_row=last, min_col=min_col,
                                           max_col=max_col)):
        row: list[Any] = []
        for i, cell in enumerate(cells):
            value = cell.value
            if cell.data_type == "f":
                formulas[f"{letters[i]}{min_row + r}"] = str(value)
                spots.append((r, i))
                value = None  # filled with the cached result by `_fill_cached`
            row.append(_json_value(value))
        rows.append(row)
    used = f"{letters[0]}{min_row}:{letters[-1]}{max_row}"
    return {"name": ws.title, "used_range": used, "first_row": min_row,
            "first_column": min_col, "rows": rows,
            "formulas": formulas, "truncated": max_row > last,
            "omitted_rows": max_row - last, "_spots": spots, "_bounds": (min_col, min_row, max_col, last)}


def _fill_cached(ws_values: Any, sheet: dict[str, Any]) -> None:
    """Put each formula's cached result (a second pass, over the values) in its place."""
    min_col, min_row, max_col, last = sheet["_bounds"]
    wanted: dict[int, list[int]] = {}
    for r, i in sheet["_spots"]:
        wanted.setdefault(r, []).append(i)
    if last < min_row:
        return
    for r, values in enumerate(ws_values.iter_rows(min_row=min_row, max_row=last,
                                                   min_col=min_col, max_col=max_col,
                                                   values_only=True)):
        for i in wanted.get(r, ()):
            sheet["rows"][r][i] = _json_value(values[i]) if i < len(values) else None


def _finish(sheet: dict[str, Any]) -> dict[str, Any]:
    del sheet["_spots"], sheet["_bounds"]
    rows = sheet["rows"]
    while rows and all(v is None for v in rows[-1]):
        rows.pop()
    return sheet


def _sheet_block(sheet: dict[str, Any]) -> str:
    from openpyxl.utils import get_column_letter

    if sheet.get("chart_sheet"):
        return f"== sheet {sheet['name']} ==\n[not read: a chart sheet, no cells]"
    first_col = sheet["first_column"]
    formulas = sheet["formulas"]
    width = max((len(r) for r in sheet["rows"]), default=0)
    letters = [get_column_letter(first_col + i) for i in range(width)]
    span = f" ({sheet['used_range']})" if letters and sheet["rows"] else " (empty)"
    lines = [f"== sheet {sheet['name']}{span} =="]
    if sheet["truncated"]:  # said first: a long sheet's end may pass the output cap
        last = sheet["first_row"] + len(sheet["rows"]) - 1
        lines.append(f"[more rows not shown: {sheet['omitted_rows']} row(s) after row"
                     f" {last}; pass `range` or a larger `max_rows`]")
    for offset, row in enumerate(sheet["rows"]):
        number = sheet["first_row"] + offset
        cells = [_shown(value) for value in row]
        if formulas:
            for i, text in enumerate(cells):
                ref = f"{letters[i]}{number}"
                if ref in formulas:
                    cells[i] = f"{formulas[ref]} → {text}" if text else formulas[ref]
        if any(cells):
            lines.append(f"{number}: " + " | ".join(cells))
    return "\n".join(lines)


def _read_book(
    data: bytes, sheet: str | None, cell_range: str | None, max_rows: int
) -> tuple[list[str], list[dict[str, Any]]]:
    book = _load(data, values=False)
    values = None
    try:
        names = list(book.sheetnames)
        if sheet is not None and sheet not in names:
            raise LookupError(f"no sheet {sheet!r}; sheets: {', '.join(names)}")
        out: list[dict[str, Any]] = []
        for name in [sheet] if sheet is not None else names:
            ws = book[name]
            if not hasattr(ws, "iter_rows"):  # a chart sheet has no cells
                out.append({"name": name, "chart_sheet": True, "rows": [], "formulas": {},
                            "truncated": False, "first_row": 1, "first_column": 1})
                continue
            result = _read_sheet(ws, cell_range, max_rows)
            if result["_spots"]:
                values = values or _load(data, values=True)
                _fill_cached(values[name], result)
            out.append(_finish(result))
        return names, out
    finally:
        book.close()
        if values is not None:
            values.close()


def read(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "xlsx_read")
    sheet = opt_str(args, "sheet", "xlsx_read")
    cell_range = opt_str(args, "range", "xlsx_read")
    max_rows = opt_int(args, "max_rows", "xlsx_read", _DEFAULT_MAX_ROWS)
    if max_rows < 1:
        raise InvalidToolArguments("xlsx_read: `max_rows` must be at least 1")
    password = opt_password(args, "xlsx_read")
    got = read_input(ctx, path, "xlsx_read")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    data = office_bytes(data, "xlsx", context_limits(ctx), rel, password)
    try:
        names, sheets = _read_book(data, sheet, cell_range, max_rows)
    except LookupError as exc:
        return failed(f"xlsx_read: {exc.args[0]}")
    left_out = _left_out(data)
    head = f"{rel}: sheets {', '.join(names)}\n"
    if left_out:
        head += f"[not read] {', '.join(left_out)}\n"
    shown, cut = bounded(head + "\n".join(_sheet_block(s) for s in sheets), ctx.output_cap)
    return ToolOutcome(output=shown, data=DocumentRead(
        rel, {"sheets": names, "read": sheets, "not_read": left_out}, cut))


def sheet_text(data: bytes, sheet: str | None, limits: DocumentLimits | None = None,
               what: str = "the workbook") -> str:
    """Every cell of `sheet` (default: every sheet) as text, for the document gate."""
    data = office_bytes(data, "xlsx", limits, what)
    try:
        _, sheets = _read_book(data, sheet, None, 10**7)
    except LookupError as exc:
        raise ToolError(str(exc.args[0])) from None
    return "\n".join(_sheet_block(s) for s in sheets)


def _cell_value(value: Any, tool: str) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise InvalidToolArguments(f"{tool}: a cell value must be a string, number, boolean or null")


def write(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "xlsx_write")
    sheets = req_list(args, "sheets", "xlsx_write")
    if not sheets:
        raise InvalidToolArguments("xlsx_write: `sheets` must name at least one sheet")
    book = openpyxl.Workbook()
    book.remove(book.active)
    total = 0
    for index, item in enumerate(sheets, 1):
        if not isinstance(item, dict) or not isinstance(item.get("rows"), list):
            raise InvalidToolArguments("xlsx_write: each sheet is an object with `rows`")
        name = item.get("name") or f"Sheet{index}"
        if not isinstance(name, str):
            raise InvalidToolArguments("xlsx_write: a sheet `name` must be a string")
        ws = book.create_sheet(title=name)
        for row in item["rows"]:
            if not isinstance(row, list):
                raise InvalidToolArguments("xlsx_write: each row is an array of cell values")
            ws.append([_cell_value(v, "xlsx_write") for v in row])
            total += 1
    buffer = io.BytesIO()
    book.save(buffer)
    return write_output(ctx, path, buffer.getvalue(), "xlsx_write",
                        f"{len(sheets)} sheet(s), {total} row(s)")


def _target(ref: str, default: str, names: list[str]) -> tuple[str, str]:
    sheet, bang, cell = ref.rpartition("!")
    sheet = sheet.strip("'") if bang else default
    if sheet not in names:
        raise LookupError(f"no sheet {sheet!r}; sheets: {', '.join(names)}")
    return sheet, cell.replace("$", "").upper()


def edit(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "xlsx_edit")
    cells = args.get("cells")
    if not isinstance(cells, dict) or not cells:
        raise InvalidToolArguments("xlsx_edit: `cells` must map cells such as B2 to values")
    sheet = opt_str(args, "sheet", "xlsx_edit")
    output = opt_str(args, "output", "xlsx_edit") or path
    password = opt_password(args, "xlsx_edit")
    got = read_input(ctx, path, "xlsx_edit")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    protected = data[:8] == OLE_MAGIC
    data = office_bytes(data, "xlsx", context_limits(ctx), rel, password)
    for value in cells.values():
        _cell_value(value, "xlsx_edit")
    try:
        patched = patch_cells(data, cells, sheet)
    except (LookupError, ValueError) as exc:
        return failed(f"xlsx_edit: {exc.args[0] if exc.args else exc}; nothing written")
    except Unpatchable as exc:
        return _edit_through_openpyxl(ctx, rel, data, cells, sheet, output, password,
                                      protected, str(exc))
    note = _stale_note(patched.stale, patched.recalc)
    saved = patched.data
    if protected and password is not None:
        saved = encrypt(saved, password)
        note += "; written encrypted with the same password"
    extra: dict[str, Any] = {"cells": patched.changes}
    if patched.stale:
        extra["stale_formulas"] = patched.stale
    return write_output(ctx, output, saved, "xlsx_edit",
                        f"set {len(patched.changes)} cell(s) ({_summary(patched.changes)})"
                        f"; every other cell and part kept byte for byte{note}", extra)


def _summary(changes: list[dict[str, Any]]) -> str:
    return ", ".join(f"{c['sheet']}!{c['cell']}: {c['old']!r} -> {c['new']!r}"
                     for c in changes[:20])


def _stale_note(stale: list[str], recalc: bool) -> str:
    if not stale:
        return ("; the workbook is marked to recalculate on open (a formula was written,"
                " so it has no cached result yet)") if recalc else ""
    shown = ", ".join(stale[:20]) + (f" and {len(stale) - 20} more" if len(stale) > 20
                                     else "")
    return (f"; {len(stale)} formula cell(s) that depend on the edited cells lost their"
            f" cached results, now stale ({shown}): xlsx_read shows them without a value"
            " until a spreadsheet application recalculates (the workbook is marked to"
            " recalculate on open)")


def _edit_through_openpyxl(ctx: ToolContext, rel: str, data: bytes, cells: dict[str, Any],
                           sheet: str | None, output: str, password: str | None,
                           protected: bool, why: str) -> ToolOutcome:
    """The whole workbook loaded and saved by openpyxl: for a package that cannot be
    patched in place (`why`), with what that loses said in the observation."""
    refused = _too_many_cells(rel, data)
    if refused is not None:
        return refused
    keep_vba = rel.lower().endswith(".xlsm")
    book = openpyxl.load_workbook(io.BytesIO(data), keep_vba=keep_vba, keep_links=True,
                                  rich_text=True)
    default = sheet or book.active.title
    changes: list[dict[str, Any]] = []
    for ref, value in cells.items():
        try:
            name, coord = _target(ref, default, list(book.sheetnames))
            cell = book[name][coord]
        except (LookupError, ValueError, CellCoordinatesException) as exc:
            _close_vba(book)
            return failed(f"xlsx_edit: cell {ref!r}: {exc}; nothing written")
        if type(cell).__name__ == "MergedCell":
            _close_vba(book)
            return failed(f"xlsx_edit: {name}!{coord} is inside a merged range; set its"
                          " top-left cell instead. Nothing written")
        old = _json_value(cell.value)
        cell.value = _cell_value(value, "xlsx_edit")
        changes.append({"sheet": name, "cell": coord, "old": old, "new": value})
    buffer = io.BytesIO()
    book.save(buffer)
    _close_vba(book)
    note = (f"; saved through openpyxl because the workbook cannot be patched in place"
            f" ({why}): cached formula results were dropped, numbers were rewritten to"
            " 15 significant digits, and what openpyxl does not model was lost")
    saved = buffer.getvalue()
    if protected and password is not None:
        saved = encrypt(saved, password)
        note += "; written encrypted with the same password"
    return write_output(ctx, output, saved, "xlsx_edit",
                        f"set {len(changes)} cell(s) ({_summary(changes)}){note}",
                        {"cells": changes, "saved_by": "openpyxl"})


def _too_many_cells(rel: str, data: bytes) -> ToolOutcome | None:
    held = count_cells(data)
    if held <= MAX_EDIT_CELLS:
        return None
    return failed(f"xlsx_edit: {rel} holds {held:,} cells, over the {MAX_EDIT_CELLS:,} it"
                  " edits (it loads every cell: about 1 KB of memory and 30 µs each)."
                  " Nothing written; write a new workbook with xlsx_write, or edit this"
                  " one with a script")


def _close_vba(book: Any) -> None:
    """Close the macro archive openpyxl keeps open for an .xlsm: left to the garbage
    collector, its ZipFile.__del__ wrote a traceback to stderr after its buffer closed."""
    archive = getattr(book, "vba_archive", None)
    if archive is not None:
        archive.close()
        book.vba_archive = None
