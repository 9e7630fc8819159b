"""Issue 27 item 6: time and memory bounds of every Office and PDF reader on 50 MB files.

Each file is shaped like a real one of that size (bigfiles.py): mostly photographs,
which are incompressible, plus large XML or a long text layer. Each call runs in a
child process that reports its CPU seconds and peak-RSS growth (`bigfiles.measured`).
The bounds leave room for a loaded machine; the figures measured on a quiet 2-core one
are in the comments. Each answer is checked for content (first and last items, or the
note naming what was left out), and stderr must be empty: no tracebacks, no warnings.
The images' bounds are in test_bounds_images.py.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.integration.documents import bigfiles
from tests.integration.documents.bigfiles import MIB, measured


def _fits(seen: dict[str, Any], cpu: float, grew: float) -> None:
    assert seen["stderr"] == "", seen["stderr"]
    assert seen["cpu"] < cpu, seen["cpu"]
    assert seen["grew_mib"] < grew, seen["grew_mib"]


def _about_50_mb(path: Path) -> None:
    assert 45 * MIB < path.stat().st_size < 56 * MIB, path.stat().st_size


def test_a_50_mb_docx_is_read_with_what_was_left_out_named(tmp_path: Path) -> None:
    bigfiles.big_document(tmp_path / "big.docx", paragraphs=60_000, pictures=17)
    _about_50_mb(tmp_path / "big.docx")
    seen = measured(tmp_path, "docx_read", path="big.docx")
    # Measured: 0.5 s, 50 MiB. python-docx loaded every picture and the whole tree.
    _fits(seen, cpu=15, grew=250)
    text, data = seen["text"], seen["data"]
    assert not seen["error"] and text.startswith("[not read] 17 pictures without text\n")
    assert "\n[Normal] Paragraph 0 of the annual report" in text
    # The body past the output cap is walked and counted, never kept: the note says
    # how many bytes, paragraphs and tables, and the counts add up to the document.
    note = re.search(r"\[output truncated: (\d+) more bytes not shown, among them the body's"
                     r" last ([\d,]+) paragraph\(s\) and ([\d,]+) table\(s\)\]$", text)
    assert note is not None, text[-300:]
    kept = [b["type"] for b in data["blocks"]]
    assert kept.count("paragraph") + int(note[2].replace(",", "")) == 60_000 + 17
    assert kept.count("table") + int(note[3].replace(",", "")) == 300
    assert data["truncated"] == int(note[1]) > 5_000_000
    assert data["omitted"]["paragraph"] == int(note[2].replace(",", ""))


def test_a_long_docx_is_streamed_in_constant_memory(tmp_path: Path) -> None:
    # 300,000 paragraphs (30 MB of XML, 7 MB on disk). Before: 2 s and 374 MiB, the whole
    # tree and every paragraph's record held. Measured now: 2 s, 8 MiB.
    bigfiles.big_document(tmp_path / "long.docx", paragraphs=300_000, pictures=1)
    seen = measured(tmp_path, "docx_read", path="long.docx")
    _fits(seen, cpu=20, grew=120)
    assert "[Normal] Paragraph 0 of the annual report" in seen["text"]
    assert re.search(r"the body's last 299,[0-9]{3} paragraph\(s\) and 1,500 table\(s\)\]$",
                     seen["text"]), seen["text"][-200:]


@pytest.mark.parametrize("shape", bigfiles.SLOW_SHAPES)
def test_a_docx_shaped_like_the_slow_one_reads_fast(tmp_path: Path, shape: str) -> None:
    # Issue 27: a 475 KB .docx took 19 s and 258 MB. python-docx's paragraph and cell
    # API runs an XPath query per paragraph and per cell; on these half-megabyte files
    # the old reader took 13.1 s (30,000 small tables), 6.4 s (5,000 paragraphs of 40
    # runs), 5.6 s (30,000 comments), 5.4 s (30,000 footnotes). The walker reads each
    # element once, streamed: measured 0.3-1.1 s and under 20 MiB.
    path = tmp_path / f"{shape}.docx"
    bigfiles.slow_document(path, shape, count=3000 if shape == "nested" else 30_000)
    seen = measured(tmp_path, "docx_read", path=path.name)
    _fits(seen, cpu=4, grew=150)
    text, extra = seen["text"], seen["data"]
    assert not seen["error"], text
    first = {"tables": "[table 1]\n| k0r0c0 | k0r0c1 |", "revisions": "[+new 0+][-old 0-]",
             "runs": "w0.0 w0.1 w0.2", "nested": "[table 1]\n| deep |",
             "footnotes": "claim 1[^1]", "comments": "remark 1[c1]"}[shape]
    assert first in text
    if shape == "tables":
        assert sum(b["type"] == "table" for b in extra["blocks"]) \
            + extra["omitted"]["table"] == 30_000
    elif shape == "revisions":
        assert extra["found"] == {"insertions": 30_000, "deletions": 30_000}
    elif shape in ("footnotes", "comments"):
        notes = extra[shape]
        assert len(notes) == 30_000 and notes[-1]["text"] == f"{shape[:-1]} text 30000"


def test_a_50_mb_pptx_is_read_to_its_last_slide(tmp_path: Path) -> None:
    bigfiles.big_presentation(tmp_path / "big.pptx", slides=120, side=380)
    _about_50_mb(tmp_path / "big.pptx")
    seen = measured(tmp_path, "pptx_read", path="big.pptx")
    # Measured: 0.2 s, 106 MiB (python-pptx holds every picture's bytes).
    _fits(seen, cpu=10, grew=350)
    text, slides = seen["text"], seen["data"]["slides"]
    assert text.startswith("[not read] 120 picture(s) without alt text\n== slide 1: Title 1")
    assert len(slides) == 120 and slides[-1]["title"] == "Title 120"
    assert slides[-1]["items"][0]["text"].endswith("Slide 120 point 39: revenue, costs and"
                                                   " the outlook")
    assert re.search(r"\[output truncated: \d+ more bytes not shown\]$", text)


@pytest.mark.parametrize(("name", "base", "rows", "pictures", "sheets"), [
    ("big.xlsx", "dimension.xlsx", 400_000, 14, "Region1, Region2, Region3, Region4, Region5"),
    ("big.xlsm", "macro.xlsm", 100_000, 16, "Orders, Notes"),
])
def test_a_50_mb_workbook_is_read_with_its_used_range(
        tmp_path: Path, name: str, base: str, rows: int, pictures: int, sheets: str) -> None:
    # Rows under a <dimension> claiming A1:A1 (56 MB of XML for 400,000), photographs.
    bigfiles.big_sheet(tmp_path / name, rows=rows, pictures=pictures,
                       base=bigfiles.FIXTURES / base)
    _about_50_mb(tmp_path / name)
    seen = measured(tmp_path, "xlsx_read", path=name)
    # Measured at 400,000 rows: 1.4 s (2.4 s before the sheet scan matched in C), 65 MiB.
    _fits(seen, cpu=15, grew=250)
    text = seen["text"]
    assert text.startswith(f"{name}: sheets {sheets}\n[not read] {pictures} picture(s)\n")
    assert f"(A1:C{rows}) ==\n[more rows not shown: {rows - 1000} row(s) after row 1000" \
        in text
    assert "\n1: item 1 | 1 | 1.5\n" in text


def test_a_50_mb_xlsm_is_edited_keeping_its_macros_and_pictures(tmp_path: Path) -> None:
    path = tmp_path / "book.xlsm"
    bigfiles.big_sheet(path, rows=20_000, pictures=14, base=bigfiles.FIXTURES / "macro.xlsm")
    seen = measured(tmp_path, "xlsx_edit", path="book.xlsm", cells={"B2": 99})
    # Measured: 3.2 s, 194 MiB (openpyxl loads every cell; the pictures pass through).
    _fits(seen, cpu=25, grew=500)
    assert not seen["error"] and "Orders!B2: 2 -> 99" in seen["text"], seen["text"]
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        assert "xl/vbaProject.bin" in names
        assert sum(n.startswith("xl/media/") for n in names) == 14
        import openpyxl

        book = openpyxl.load_workbook(io.BytesIO(path.read_bytes()), read_only=True)
        assert book["Orders"]["B2"].value == 99 and book["Orders"]["A20000"].value == \
            "item 20000"
        book.close()


def test_an_xlsx_edit_of_a_million_cells_patches_the_sheet_without_loading_it(
        tmp_path: Path) -> None:
    # 1.2 million cells: openpyxl's full load would take about 35 s and over 1 GB (it
    # took 10 s and 310 MiB for 300,000), so it was refused. The edit now patches the
    # sheet's XML in place; measured 1.7 s, 315 MiB (the 44 MB sheet held as bytes,
    # as text and written out again).
    path = tmp_path / "huge.xlsm"
    bigfiles.big_sheet(path, rows=400_000, pictures=1, base=bigfiles.FIXTURES / "macro.xlsm")
    seen = measured(tmp_path, "xlsx_edit", path="huge.xlsm",
                    cells={"B2": 99, "D400001": "end"})
    _fits(seen, cpu=15, grew=600)
    assert not seen["error"] and "Orders!B2: 2 -> 99" in seen["text"], seen["text"]
    with zipfile.ZipFile(path) as archive:
        sheet = archive.read("xl/worksheets/sheet1.xml")
    assert b'<c r="B2"><v>99</v></c>' in sheet
    assert sheet.endswith(b'<c r="D400001" t="inlineStr"><is><t>end</t></is></c></row>'
                          b'</sheetData><drawing r:id="rIdD1"/></worksheet>')
    assert b'<c r="C399999"><v>599998.5</v></c>' in sheet


def test_a_50_mb_pdf_is_read_up_to_the_output_cap_naming_the_rest(tmp_path: Path) -> None:
    # 30 photographs (1.6 MB each), then 2,000 pages of text.
    bigfiles.report_pdf(tmp_path / "big.pdf", text_pages=2000, photos=30)
    _about_50_mb(tmp_path / "big.pdf")
    seen = measured(tmp_path, "pdf_read", path="big.pdf")
    # Measured: 0.8 s, 52 MiB here; the worker (its figure includes what it inherits
    # from this process at fork) 199 MiB. Every page was extracted before: 7 s.
    _fits(seen, cpu=15, grew=250)
    assert seen["child_mib"] < 800, seen["child_mib"]
    text, extra = seen["text"], seen["data"]
    assert text.startswith("big.pdf: 2030 page(s)\n[not read] page(s) 1-30: no usable text"
                           " layer (no OCR)\n"), text[:300]
    unread = re.search(r"\[not read\] page\(s\) (\d+)-2030: past the output cap, not"
                       r" extracted; pass `pages` \(e\.g\. \"(\d+)-(\d+)\"\)", text)
    assert unread is not None, text[:400]
    first = int(unread[1])
    assert 33 < first < 60 and (int(unread[2]), int(unread[3])) == (first, first + 9)
    assert [p["page"] for p in extra["pages"]][-1] < first
    assert extra["unread_pages"] == f"{first}-2030"
    assert "== page 31 ==\nPage 1 line 0: clauses" in text


def test_a_long_pdf_extracts_only_the_pages_it_can_show(tmp_path: Path) -> None:
    # 3,000 pages of text, 1.3 MB: every page was extracted to show the first eight
    # (10.9 s of CPU; 15,000 pages passed the 60 s deadline). Measured now: 0.5 s.
    bigfiles.report_pdf(tmp_path / "manual.pdf", text_pages=3000)
    seen = measured(tmp_path, "pdf_read", path="manual.pdf")
    _fits(seen, cpu=5, grew=150)
    assert re.search(r"\[not read\] page\(s\) \d-3000: past the output cap", seen["text"])
    # Asked for, the last pages are read.
    seen = measured(tmp_path, "pdf_read", path="manual.pdf", pages="2999-3000")
    _fits(seen, cpu=5, grew=150)
    assert "== page 3000 ==\nPage 3000 line 0:" in seen["text"]
    assert "Page 3000 line 44: clauses" in seen["text"] and "past the output" not in \
        seen["text"]
