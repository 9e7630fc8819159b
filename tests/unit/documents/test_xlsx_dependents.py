"""Which formulas an xlsx edit makes stale: a table of formula -> reads the edited cell."""

from __future__ import annotations

import pytest

from harness_core.documents._xlsx_dependents import Formula, dependents
from harness_core.documents._xlsx_sheetxml import SheetXml, Unpatchable, cell_element

_NAMES = {"RATE": ["Sheet1!$B$1"], "LOOP": ["LOOP+1"], "TOTAL": ["SUM(tbl[Amount])"]}
_ORDER = ["Sheet1", "Sheet2", "Sheet3"]

# (formula on Sheet1, whether editing Sheet1!B1 makes it stale)
_TABLE = [
    ("A1+C1", False),
    ("B1*2", True),
    ("$B$1", True),
    ("SUM(A1:C5)", True),
    ("SUM(C1:C5)", False),
    ("SUM(B:B)", True),
    ("SUM(2:3)", False),
    ("SUM(1:1)", True),
    ("Sheet2!B1", False),
    ("'Sheet1'!B1", True),
    ("SUM(Sheet1:Sheet3!B1)", True),
    ("SUM(Sheet2:Sheet3!B1)", False),
    ("RATE*3", True),  # a defined name over the cell
    ("LOOP", True),  # a name defined through itself: unresolved, so stale
    ("TOTAL", True),  # a structured table reference: unresolved, so stale
    ('INDIRECT("B"&1)', True),  # no static reference: stale
    ("[1]Sheet1!A1", True),  # another workbook's cell: unresolved
    ('"B1"&"x"', False),  # text, not a reference
]


@pytest.mark.parametrize(("text", "stale"), _TABLE)
def test_a_formula_is_stale_exactly_when_it_may_read_the_edited_cell(
        text: str, stale: bool) -> None:
    formula = Formula("Sheet1", 9, 9, text)
    found = dependents([formula], {("Sheet1", 1, 2)}, _NAMES, _ORDER)
    assert (found == [formula]) is stale


def test_staleness_follows_formulas_that_read_formulas() -> None:
    chain = [Formula("Sheet1", 3, 1, "A2*2"), Formula("Sheet1", 2, 1, "A1+1"),
             Formula("Sheet2", 1, 1, "Sheet1!A3"), Formula("Sheet1", 5, 5, "Z9")]
    found = dependents(chain, {("Sheet1", 1, 1)}, {}, _ORDER)
    assert [(f.sheet, f.row) for f in found] == [("Sheet1", 2), ("Sheet1", 3), ("Sheet2", 1)]


def test_an_untranslatable_formula_counts_as_reading_every_cell() -> None:
    formula = Formula("Sheet3", 1, 1, None)
    assert dependents([formula], {("Sheet1", 1, 1)}, {}, _ORDER) == [formula]


_SHEET = ('<?xml version="1.0" encoding="UTF-8"?><x:worksheet xmlns:x="urn:s"><x:dimension'
          ' ref="A1:B2"/><x:sheetData><x:row r="1"><x:c r="A1" s="2"><x:v>1</x:v></x:c>'
          '</x:row><x:row r="3" spans="1:1" /></x:sheetData></x:worksheet>')


def test_cells_are_written_into_the_producers_namespace_prefix_and_row_order() -> None:
    sheet = SheetXml(_SHEET.encode(), "sheet1.xml")
    a1 = sheet.cell("A1")
    assert a1 is not None
    sheet.replace(a1, cell_element("A1", ' s="2"', "a < b", sheet.prefix))
    sheet.insert({"C1": cell_element("C1", "", 1.0000200001000001, sheet.prefix),
                  "B2": cell_element("B2", "", True, sheet.prefix),
                  "B3": cell_element("B3", "", " x", sheet.prefix),
                  "A9": cell_element("A9", "", "=A1", sheet.prefix)})
    sheet.set_dimension(["C1", "A9"])
    assert sheet.render().decode() == (
        '<?xml version="1.0" encoding="UTF-8"?><x:worksheet xmlns:x="urn:s"><x:dimension'
        ' ref="A1:C9"/><x:sheetData><x:row r="1"><x:c r="A1" s="2" t="inlineStr"><x:is>'
        '<x:t>a &lt; b</x:t></x:is></x:c><x:c r="C1"><x:v>1.0000200001000001</x:v></x:c>'
        '</x:row><x:row r="2"><x:c r="B2" t="b"><x:v>1</x:v></x:c></x:row><x:row r="3"'
        ' spans="1:2"><x:c r="B3" t="inlineStr"><x:is><x:t xml:space="preserve"> x</x:t>'
        '</x:is></x:c></x:row><x:row r="9"><x:c r="A9"><x:f>A1</x:f></x:c></x:row>'
        '</x:sheetData></x:worksheet>')


def test_a_sheet_not_in_utf8_cannot_be_patched_in_place() -> None:
    with pytest.raises(Unpatchable, match="UTF-16"):
        SheetXml(b'<?xml version="1.0" encoding="UTF-16"?><worksheet/>', "sheet1.xml")
