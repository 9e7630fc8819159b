"""Issue 38 item 1: xlsx_edit changes only what it names, on public workbooks from POI.

Each workbook of tests/fixtures/documents/public/ (Apache POI's test data, see the
README there) is edited through the tool, then compared part by part and cell by cell
with the original: every part other than the edited sheets (and, where a formula's
cached result had to go, the workbook part's `fullCalcOnLoad`) is byte-identical, and
every cell element of an edited sheet is byte-identical except the edited cells and the
formula cells named as stale. On 64cf79c (openpyxl load and save) every part changed,
`1.0000200001000001`-style floats lost digits and cached results were dropped.
"""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path

import pytest

from tests.integration.documents.conftest import call, make_ctx, office_convert

PUBLIC = Path(__file__).resolve().parents[2] / "fixtures" / "documents" / "public"

_CELL = re.compile(rb'<c r="([A-Z]+[0-9]+)"[^>]*?(?:/>|>.*?</c>)', re.DOTALL)
_SHEET_DATA = re.compile(rb"<sheetData>.*</sheetData>|<sheetData/>", re.DOTALL)


def _parts(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _cells(xml: bytes) -> dict[str, bytes]:
    return {m.group(1).decode(): m.group(0) for m in _CELL.finditer(xml)}


# (workbook, the cells set, the sheet parts they are on, the stale cells expected)
_CASES = [
    # 553 numbers of 17 significant digits; no formulas.
    ("poi-AverageTaxRates.xlsx", {"B10": 0.5, "Avgtxmod!A1": "Moderate"},
     {"xl/worksheets/sheet1.xml", "xl/worksheets/sheet2.xml"}, []),
    # A shared formula A2:A41 (=B2 down the column): only the one reading B3 goes stale.
    ("poi-shared_formulas.xlsx", {"B3": "changed"}, {"xl/worksheets/sheet1.xml"},
     ["Label!A3"]),
    # 3-D references (Sheet1:Sheet3!A1): those reading Sheet2!A1 go stale, those
    # reading C1, D1 and E1 of the three sheets keep their results.
    ("poi-55906-MultiSheetRefs.xlsx", {"Sheet2!A1": 5}, {"xl/worksheets/sheet2.xml",
                                                          "xl/worksheets/sheet1.xml"},
     ["Sheet1!A3", "Sheet1!B3", "Sheet1!H3", "Sheet1!I3", "Sheet1!B4", "Sheet1!I4",
      "Sheet1!B5", "Sheet1!I5", "Sheet1!B6", "Sheet1!I6"]),
    # Cells without `r` references (a producer's shorthand) and a new cell in a new row.
    ("poi-54288.xlsx", {"G3": 7, "A200": "appended"}, {"xl/worksheets/sheet1.xml"}, []),
]


@pytest.mark.parametrize(("name", "cells", "sheet_parts", "stale"), _CASES,
                         ids=[c[0] for c in _CASES])
def test_an_edit_keeps_every_untouched_part_and_cell_byte_identical(
        tmp_path: Path, name: str, cells: dict[str, object], sheet_parts: set[str],
        stale: list[str]) -> None:
    shutil.copy(PUBLIC / name, tmp_path / name)
    out = call(make_ctx(tmp_path), "xlsx_edit", path=name, cells=cells,
               output="edited.xlsx")
    assert not out.is_error and "kept byte for byte" in out.output, out.output
    assert out.data.extra.get("stale_formulas", []) == stale, out.output
    before, after = _parts(PUBLIC / name), _parts(tmp_path / "edited.xlsx")
    assert list(after) == list(before)
    allowed = sheet_parts | ({"xl/workbook.xml"} if stale else set())
    assert {n for n in before if before[n] != after[n]} <= allowed
    edited = {ref.rpartition("!")[2] for ref in cells} | {s.rpartition("!")[2]
                                                          for s in stale}
    for part in sheet_parts:
        old, new = _cells(before[part]), _cells(after[part])
        kept = {ref for ref in old if ref not in edited}
        assert {ref: new.get(ref) for ref in kept} == {ref: old[ref] for ref in kept}
        # Outside the cells, only <dimension> may change (a new cell past it).
        outside = [re.sub(rb'<dimension ref="[^"]*"', b"", _SHEET_DATA.sub(b"", x))
                   for x in (before[part], after[part])]
        assert outside[0] == outside[1]


def test_the_edited_values_and_the_kept_cached_results_are_what_a_reader_sees(
        tmp_path: Path) -> None:
    import openpyxl

    shutil.copy(PUBLIC / "poi-shared_formulas.xlsx", tmp_path / "book.xlsx")
    out = call(make_ctx(tmp_path), "xlsx_edit", path="book.xlsx", cells={"B3": "changed"})
    assert not out.is_error, out.output
    values = openpyxl.load_workbook(tmp_path / "book.xlsx", data_only=True)["Label"]
    formulas = openpyxl.load_workbook(tmp_path / "book.xlsx")["Label"]
    assert values["B3"].value == "changed"
    assert values["A2"].value == "ProductionOrderConfirmation"  # cached result kept
    assert values["A4"].value == "Header"
    assert values["A3"].value is None  # stale, dropped: never the old text
    assert formulas["A3"].value == "=B3"
    read = call(make_ctx(tmp_path), "xlsx_read", path="book.xlsx", range="A2:B4")
    assert "2: =B2 → ProductionOrderConfirmation | ProductionOrderConfirmation" in \
        read.output, read.output


def test_overwriting_a_shared_formula_master_writes_its_other_cells_out(
        tmp_path: Path, office_profile: Path) -> None:
    shutil.copy(PUBLIC / "poi-shared_formulas.xlsx", tmp_path / "book.xlsx")
    out = call(make_ctx(tmp_path), "xlsx_edit", path="book.xlsx", cells={"A2": "first"})
    assert not out.is_error, out.output
    sheet = _parts(tmp_path / "book.xlsx")["xl/worksheets/sheet1.xml"]
    cells = _cells(sheet)
    assert cells["A2"] == b'<c r="A2" t="inlineStr"><is><t>first</t></is></c>'
    assert cells["A3"] == b'<c r="A3" t="str"><f>B3</f><v>RequiredAcceptanceDate</v></c>'
    assert b'si="0"' not in sheet
    # LibreOffice recalculates on open: the written-out formulas still work.
    office_convert([tmp_path / "book.xlsx"], "csv", tmp_path, office_profile)
    rows = (tmp_path / "book.csv").read_text().splitlines()
    assert rows[1].startswith("first,") and rows[2].startswith("RequiredAcceptanceDate,")


def test_libreoffice_recalculates_the_stale_results_on_open(
        tmp_path: Path, office_profile: Path) -> None:
    shutil.copy(PUBLIC / "poi-shared_formulas.xlsx", tmp_path / "book.xlsx")
    call(make_ctx(tmp_path), "xlsx_edit", path="book.xlsx", cells={"B3": "changed"})
    assert b'fullCalcOnLoad="1"' in _parts(tmp_path / "book.xlsx")["xl/workbook.xml"]
    office_convert([tmp_path / "book.xlsx"], "csv", tmp_path, office_profile)
    assert (tmp_path / "book.csv").read_text().splitlines()[2] == "changed,changed"


def test_a_formula_written_over_a_value_drops_the_calculation_chain(tmp_path: Path) -> None:
    shutil.copy(PUBLIC / "poi-shared_formulas.xlsx", tmp_path / "book.xlsx")
    out = call(make_ctx(tmp_path), "xlsx_edit", path="book.xlsx", cells={"C2": "=B2&B3"})
    assert not out.is_error and "recalculate on open" in out.output, out.output
    parts = _parts(tmp_path / "book.xlsx")
    assert "xl/calcChain.xml" not in parts
    assert b"calcChain" not in parts["[Content_Types].xml"]
    assert b"calcChain" not in parts["xl/_rels/workbook.xml.rels"]
    assert _cells(parts["xl/worksheets/sheet1.xml"])["C2"] == b'<c r="C2"><f>B2&amp;B3</f></c>'


def test_a_missing_sheet_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    shutil.copy(PUBLIC / "poi-DataTableCities.xlsx", tmp_path / "book.xlsx")
    before = (tmp_path / "book.xlsx").read_bytes()
    bad = call(make_ctx(tmp_path), "xlsx_edit", path="book.xlsx",
               cells={"Nowhere!A1": 1})
    assert bad.is_error and "no sheet 'Nowhere'" in bad.output
    assert (tmp_path / "book.xlsx").read_bytes() == before


def test_a_chart_sheet_or_a_malformed_part_is_refused_with_nothing_written(
        tmp_path: Path) -> None:
    import openpyxl
    from openpyxl.chart import BarChart, Reference

    book = openpyxl.Workbook()
    book.active.append([1])
    chart = BarChart()
    chart.add_data(Reference(book.active, min_col=1, min_row=1, max_row=1))
    book.create_chartsheet("Chart1").add_chart(chart)
    book.save(tmp_path / "charts.xlsx")
    out = call(make_ctx(tmp_path), "xlsx_edit", path="charts.xlsx", cells={"Chart1!A1": 2})
    assert out.is_error and "'Chart1' is a chart sheet" in out.output, out.output
    parts = _parts(tmp_path / "charts.xlsx")
    parts["xl/workbook.xml"] = parts["xl/workbook.xml"][:-20]
    with zipfile.ZipFile(tmp_path / "broken.xlsx", "w") as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    before = (tmp_path / "broken.xlsx").read_bytes()
    out = call(make_ctx(tmp_path), "xlsx_edit", path="broken.xlsx", cells={"A1": 2})
    assert out.is_error and "not a valid xlsx file" in out.output, out.output
    assert (tmp_path / "broken.xlsx").read_bytes() == before
