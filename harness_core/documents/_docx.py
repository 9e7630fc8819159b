"""docx_read and docx_write over python-docx (the `docx` extra)."""

from __future__ import annotations

import io
from typing import Any

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from harness_core.documents._blocks import Block, parse_blocks
from harness_core.documents._common import read_input, write_output
from harness_core.documents._office import context_limits, office_bytes, opt_password
from harness_core.tool_data import DocumentRead
from harness_core.tools import DocumentLimits, ToolContext, ToolOutcome
from harness_core.tools._support import bounded, req_str

__all__ = ["document_text", "read", "write"]


def _is_list_item(paragraph: Paragraph) -> bool:
    ppr = paragraph._p.pPr
    return ppr is not None and ppr.numPr is not None


def _style(paragraph: Paragraph) -> str:
    try:
        return paragraph.style.name if paragraph.style is not None else "Normal"
    except KeyError:  # a style id the styles part does not define
        return "Normal"


def _table_rows(table: Table) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        seen: set[int] = set()
        for cell in row.cells:
            if id(cell._tc) in seen:  # a merged cell repeats across its span
                continue
            seen.add(id(cell._tc))
            cells.append(cell.text)
        rows.append(cells)
    return rows


def _body(document: Any) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            if item.text.strip():
                blocks.append({"type": "paragraph", "style": _style(item), "text": item.text,
                               "list": _is_list_item(item)})
        else:
            blocks.append({"type": "table", "rows": _table_rows(item)})
    return blocks


def _part_text(part: Any) -> str:
    lines = [p.text for p in part.paragraphs if p.text.strip()]
    lines.extend(" | ".join(r) for t in part.tables for r in _table_rows(t))
    return "\n".join(lines)


def _margins(document: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"headers": [], "footers": []}
    for section in document.sections:
        for key, parts in (("headers", (section.header, section.first_page_header,
                                        section.even_page_header)),
                           ("footers", (section.footer, section.first_page_footer,
                                        section.even_page_footer))):
            for part in parts:
                if part.is_linked_to_previous:
                    continue
                text = _part_text(part)
                if text and text not in out[key]:
                    out[key].append(text)
    return out


def _render(blocks: list[dict[str, Any]], margins: dict[str, list[str]]) -> str:
    lines: list[str] = []
    tables = 0
    for block in blocks:
        if block["type"] == "paragraph":
            mark = "- " if block["list"] else ""
            lines.append(f"[{block['style']}] {mark}{block['text']}")
        else:
            tables += 1
            lines.append(f"[table {tables}]")
            lines.extend("| " + " | ".join(row) + " |" for row in block["rows"])
    for key, label in (("headers", "header"), ("footers", "footer")):
        lines.extend(f"[{label}] {text}" for text in margins[key])
    return "\n".join(lines)


def _parse(data: bytes) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    document = docx.Document(io.BytesIO(data))
    return _body(document), _margins(document)


def read(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "docx_read")
    password = opt_password(args, "docx_read")
    got = read_input(ctx, path, "docx_read")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    data = office_bytes(data, "docx", context_limits(ctx), rel, password)
    blocks, margins = _parse(data)
    shown, cut = bounded(_render(blocks, margins) or "(no text)", ctx.output_cap)
    return ToolOutcome(output=shown, data=DocumentRead(rel, {"blocks": blocks, **margins}, cut))


def document_text(data: bytes, limits: DocumentLimits | None = None,
                  what: str = "the document") -> str:
    """The whole text of a .docx (body, tables, headers, footers), for the document gate."""
    data = office_bytes(data, "docx", limits, what)
    blocks, margins = _parse(data)
    return _render(blocks, margins)


def _add(document: Any, block: Block) -> None:
    if block.kind == "heading":
        document.add_heading(block.text, level=block.level)
    elif block.kind == "paragraph":
        document.add_paragraph(block.text)
    elif block.kind in ("bullets", "numbered"):
        style = "List Bullet" if block.kind == "bullets" else "List Number"
        for item in block.items:
            document.add_paragraph(item, style=style)
    elif block.kind == "table":
        table = document.add_table(rows=len(block.rows), cols=len(block.rows[0]))
        table.style = "Table Grid"
        for r, row in enumerate(block.rows):
            for c, text in enumerate(row):
                table.cell(r, c).text = text
                if r == 0:
                    for run in table.cell(r, c).paragraphs[0].runs:
                        run.bold = True
    else:
        document.add_page_break()


def write(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "docx_write")
    blocks = parse_blocks(args.get("blocks"), "docx_write")
    document = docx.Document()
    for block in blocks:
        _add(document, block)
    buffer = io.BytesIO()
    document.save(buffer)
    return write_output(ctx, path, buffer.getvalue(), "docx_write", f"{len(blocks)} block(s)")
