"""Issue 38 item 2: readers say everything that is there, on files from real producers.

Public files (tests/fixtures/documents/public/, README there): PowerPoint decks and PDF
forms from Apache POI's and pdf.js's test data. Own files: marks.docx (LibreOffice, from
sources/marks.fodt) and the LibreOffice form of conftest.py. On 64cf79c the chart read
as `[chart (data not read)]`, the comments, links and form values were not shown at all,
the custom note mark read as `[^1]`, and pypdf's incomplete text was kept.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.integration.documents.conftest import call, make_ctx

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "documents"
PUBLIC = FIXTURES / "public"


def _read(tmp_path: Path, source: Path, tool: str) -> str:
    shutil.copy(source, tmp_path / source.name)
    out = call(make_ctx(tmp_path), tool, path=source.name)
    assert not out.is_error, out.output
    return out.output


def test_pptx_read_gives_a_scatter_charts_x_and_y_values(tmp_path: Path) -> None:
    import pptx
    from pptx.chart.data import XyChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    data = XyChartData()
    series = data.add_series("Depth")
    series.add_data_point(1.5, 10)
    series.add_data_point(2.5, 12)
    slide.shapes.add_chart(XL_CHART_TYPE.XY_SCATTER, Inches(1), Inches(1), Inches(4),
                           Inches(3), data)
    deck.save(str(tmp_path / "xy.pptx"))
    text = call(make_ctx(tmp_path), "pptx_read", path="xy.pptx").output
    assert "series Depth: x 1.5, 2.5; y 10, 12" in text, text


def test_pptx_read_gives_a_charts_categories_series_and_values(tmp_path: Path) -> None:
    text = _read(tmp_path, PUBLIC / "poi-bar-chart.pptx", "pptx_read")
    # PowerPoint caches 8.200000000000001 for the first bar; it is shown as 8.2.
    assert "[chart: Sales]\n  categories: 1st Qtr, 2nd Qtr, 3rd Qtr, 4th Qtr\n" \
        "  series Sales: 8.2, 3.2, 1.4, 1.2" in text, text
    assert "chart(s)" not in text.splitlines()[0]


def test_pptx_read_gives_comments_with_their_authors_and_names_ole_objects(
        tmp_path: Path) -> None:
    text = _read(tmp_path, PUBLIC / "poi-45545_Comment.pptx", "pptx_read")
    assert "[comment by XPVMWARE01] testdoc" in text, text
    assert "[comment by XPVMWARE01] test phrase" in text
    assert "[embedded object: oleObject1.bin, Object 5]" in text
    assert text.startswith("[not read] 3 embedded object(s) (content not read)\n")


def test_pptx_read_gives_hyperlink_targets(tmp_path: Path) -> None:
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1))
    run = box.text_frame.paragraphs[0].add_run()
    run.text = "the price list"
    run.hyperlink.address = "https://example.org/prices"
    button = slide.shapes.add_textbox(Inches(1), Inches(3), Inches(2), Inches(1))
    button.text_frame.text = "Order form"
    button.click_action.hyperlink.address = "https://example.org/order"
    table = slide.shapes.add_table(1, 2, Inches(1), Inches(5), Inches(4), Inches(1)).table
    table.cell(0, 0).text = "Terms"
    link = table.cell(0, 1).text_frame.paragraphs[0].add_run()
    link.text = "conditions"
    link.hyperlink.address = "https://example.org/conditions"
    deck.save(str(tmp_path / "links.pptx"))
    text = call(make_ctx(tmp_path), "pptx_read", path="links.pptx").output
    assert "[the price list](https://example.org/prices)" in text, text
    assert "Order form (link: https://example.org/order)" in text
    assert "| Terms | [conditions](https://example.org/conditions) |" in text


def test_docx_read_shows_custom_note_marks_and_link_targets(tmp_path: Path) -> None:
    text = _read(tmp_path, FIXTURES / "marks.docx", "docx_read")
    # A custom-marked note shows its mark and takes no number: the next note is 1.
    assert "The harvest estimate[^Source] is preliminary.[^1]" in text, text
    assert "the index[^Idx] and the [delivery terms](https://example.org/terms)." in text
    assert "[footnote Source] Source\tCooperative ledger" in text
    assert "[footnote 1] Counted by hand." in text
    assert "[endnote Idx] Idx\tPublished monthly" in text


def test_docx_read_shows_a_custom_mark_drawn_from_the_symbol_font(tmp_path: Path) -> None:
    import docx
    from docx.oxml import parse_xml

    ns = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    document = docx.Document(str(FIXTURES / "marks.docx"))
    # Word's "Symbol..." button for a custom mark writes a w:sym after the reference.
    document.paragraphs[1]._p.append(parse_xml(
        f'<w:r {ns}><w:footnoteReference w:customMarkFollows="1" w:id="3"/>'
        '<w:sym w:font="Symbol" w:char="F02A"/></w:r>'))
    document.save(str(tmp_path / "sym.docx"))
    text = call(make_ctx(tmp_path), "docx_read", path="sym.docx").output
    assert "the [delivery terms](https://example.org/terms).[^*]" in text, text
    assert "[footnote *] Counted by hand." in text


def test_docx_read_gives_a_hyperlink_fields_target_but_not_a_toc_anchor(
        tmp_path: Path) -> None:
    import docx
    from docx.oxml import parse_xml

    ns = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    document = docx.Document()
    for instruction, text in ((' HYPERLINK "https://example.org/field" ', "the field"),
                              (' HYPERLINK \\l "_Toc1" ', "Chapter one")):
        paragraph = document.add_paragraph()
        for run in ('<w:fldChar w:fldCharType="begin"/>',
                    f'<w:instrText xml:space="preserve">{instruction}</w:instrText>',
                    '<w:fldChar w:fldCharType="separate"/>', f"<w:t>{text}</w:t>",
                    '<w:fldChar w:fldCharType="end"/>'):
            paragraph._p.append(parse_xml(f"<w:r {ns}>{run}</w:r>"))
    document.save(str(tmp_path / "fields.docx"))
    text = call(make_ctx(tmp_path), "docx_read", path="fields.docx").output
    assert "the field (link: https://example.org/field)" in text, text
    assert "Chapter one\n" in text + "\n" and "_Toc1" not in text


def test_docx_read_names_an_embedded_object_by_its_program(tmp_path: Path) -> None:
    text = _read(tmp_path, PUBLIC / "poi-EmbeddedDocument.docx", "docx_read")
    assert "[embedded object: Excel.Sheet.8]" in text, text
    assert text.startswith("[not read] 1 embedded objects\n")


def test_pdf_read_shows_form_values_with_their_fields(tmp_path: Path) -> None:
    text = _read(tmp_path, PUBLIC / "pdfjs-annotation-tx.pdf", "pdf_read")
    assert '== form fields (1) ==\nText2 (text): "tx annotation"\n' in text, text
    text = _read(tmp_path, PUBLIC / "pdfjs-resetform.pdf", "pdf_read")
    assert 'Dropdown12 (choice): "a"' in text and 'List Box13 (choice): "d"' in text
    assert "Text1 (text): (empty)" in text


def test_a_libreoffice_form_filled_by_pdf_fill_form_reads_back_its_values(
        workspace: Path) -> None:
    ctx = make_ctx(workspace)
    before = (workspace / "form.pdf").read_bytes()
    filled = call(ctx, "pdf_fill_form", path="form.pdf", output="filled.pdf",
                  values={"full_name": "alice", "city": "bob"})
    assert not filled.is_error and "incremental update" in filled.output, filled.output
    after = (workspace / "filled.pdf").read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    text = call(ctx, "pdf_read", path="filled.pdf").output
    assert 'full_name (text): "alice"' in text and 'city (text): "bob"' in text, text
    poppler = subprocess.run(["pdftotext", str(workspace / "filled.pdf"), "-"],
                             capture_output=True, text=True, check=True).stdout
    assert "alice" in poppler and "bob" in poppler
    # The document gate reads the same values.
    from harness_core.documents import check_document
    from harness_core.workspace import Workspace

    assert check_document(Workspace(workspace), "filled.pdf", text='"bob"').passed
    missing = check_document(Workspace(workspace), "filled.pdf", text="x", page=9)
    assert not missing.passed and "no page 9" in missing.detail, missing.detail


def test_a_watermark_is_an_incremental_update_that_poppler_reads(workspace: Path) -> None:
    before = (workspace / "report.pdf").read_bytes()
    out = call(make_ctx(workspace), "pdf_watermark", path="report.pdf", text="DRAFT",
               output="stamped.pdf")
    assert not out.is_error and out.data.extra["incremental"] is True, out.output
    after = (workspace / "stamped.pdf").read_bytes()
    assert after.startswith(before)
    poppler = subprocess.run(["pdftotext", str(workspace / "stamped.pdf"), "-"],
                             capture_output=True, text=True, check=True).stdout
    assert "DRAFT" in "".join(poppler.split())  # rotated: poppler cuts it into lines


def test_pdf_read_takes_poppler_text_where_pypdf_reads_too_few_words(
        tmp_path: Path) -> None:
    text = _read(tmp_path, PUBLIC / "pdfjs-bug1873345.pdf", "pdf_read")
    assert "text from poppler's pdftotext, pypdf's was unusable or incomplete]" in text
    assert "pypdf read 8" in text or "pypdf found" in text, text
