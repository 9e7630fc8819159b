"""Issue 27 item 1: every reader reads completely or says what it left out.

The files come from tests/fixtures/documents/ (make_fixtures.py: LibreOffice, openpyxl,
python-docx, a hand-written PDF); each case failed silently before.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from harness_core.documents import check_document
from harness_core.workspace import Workspace
from tests.integration.documents.conftest import call, make_ctx

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "documents"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    for path in FIXTURES.iterdir():
        if path.suffix in (".docx", ".xlsx", ".pptx", ".pdf"):
            shutil.copy(path, root / path.name)
    return root


def test_xlsx_read_never_trusts_a_declared_dimension(corpus: Path) -> None:
    # Every sheet declares <dimension ref="A1:A1"/> over the 12 cells it holds.
    out = call(make_ctx(corpus), "xlsx_read", path="dimension.xlsx")
    assert not out.is_error, out.output
    sheets = out.data.extra["read"]
    assert [len(s["rows"]) for s in sheets] == [4, 4, 4, 4, 4]
    assert sheets[4]["rows"][3] == ["city45 harbour", 54, None]
    assert sheets[4]["formulas"]["D5"] == "=C5*2"
    assert "== sheet Region1 (B2:D5) ==" in out.output and "5: city45 harbour" in out.output


def test_xlsx_read_says_how_many_rows_it_left_out(corpus: Path) -> None:
    out = call(make_ctx(corpus), "xlsx_read", path="dimension.xlsx", sheet="Region3",
               max_rows=1)
    assert "3 row(s) after row 2" in out.output
    assert out.data.extra["read"][0]["omitted_rows"] == 3


def test_xlsx_read_names_charts_pictures_and_comments_it_does_not_show(tmp_path: Path) -> None:
    import openpyxl
    from openpyxl.chart import BarChart, Reference
    from openpyxl.comments import Comment

    book = openpyxl.Workbook()
    ws = book.active
    for row in (["a", 1], ["b", 2]):
        ws.append(row)
    ws["A1"].comment = Comment("checked by audit", "Eve")
    chart = BarChart()
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=2))
    ws.add_chart(chart, "D2")
    book.save(tmp_path / "chart.xlsx")
    out = call(make_ctx(tmp_path), "xlsx_read", path="chart.xlsx")
    assert "[not read] 1 chart(s), 1 cell comment(s)" in out.output, out.output
    assert out.data.extra["not_read"] == ["1 chart(s)", "1 cell comment(s)"]


def test_docx_read_reads_tracked_changes_notes_comments_boxes_and_controls(
        corpus: Path) -> None:
    out = call(make_ctx(corpus), "docx_read", path="review.docx")
    assert not out.is_error, out.output
    text = out.output
    assert "[+sixty sealed crates of +]" in text                      # insertion
    assert "[+Quality disputes go to an independent inspector" in text  # inserted paragraph
    assert "[-obsolete penalty wording-]" in text                     # deletion
    assert "lemons each week[^1]" in text
    assert "[footnote 1] Weekly means every Monday before noon." in text
    assert "[endnote i] A season runs from October through March." in text
    assert "[comment 0 by Bob Counsel] Check whether indexation applies here." in text
    assert "[text box]" in text and "Boxed note: crates must stay refrigerated." in text
    assert "Delivery point: Quay seven warehouse." in text           # content control
    assert "[header] Harbour supply agreement draft" in text
    assert text.splitlines()[0].startswith("[contains] 2 tracked insertions")
    assert "[not read] 1 pictures without text" in text
    assert out.data.extra["not_read"] == {"pictures without text": 1}


def test_docx_read_reads_block_and_inline_controls_and_a_text_box_once(corpus: Path) -> None:
    out = call(make_ctx(corpus), "docx_read", path="controls.docx")
    text = out.output
    assert "Either party may terminate with ninety days written notice." in text
    assert "Signed in Marseille harbour office today." in text
    assert "[+Payment follows within thirty days" in text
    assert "[+forty crates of +][-twelve barrels of -]olive oil" in text
    # Word writes a text box twice (DrawingML and its VML fallback): read once.
    assert text.count("Boxed remark: deliveries pause during August holidays.") == 1
    assert out.data.extra["found"]["content controls"] == 2


def test_the_document_gate_sees_inserted_text(corpus: Path) -> None:
    check = check_document(Workspace(corpus), "review.docx", text="independent inspector")
    assert check.passed, check.detail


def test_a_docx_with_a_large_merged_table_reads_fast(corpus: Path) -> None:
    # python-docx's row.cells rebuilt the table grid for each row: 3.3 s here, 19 s on
    # the file; the walker reads the XML once.
    began = time.monotonic()
    out = call(make_ctx(corpus), "docx_read", path="slow.docx")
    assert time.monotonic() - began < 1.5
    assert "| r599c0 | r599c1 |" not in out.output  # vertical merge: the top cell holds it
    assert "r598c0" in out.output or out.data.truncated


def test_pdf_read_falls_back_to_poppler_and_says_so(corpus: Path) -> None:
    out = call(make_ctx(corpus), "pdf_read", path="glyphs.pdf")
    assert "/g71" not in out.output
    assert "Glacier survey notes: the eastern moraine advanced" in out.output
    assert "text from poppler's pdftotext" in out.output
    assert out.data.extra["pages"][0]["source"] == "pdftotext"


def test_pdf_read_leaves_out_an_unreadable_page_and_says_so(corpus: Path) -> None:
    out = call(make_ctx(corpus), "pdf_read", path="survey.pdf")
    assert "[not read] page(s) 1: no usable text layer" in out.output
    assert "\x01" not in out.output and out.data.extra["pages"][0]["text"] == ""


def test_pdf_read_keeps_pypdf_when_its_text_is_good(corpus: Path) -> None:
    out = call(make_ctx(corpus), "pdf_read", path="manifest.pdf")
    page = out.data.extra["pages"][0]
    assert page["source"] == "pypdf" and "note" not in page
    assert "[not read]" not in out.output and "pdftotext" not in out.output


def test_pptx_read_names_pictures_and_reads_charts_data(tmp_path: Path) -> None:
    import pptx
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Sales"
    png = FIXTURES / "sources" / "pixel.png"
    slide.shapes.add_picture(str(png), Inches(1), Inches(1))
    described = slide.shapes.add_picture(str(png), Inches(3), Inches(1))
    described._element.nvPicPr.cNvPr.set("descr", "Company logo")
    data = CategoryChartData()
    data.categories = ["Q1", "Q2"]
    data.add_series("Revenue", (1.0, 2.0))
    slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(3), Inches(4),
                           Inches(3), data)
    deck.save(str(tmp_path / "sales.pptx"))
    out = call(make_ctx(tmp_path), "pptx_read", path="sales.pptx")
    assert "[not read] 1 picture(s) without alt text\n" in out.output, out.output
    assert "[picture: Company logo]" in out.output
    # One series and no title: PowerPoint shows the series name as the title.
    assert "[chart: Revenue]\n  categories: Q1, Q2\n  series Revenue: 1, 2" in out.output, \
        out.output
