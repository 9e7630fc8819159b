"""Speed of the document tools on files a real office suite wrote.

* xlsx_read of a 10,000-row sheet (5 columns: text, two numbers, a formula, a date)
  that LibreOffice saved as .xlsx from a generated flat ODF source, so every formula
  carries its cached value as it does in real files. Timed for the whole sheet
  (`max_rows` 10000) and for the default first 1,000 rows, and for the
  `document_contains` gate over the whole workbook.
* xlsx_edit of one cell of that workbook (patched into the sheet's XML), and the
  openpyxl load-and-save it replaced, for comparison.
* pdf_read of a 100-page PDF LibreOffice exported from a generated document (one
  heading and three paragraphs a page): every page, and one page (the child process
  start dominates that one).

Each figure is the median (and best) wall time of `--runs` calls through the default
toolbox, with the real workspace resolver and policy gate, as the loop makes them, and
the median CPU time (this process plus the pdf_read worker), which a loaded machine
changes far less than the wall time. Linux/macOS (uses `resource`). Without
LibreOffice the files are written by openpyxl and fpdf2 instead (the script says so).

Run: python bench/documents.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness_core.clock import SystemClock  # noqa: E402
from harness_core.documents import check_document, default_toolbox  # noqa: E402
from harness_core.messages import ToolCall  # noqa: E402
from harness_core.policy import Policy, Tier  # noqa: E402
from harness_core.run import Gate  # noqa: E402
from harness_core.sandbox import Backend, BackendChoice, SandboxSpec, Selected, launcher  # noqa: E402
from harness_core.tools import ToolContext, ToolOutcome  # noqa: E402
from harness_core.workspace import Workspace  # noqa: E402

ROWS = 10_000
PAGES = 100
_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
       'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
       'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
       'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
       'xmlns:number="urn:oasis:names:tc:opendocument:xmlns:datastyle:1.0" '
       'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
       'xmlns:of="urn:oasis:names:tc:opendocument:xmlns:of:1.2"')


def _fods() -> str:
    rows = ['<table:table-row><table:table-cell office:value-type="string"><text:p>Item'
            '</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>'
            'Qty</text:p></table:table-cell><table:table-cell office:value-type="string">'
            '<text:p>Price</text:p></table:table-cell><table:table-cell office:value-type='
            '"string"><text:p>Total</text:p></table:table-cell><table:table-cell office:'
            'value-type="string"><text:p>Date</text:p></table:table-cell></table:table-row>']
    for i in range(2, ROWS + 2):
        qty, price = i % 17 + 1, (i % 89) / 4
        day = f"2026-{i % 12 + 1:02d}-{i % 28 + 1:02d}"
        rows.append(
            f'<table:table-row><table:table-cell office:value-type="string"><text:p>item-{i}'
            f'</text:p></table:table-cell><table:table-cell office:value-type="float" '
            f'office:value="{qty}"/><table:table-cell office:value-type="float" '
            f'office:value="{price}"/><table:table-cell table:formula="of:=[.B{i}]*[.C{i}]" '
            f'office:value-type="float" office:value="{qty * price}"/><table:table-cell '
            f'table:style-name="d" office:value-type="date" office:date-value="{day}"/>'
            '</table:table-row>')
    return (f'<?xml version="1.0" encoding="UTF-8"?><office:document {_NS} office:version="1.3"'
            ' office:mimetype="application/vnd.oasis.opendocument.spreadsheet">'
            '<office:automatic-styles><number:date-style style:name="iso"><number:year '
            'number:style="long"/><number:text>-</number:text><number:month number:style='
            '"long"/><number:text>-</number:text><number:day number:style="long"/>'
            '</number:date-style><style:style style:name="d" style:family="table-cell" '
            'style:data-style-name="iso"/></office:automatic-styles><office:body>'
            '<office:spreadsheet><table:table table:name="Sales">' + "".join(rows)
            + "</table:table></office:spreadsheet></office:body></office:document>")


def _fodt() -> str:
    body = []
    for page in range(1, PAGES + 1):
        brk = ' text:style-name="Break"' if page > 1 else ""
        body.append(f"<text:h{brk} text:outline-level='1'>Chapter {page}</text:h>")
        sentence = (f"Page {page}, paragraph {{n}}: the quick brown fox jumps over the lazy"
                    " dog while the harness reads every word of it. ")
        body.extend("<text:p>" + sentence.format(n=n) * 3 + "</text:p>" for n in range(1, 4))
    return (f'<?xml version="1.0" encoding="UTF-8"?><office:document {_NS} office:version="1.3"'
            ' office:mimetype="application/vnd.oasis.opendocument.text"><office:automatic-styles>'
            '<style:style style:name="Break" style:family="paragraph"><style:paragraph-'
            'properties fo:break-before="page"/></style:style></office:automatic-styles>'
            "<office:body><office:text>" + "".join(body)
            + "</office:text></office:body></office:document>")


def _convert(source: Path, target: str, out: Path, profile: Path) -> None:
    subprocess.run(["soffice", "--headless", "--norestore",
                    f"-env:UserInstallation={profile.as_uri()}", "--convert-to", target,
                    "--outdir", str(out), str(source)], check=True, capture_output=True,
                   timeout=600)


def _fallback(root: Path, ctx: ToolContext) -> None:
    rows = [["Item", "Qty", "Price", "Total", "Date"]]
    rows += [[f"item-{i}", i % 17 + 1, (i % 89) / 4, f"=B{i}*C{i}", f"2026-01-{i % 28 + 1:02d}"]
             for i in range(2, ROWS + 2)]
    _call(ctx, "xlsx_write", path="sales.xlsx", sheets=[{"name": "Sales", "rows": rows}])
    blocks: list[dict[str, object]] = []
    for page in range(1, PAGES + 1):
        blocks.append({"type": "heading", "text": f"Chapter {page}", "level": 1})
        blocks += [{"type": "paragraph", "text": f"Page {page}, paragraph {n}. " * 12}
                   for n in range(1, 4)]
        blocks.append({"type": "page_break"})
    _call(ctx, "pdf_write", path="book.pdf", blocks=blocks[:-1])


def _make_files(root: Path, ctx: ToolContext) -> str:
    if shutil.which("soffice") is None:
        _fallback(root, ctx)
        return "openpyxl and fpdf2 (LibreOffice not installed)"
    (root / "sales.fods").write_text(_fods(), encoding="utf-8")
    (root / "book.fodt").write_text(_fodt(), encoding="utf-8")
    profile = root / "profile"
    _convert(root / "sales.fods", "xlsx", root, profile)
    _convert(root / "book.fodt", "pdf", root, profile)
    return "LibreOffice"


def _ctx(root: Path) -> ToolContext:
    gate = Gate(Policy.from_lists(tier=Tier.WORKSPACE_WRITE, approval="deny"), store=None,
                run_id="", approver=None, emit=lambda event: None)
    spec = SandboxSpec(workdir=root, env={})
    return ToolContext(workspace=Workspace(root), gate=gate,
                       launcher=launcher(Selected(Backend.OFF, BackendChoice.OFF), spec),
                       clock=SystemClock(), output_cap=10**9)


_TOOLBOX = default_toolbox(include_shell=False)


def _call(ctx: ToolContext, name: str, **args: object) -> ToolOutcome:
    outcome = _TOOLBOX.call(ToolCall("b", name, dict(args)), ctx)
    if outcome.is_error:
        raise SystemExit(f"{name} failed: {outcome.output}")
    return outcome


def _openpyxl_round_trip(root: Path) -> None:
    import openpyxl

    book = openpyxl.load_workbook(root / "sales.xlsx")
    book["Sales"]["B2"] = 7
    book.save(root / "edited.xlsx")


def _cpu() -> float:
    """CPU seconds of this process and its finished children (pdf_read's worker)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _timed(runs: int, action: Callable[[], object]) -> tuple[float, float, float]:
    """Median and best wall time, and median CPU time (steady on a loaded machine)."""
    times, cpu = [], []
    for _ in range(runs):
        began, began_cpu = time.perf_counter(), _cpu()
        action()
        times.append(time.perf_counter() - began)
        cpu.append(_cpu() - began_cpu)
    return statistics.median(times), min(times), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    root = Path(tempfile.mkdtemp(prefix="io-bench-docs-"))
    try:
        ctx = _ctx(root)
        made_by = _make_files(root, ctx)
        sheet = _call(ctx, "xlsx_read", path="sales.xlsx", max_rows=ROWS + 1)
        assert sheet.data is not None and len(sheet.data.extra["read"][0]["rows"]) == ROWS + 1
        pages = _call(ctx, "pdf_read", path="book.pdf")
        assert pages.data is not None and pages.data.extra["page_count"] == PAGES
        print(f"files written by {made_by}: sales.xlsx "
              f"{(root / 'sales.xlsx').stat().st_size / 1e6:.2f} MB, book.pdf "
              f"{(root / 'book.pdf').stat().st_size / 1e6:.2f} MB")
        figures = [
            (f"xlsx_read, all {ROWS:,} rows (5 columns, formulas)",
             lambda: _call(ctx, "xlsx_read", path="sales.xlsx", max_rows=ROWS + 1)),
            ("xlsx_read, default first 1,000 rows",
             lambda: _call(ctx, "xlsx_read", path="sales.xlsx")),
            ("document_contains gate over the workbook",
             lambda: check_document(ctx.workspace, "sales.xlsx", text=f"item-{ROWS + 1}")),
            ("xlsx_edit, one cell a formula reads (patched in place)",
             lambda: _call(ctx, "xlsx_edit", path="sales.xlsx", output="edited.xlsx",
                           cells={"B2": 7})),
            ("xlsx_edit, a new cell past the used range",
             lambda: _call(ctx, "xlsx_edit", path="sales.xlsx", output="edited.xlsx",
                           cells={"F20000": "note"})),
            ("openpyxl load and save of the same workbook (the edit before #38)",
             lambda: _openpyxl_round_trip(root)),
            (f"pdf_read, all {PAGES} pages", lambda: _call(ctx, "pdf_read", path="book.pdf")),
            ("pdf_read, one page (pages=50)",
             lambda: _call(ctx, "pdf_read", path="book.pdf", pages="50")),
        ]
        print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        for label, action in figures:
            median, best, cpu = _timed(runs, action)
            print(f"{label}: wall median {median * 1000:.0f} ms, best {best * 1000:.0f} ms;"
                  f" CPU {cpu * 1000:.0f} ms")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
