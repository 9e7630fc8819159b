"""Where an xlsx sheet's cells really are, and what xlsx_read does not show.

A sheet's `<dimension>` element is the producer's claim, and some producers leave it at
A1:A1 over a full sheet: `scan_bounds` finds the used range from the cells themselves,
scanning the worksheet XML for cell references (openpyxl's cell objects are a hundred
times slower), or with openpyxl when the cells carry no references.
"""

from __future__ import annotations

import io
import re
from operator import itemgetter
from typing import Any

__all__ = ["count_cells", "left_out", "scan_bounds"]

_EMPTY = (1, 1, 1, 0)  # no cell: an empty range


def scan_bounds(ws: Any) -> tuple[int, int, int, int]:
    """The range the sheet's cells really fill, found by reading them all: a producer's
    `<dimension>` element is never trusted (one claiming A1:A1 over 62 cells read as
    an empty sheet). The sheet's XML is scanned for cell references (a million cells
    in seconds, where openpyxl's cell objects took a minute); a sheet whose cells carry
    no reference is counted by openpyxl instead."""
    ws.reset_dimensions()
    found = _scan_xml(ws)
    return found if found is not None else _scan_cells(ws)


# A cell element with content (not `<c r="A1" s="3"/>`, a styled empty cell), and the
# same with its reference: the two counts differ when a cell carries no reference.
_FILLED = re.compile(rb"<(?:\w+:)?c(?:\s[^>]*)?(?<!/)>")
_FILLED_REF = re.compile(rb'<(?:\w+:)?c\s[^>]*?\br="([A-Z]{1,3})([0-9]+)"[^>]*(?<!/)>')


def _chunks(stream: Any) -> Any:
    """The worksheet XML in pieces of about 1 MiB, each cut before a tag."""
    tail = b""
    while True:
        chunk = stream.read(1 << 20)
        buffer = tail + chunk
        cut = buffer.rfind(b"<") if chunk else len(buffer)
        body, tail = buffer[:cut], buffer[cut:]
        yield body
        if not chunk:
            return


def _scan_xml(ws: Any) -> tuple[int, int, int, int] | None:
    """The used range from the worksheet XML's cell references, or None when a filled
    cell has no reference. Each piece is matched in C (`findall`, `set`, `map`): a
    Python step per cell made a 5-million-cell sheet take 11 s, now 2 s."""
    from openpyxl.utils import column_index_from_string

    archive, part = getattr(ws.parent, "_archive", None), getattr(ws, "_worksheet_path", None)
    if archive is None or part is None:
        return None
    first_row, last_row, columns = 0, 0, set[bytes]()
    with archive.open(part) as stream:
        for body in _chunks(stream):
            refs = _FILLED_REF.findall(body)
            if len(refs) != len(_FILLED.findall(body)):
                return None
            if not refs:
                continue
            columns.update(map(itemgetter(0), refs))
            rows = list(map(int, map(itemgetter(1), refs)))
            first_row = min(first_row or rows[0], min(rows))
            last_row = max(last_row, max(rows))
    if not last_row:
        return _EMPTY
    numbers = [column_index_from_string(c.decode()) for c in columns]
    return (min(numbers), first_row, max(numbers), last_row)


_ANY_CELL = re.compile(rb"<(?:\w+:)?c[\s/>]")


def count_cells(data: bytes) -> int:
    """How many cell elements (empty styled ones too) the workbook's worksheets hold:
    what a full openpyxl load makes objects of."""
    import zipfile

    total = 0
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            if name.startswith("xl/worksheets/") and name.endswith(".xml"):
                with archive.open(name) as stream:
                    total += sum(len(_ANY_CELL.findall(body)) for body in _chunks(stream))
    return total


def _scan_cells(ws: Any) -> tuple[int, int, int, int]:
    first_row = last_row = first_col = last_col = 0
    for number, values in enumerate(ws.iter_rows(min_row=1, min_col=1, values_only=True), 1):
        filled = [i for i, v in enumerate(values, 1) if v is not None]
        if not filled:
            continue
        first_row = first_row or number
        last_row = number
        first_col = min(first_col or filled[0], filled[0])
        last_col = max(last_col, filled[-1])
    return (first_col, first_row, last_col, last_row) if last_row else _EMPTY



def left_out(data: bytes) -> list[str]:
    """What the cell reader does not show: charts, pictures, comments, pivot tables."""
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        comments = sum(archive.read(n).count(b"<comment ") for n in names
                       if n.startswith("xl/comments") and n.endswith(".xml"))
    found = {
        "chart(s)": sum(1 for n in names if n.startswith("xl/charts/chart")),
        "picture(s)": sum(1 for n in names if n.startswith("xl/media/")),
        "cell comment(s)": comments,
        "pivot table(s)": sum(1 for n in names if n.startswith("xl/pivotTables/")),
    }
    return [f"{n} {what}" for what, n in found.items() if n]
