"""Issue 27 item 6: time and memory bounds of the readers on large files.

Each reader runs in a child process on a file of tens of MB unpacked (a 300,000-cell
sheet whose <dimension> lies, a 40,000-paragraph document, a 300-page PDF); the child
reports its CPU seconds (not wall time: the machine may be shared) and how far its peak
RSS grew. The files are written as raw XML / by fpdf2, so making them is quick.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "documents"

_CHILD = """
import json, resource, sys
from pathlib import Path
from tests.integration.documents.conftest import call, make_ctx
root, tool, name = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = make_ctx(root)
import openpyxl, docx, pypdf  # libraries loaded before measuring
def used():
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
rss, cpu = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, used()
out = call(ctx, tool, path=name)
print(json.dumps({"error": out.is_error, "text": out.output, "cpu": used() - cpu,
                  "grew_mib": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024}))
"""


def _big_sheet(target: Path) -> None:
    rows = "".join(
        f'<row r="{r}"><c r="A{r}" t="inlineStr"><is><t>item {r}</t></is></c><c r="B{r}">'
        f'<v>{r}</v></c><c r="C{r}"><v>{r * 1.5}</v></c></row>' for r in range(1, 100_001))
    sheet = ('<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.'
             'openxmlformats.org/spreadsheetml/2006/main"><dimension ref="A1:A1"/>'
             f"<sheetData>{rows}</sheetData></worksheet>")
    with zipfile.ZipFile(FIXTURES / "dimension.xlsx") as source, zipfile.ZipFile(
            target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            data = sheet.encode() if info.filename == "xl/worksheets/sheet1.xml" \
                else source.read(info)
            out.writestr(info.filename, data)


def _big_document(target: Path) -> None:
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    paragraphs = "".join(f"<w:p><w:r><w:t>Paragraph {i} of a long ledger, with some"
                         f" words to read.</w:t></w:r></w:p>" for i in range(40_000))
    body = (f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{w}"><w:body>'
            f"{paragraphs}</w:body></w:document>")
    with zipfile.ZipFile(FIXTURES / "controls.docx") as source, zipfile.ZipFile(
            target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            data = body.encode() if info.filename == "word/document.xml" \
                else source.read(info)
            out.writestr(info.filename, data)


def _big_pdf(target: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for page in range(300):
        pdf.add_page()
        pdf.multi_cell(0, 6, f"Page {page}. " + "Shipping records and remarks. " * 60)
    pdf.output(str(target))


@pytest.mark.parametrize(("name", "tool", "make", "said"), [
    ("big.xlsx", "xlsx_read", _big_sheet, "99000 row(s) after row 1000"),
    ("big.docx", "docx_read", _big_document, "Paragraph 0 of a long ledger"),
    ("big.pdf", "pdf_read", _big_pdf, "300 page(s)"),
])
def test_a_large_file_is_read_within_cpu_and_memory_bounds(
        tmp_path: Path, name: str, tool: str, make: object, said: str) -> None:
    make(tmp_path / name)  # type: ignore[operator]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path), tool, name],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
                          check=True)
    seen = json.loads(done.stdout)
    assert not seen["error"] and said in seen["text"], seen["text"][:300]
    assert seen["cpu"] < 30.0, seen       # CPU seconds, idle machine: 2-5 s
    assert seen["grew_mib"] < 400, seen   # peak RSS growth
    assert done.stderr == "", done.stderr
