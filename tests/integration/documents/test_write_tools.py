"""Every writing tool's output, opened by a real office suite (LibreOffice) or rendered
by poppler: what we wrote is what another implementation reads back.

One session fixture runs every writing tool once, then converts all outputs with one
`soffice` call per target format (LibreOffice start-up dominates: ~2 s a call).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.documents.conftest import call, make_ctx, office_convert

_CSV_ALL_SHEETS = "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1"

_BLOCKS = [
    {"type": "heading", "text": "Inspection Report", "level": 1},
    {"type": "paragraph", "text": "All pumps passed the pressure test."},
    {"type": "bullets", "items": ["Pump A: 4.1 bar", "Pump B: 3.9 bar"]},
    {"type": "numbered", "items": ["Drain", "Refill"]},
    {"type": "table", "rows": [["Pump", "Result"], ["A", "pass"], ["B", "pass"]]},
    {"type": "page_break"},
    {"type": "heading", "text": "Appendix Ωmega", "level": 2},
]


@pytest.fixture(scope="session")
def written(tmp_path_factory: pytest.TempPathFactory, office_files: Path,
            office_profile: Path) -> Path:
    root = tmp_path_factory.mktemp("written")
    for name in ("orders.xlsx", "report.pdf", "form.pdf"):
        shutil.copy(office_files / name, root / name)
    ctx = make_ctx(root)
    outcomes = [
        call(ctx, "xlsx_write", path="new.xlsx", sheets=[
            {"name": "People", "rows": [["Name", "Age"], ["Ada", 36], ["Alan", 41],
                                        ["Sum", None]]},
            {"name": "Calc", "rows": [[2, 3, "=A1*B1"]]}]),
        call(ctx, "xlsx_edit", path="orders.xlsx", output="edited.xlsx",
             cells={"B2": 10, "Notes!B1": "Basel Parts AG", "Orders!A5": "checked"}),
        call(ctx, "docx_write", path="new.docx", blocks=_BLOCKS),
        call(ctx, "pdf_write", path="new.pdf", blocks=_BLOCKS, title="Inspection"),
        call(ctx, "pdf_watermark", path="report.pdf", text="DRAFT", output="stamped.pdf"),
        call(ctx, "pdf_fill_form", path="form.pdf", output="filled.pdf",
             values={"full_name": "Ada Lovelace", "city": "London", "agree": True}),
    ]
    for outcome in outcomes:
        assert not outcome.is_error, outcome.output
    office_convert([root / "new.xlsx", root / "edited.xlsx"], _CSV_ALL_SHEETS, root,
                   office_profile)
    office_convert([root / "new.docx"], "txt:Text", root, office_profile)
    # LibreOffice Draw opens a PDF as drawing objects; its text lands in the .odg.
    office_convert([root / "new.pdf", root / "stamped.pdf"], "odg", root, office_profile)
    return root


def _odg_text(path: Path) -> list[str]:
    """The text spans of a LibreOffice drawing, in document order."""
    import re
    import zipfile
    from html import unescape

    content = zipfile.ZipFile(path).read("content.xml").decode("utf-8")
    return [unescape(t) for t in re.findall(r"<text:span[^>]*>([^<]+)", content)]


def _pdftotext(path: Path, *, layout: bool = True) -> str:
    mode = ["-layout"] if layout else ["-raw"]
    return subprocess.run(["pdftotext", *mode, str(path), "-"], capture_output=True,
                          text=True, check=True).stdout


def test_xlsx_write_opens_in_libreoffice_with_formulas_computed(written: Path) -> None:
    people = (written / "new-People.csv").read_text().splitlines()
    assert people == ["Name,Age", "Ada,36", "Alan,41", "Sum,"]
    assert (written / "new-Calc.csv").read_text().strip() == "2,3,6"


def test_xlsx_edit_changes_the_cells_and_keeps_the_rest(written: Path) -> None:
    orders = (written / "edited-Orders.csv").read_text().splitlines()
    assert orders[0] == "Item,Qty,Price,Total,Shipped"
    # B2 changed from 3 to 10; the formulas survived and LibreOffice recomputed them.
    assert orders[1] == "Widget,10,2.5,25,2026-03-14"
    assert orders[3] == "Grand total,,,65,"
    assert orders[4] == "checked,,,,"
    assert (written / "edited-Notes.csv").read_text().strip() == "Supplier,Basel Parts AG"


def test_xlsx_edit_keeps_merged_cells_defined_names_and_styles(written: Path) -> None:
    import openpyxl

    before = openpyxl.load_workbook(written / "orders.xlsx")
    after = openpyxl.load_workbook(written / "edited.xlsx")
    assert [str(r) for r in after["Orders"].merged_cells.ranges] == \
        [str(r) for r in before["Orders"].merged_cells.ranges] == ["A4:C4"]
    assert "GrandTotal" in after.defined_names
    assert after["Orders"]["A1"].font.b is True
    assert after["Orders"]["D4"].value == "=SUM(D2:D3)"
    assert after["Orders"]["E2"].number_format == before["Orders"]["E2"].number_format


def test_docx_write_opens_in_libreoffice_in_order(written: Path) -> None:
    text = (written / "new.txt").read_text(encoding="utf-8-sig")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    order = ["Inspection Report", "All pumps passed the pressure test.", "• Pump A: 4.1 bar",
             "• Pump B: 3.9 bar", "1. Drain", "2. Refill", "Pump", "Result", "Appendix Ωmega"]
    positions = [lines.index(want) for want in order]
    assert positions == sorted(positions), lines


def test_docx_write_styles_are_headings_and_lists(written: Path) -> None:
    import docx

    document = docx.Document(str(written / "new.docx"))
    styles = {p.text: p.style.name for p in document.paragraphs if p.text}
    assert styles["Inspection Report"] == "Heading 1"
    assert styles["Pump A: 4.1 bar"] == "List Bullet"
    assert styles["Drain"] == "List Number"
    assert len(document.tables) == 1


def test_pdf_write_is_read_by_poppler(written: Path) -> None:
    text = _pdftotext(written / "new.pdf")
    for want in ("Inspection Report", "All pumps passed the pressure test.", "Pump A: 4.1 bar",
                 "1. Drain", "Appendix Ωmega"):
        assert want in text, text
    pages = text.split("\f")
    assert "Appendix" in pages[1] and "Appendix" not in pages[0]
    table_line = next(line for line in text.splitlines() if "Pump" in line and "Result" in line)
    assert table_line.index("Pump") < table_line.index("Result")


def test_pdf_watermark_is_drawn_on_every_page(written: Path) -> None:
    # poppler reads the diagonal word one rotated glyph per line: compare without spaces.
    original = _pdftotext(written / "report.pdf", layout=False).split("\f")
    stamped = _pdftotext(written / "stamped.pdf", layout=False).split("\f")
    assert len(stamped) == len(original)
    for page in stamped:
        if page.strip():
            assert "DRAFT" in "".join(page.split())
    assert "Quarterly Report" in stamped[0]
    assert "DRAFT" not in "".join("".join(original).split())


def test_pdf_watermark_changes_pixels_at_the_page_centre(written: Path, tmp_path: Path) -> None:
    from PIL import Image

    for name in ("report", "stamped"):
        subprocess.run(["pdftoppm", "-r", "40", "-png", "-f", "1", "-l", "1", "-singlefile",
                        str(written / f"{name}.pdf"), str(tmp_path / name)], check=True)
    before = Image.open(tmp_path / "report.png").convert("L")
    after = Image.open(tmp_path / "stamped.png").convert("L")
    w, h = after.size
    box = (w // 4, h // 3, 3 * w // 4, 2 * h // 3)
    changed = sum(1 for a, b in zip(before.crop(box).tobytes(), after.crop(box).tobytes(),
                                    strict=True) if abs(a - b) > 30)
    assert changed > 200, changed


def test_pdf_write_and_pdf_watermark_open_in_libreoffice(written: Path) -> None:
    spans = _odg_text(written / "new.odg")
    joined = " ".join(spans)
    for want in ("Inspection Report", "All pumps passed the pressure test.", "Appendix Ωmega"):
        assert want in joined, spans
    assert joined.index("Inspection Report") < joined.index("Appendix Ωmega")
    stamped = _odg_text(written / "stamped.odg")
    assert any("DRAFT" in span for span in stamped), stamped
    assert any("Quarterly Report" in span for span in stamped)


def test_xlsx_edit_refuses_a_covered_merged_cell_and_names_the_stale_results(
        workspace: Path) -> None:
    ctx = make_ctx(workspace)
    before = (workspace / "orders.xlsx").read_bytes()
    merged = call(ctx, "xlsx_edit", path="orders.xlsx", cells={"B4": "x"})
    assert merged.is_error and "merged range" in merged.output
    assert (workspace / "orders.xlsx").read_bytes() == before
    edited = call(ctx, "xlsx_edit", path="orders.xlsx", cells={"C2": 3})
    assert not edited.is_error and "recalculate on open" in edited.output
    assert edited.data.extra["stale_formulas"] == ["Orders!D2", "Orders!D4"], edited.output
    assert edited.data.extra["cells"] == [{"sheet": "Orders", "cell": "C2", "old": 2.5, "new": 3}]
    read = call(ctx, "xlsx_read", path="orders.xlsx", sheet="Orders", range="D2:D2")
    assert read.data.extra["read"][0]["formulas"] == {"D2": "=B2*C2"}
