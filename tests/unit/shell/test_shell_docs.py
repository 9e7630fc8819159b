"""The refusal table of docs/guide/shell.md says what the parser does: each row's line is
refused under the name and at the column the row gives, and the table is a table (every
row has its three cells, and a blank line ends it, so the prose after it is not read as
one more row)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core.errors import ShellRefused
from harness_core.shell import parse

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "shell.md"
HEADER = "| line | refused as | column |"


def _table() -> list[list[str]]:
    lines = GUIDE.read_text().splitlines()
    start = lines.index(HEADER)
    rows: list[list[str]] = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        # A line that is not a `| … |` row stays one cell, so the cell count catches it.
        row = line.strip("|").split("|") if line.startswith("|") and line.endswith("|") \
            else [line]
        rows.append([cell.strip() for cell in row])
    return rows


ROWS = _table()


def test_the_table_has_three_cells_a_row_and_names_case() -> None:
    assert all(len(row) == 3 for row in ROWS), [row for row in ROWS if len(row) != 3]
    assert any(row[1] == "keyword case" for row in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[row[0] for row in ROWS])
def test_each_row_is_what_the_parser_refuses(row: list[str]) -> None:
    line, named, column = row[0].strip("`"), row[1].split(" (")[0], int(row[2])
    with pytest.raises(ShellRefused) as info:
        parse(line)
    assert (info.value.construct, info.value.column) == (named, column)
