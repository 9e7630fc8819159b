"""The reading tools on documents LibreOffice wrote (not on files our own libraries made)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.documents.conftest import call, make_ctx


def test_xlsx_read_shows_sheets_values_formulas_and_iso_dates(workspace: Path) -> None:
    out = call(make_ctx(workspace), "xlsx_read", path="orders.xlsx")
    assert not out.is_error, out.output
    assert out.data.extra["sheets"] == ["Orders", "Notes"]
    orders = out.data.extra["read"][0]
    assert orders["rows"][0] == ["Item", "Qty", "Price", "Total", "Shipped"]
    assert orders["rows"][1] == ["Widget", 3, 2.5, 7.5, "2026-03-14"]
    assert orders["formulas"] == {"D2": "=B2*C2", "D3": "=B3*C3", "D4": "=SUM(D2:D3)"}
    assert "=SUM(D2:D3) → 47.5" in out.output
    assert "Zürich Parts AG" in out.output


def test_xlsx_read_one_sheet_and_a_range(workspace: Path) -> None:
    out = call(make_ctx(workspace), "xlsx_read", path="orders.xlsx", sheet="Orders",
               range="B2:C3")
    assert [s["name"] for s in out.data.extra["read"]] == ["Orders"]
    assert out.data.extra["read"][0]["rows"] == [[3, 2.5], [4, 10]]
    missing = call(make_ctx(workspace), "xlsx_read", path="orders.xlsx", sheet="Nope")
    assert missing.is_error and "no sheet 'Nope'" in missing.output and "Orders" in missing.output


def test_xlsx_read_max_rows_says_more_rows_exist(workspace: Path) -> None:
    out = call(make_ctx(workspace), "xlsx_read", path="orders.xlsx", sheet="Orders",
               max_rows=2)
    assert len(out.data.extra["read"][0]["rows"]) == 2
    assert out.data.extra["read"][0]["truncated"] is True
    assert "more rows not shown" in out.output


def test_docx_read_gives_styles_lists_tables_headers_footers_in_order(workspace: Path) -> None:
    out = call(make_ctx(workspace), "docx_read", path="report.docx")
    assert not out.is_error, out.output
    kinds = [(b["type"], b.get("style"), b.get("text")) for b in out.data.extra["blocks"]]
    assert kinds[0] == ("paragraph", "Heading 1", "Quarterly Report")
    assert ("paragraph", "Heading 2", "Highlights") in kinds
    lists = [b["text"] for b in out.data.extra["blocks"] if b.get("list")]
    assert lists == ["New office in Lyon", "Two product launches"]
    table = next(b for b in out.data.extra["blocks"] if b["type"] == "table")
    assert table["rows"] == [["Region", "Revenue"], ["North", "1200"], ["South", "950"]]
    order = [b.get("text") or "table" for b in out.data.extra["blocks"]]
    assert order.index("table") < order.index("Closing remarks after the table.")
    assert out.data.extra["headers"] == ["Quarterly report header"]
    assert out.data.extra["footers"] == ["Confidential footer"]
    assert "[Heading 1] Quarterly Report" in out.output


def test_pptx_read_gives_slides_in_order_with_tables_and_notes(workspace: Path) -> None:
    out = call(make_ctx(workspace), "pptx_read", path="deck.pptx")
    assert not out.is_error, out.output
    slides = out.data.extra["slides"]
    assert [s["slide"] for s in slides] == [1, 2]
    first = out.output.index("Launch Plan")
    assert first < out.output.index("Ship in May") < out.output.index("Budget")
    assert slides[0]["notes"] == "Mention the budget risk."
    assert {"type": "table", "rows": [["Quarter", "Spend"], ["Q2", "40k"]]} in slides[1]["items"]


def test_pdf_read_gives_text_per_page(workspace: Path) -> None:
    out = call(make_ctx(workspace), "pdf_read", path="deck.pdf")
    assert not out.is_error, out.output
    assert out.data.extra["page_count"] == 2
    assert "Launch Plan" in out.data.extra["pages"][0]["text"]
    assert "Budget" in out.data.extra["pages"][1]["text"]
    second = call(make_ctx(workspace), "pdf_read", path="deck.pdf", pages="2")
    assert [p["page"] for p in second.data.extra["pages"]] == [2]


def test_pdf_read_of_a_writer_document(workspace: Path) -> None:
    out = call(make_ctx(workspace), "pdf_read", path="report.pdf")
    assert "Quarterly Report" in out.output and "Closing remarks" in out.output


def test_pdf_fill_form_lists_fields_without_values(workspace: Path) -> None:
    out = call(make_ctx(workspace), "pdf_fill_form", path="form.pdf")
    assert not out.is_error, out.output
    fields = {f["name"]: f for f in out.data.extra["fields"]}
    assert set(fields) == {"full_name", "city", "agree"}
    assert fields["full_name"]["type"] == "text"
    assert fields["agree"]["type"] == "checkbox" and fields["agree"]["states"] == ["Yes"]
    assert (workspace / "form.pdf").read_bytes() == (workspace / "form.pdf").read_bytes()


def test_pdf_read_keeps_in_data_only_the_pages_the_model_was_shown(workspace: Path) -> None:
    ctx = make_ctx(workspace)
    ctx.output_cap = 40
    out = call(ctx, "pdf_read", path="deck.pdf")
    assert out.data.extra["page_count"] == 2 and [p["page"] for p in out.data.extra["pages"]] == [1]
    assert out.data.truncated > 0 and "[output truncated" in out.output
