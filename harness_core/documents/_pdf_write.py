"""pdf_write (fpdf2) and pdf_watermark (fpdf2 stamp merged by pypdf): the `pdf` extra.

fpdf2's built-in fonts cover Latin-1 only. Text outside it is set in a Unicode TrueType
font when one of the usual system fonts exists; otherwise those characters become "?"
and the observation says so.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

from fpdf import FPDF
from fpdf.enums import XPos, YPos
from pypdf import PdfReader, PdfWriter, Transformation

from harness_core.documents._blocks import Block, parse_blocks
from harness_core.documents._common import opt_str, read_input, write_output
from harness_core.errors import InvalidToolArguments
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import req_str

__all__ = ["watermark", "write"]

logging.getLogger("fontTools").setLevel(logging.ERROR)  # font subsetting chatter

_UNICODE_FONTS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/Library/Fonts/Arial Unicode.ttf",
    "/System/Library/Fonts/Supplemental/Arial Unicode.ttf",
    "C:/Windows/Fonts/arial.ttf",
)
_HEADING_SIZES = {1: 20, 2: 16, 3: 14, 4: 12, 5: 11, 6: 10}


class _Fonts:
    """Picks the font family for the text of one document."""

    def __init__(self, pdf: FPDF, texts: list[str]) -> None:
        self.family = "Helvetica"
        self.replaced = 0
        if all(_latin1(t) for t in texts):
            return
        for candidate in _UNICODE_FONTS:
            if Path(candidate).is_file():
                pdf.add_font("Body", "", candidate)
                pdf.add_font("Body", "B", candidate)
                self.family = "Body"
                return

    def text(self, value: str) -> str:
        if self.family != "Helvetica" or _latin1(value):
            return value
        out = value.encode("latin-1", errors="replace").decode("latin-1")
        self.replaced += sum(1 for a, b in zip(value, out, strict=True) if a != b)
        return out


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def _texts(blocks: list[Block]) -> list[str]:
    out: list[str] = []
    for block in blocks:
        out.append(block.text)
        out.extend(block.items)
        out.extend(cell for row in block.rows for cell in row)
    return out


def _draw(pdf: FPDF, fonts: _Fonts, block: Block) -> None:
    if block.kind == "heading":
        pdf.set_font(fonts.family, "B", _HEADING_SIZES[block.level])
        pdf.multi_cell(0, _HEADING_SIZES[block.level] * 0.6, fonts.text(block.text),
                       new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.ln(2)
    elif block.kind == "paragraph":
        pdf.set_font(fonts.family, "", 11)
        pdf.multi_cell(0, 6, fonts.text(block.text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.ln(2)
    elif block.kind in ("bullets", "numbered"):
        pdf.set_font(fonts.family, "", 11)
        for n, item in enumerate(block.items, 1):
            mark = "-" if block.kind == "bullets" else f"{n}."
            pdf.multi_cell(0, 6, fonts.text(f"  {mark} {item}"), new_x=XPos.LMARGIN,
                           new_y=YPos.NEXT)
        pdf.ln(2)
    elif block.kind == "table":
        pdf.set_font(fonts.family, "", 10)
        with pdf.table() as table:
            for row in block.rows:
                cells = table.row()
                for cell in row:
                    cells.cell(fonts.text(cell))
        pdf.ln(2)
    else:
        pdf.add_page()


def write(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "pdf_write")
    blocks = parse_blocks(args.get("blocks"), "pdf_write")
    title = opt_str(args, "title", "pdf_write")
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=True, margin=15)
    fonts = _Fonts(pdf, _texts(blocks) + [title or ""])
    if title:
        pdf.set_title(fonts.text(title))
    pdf.add_page()
    for block in blocks:
        _draw(pdf, fonts, block)
    data = bytes(pdf.output())
    note = f"; {fonts.replaced} character(s) outside Latin-1 became '?'" if fonts.replaced else ""
    return write_output(ctx, path, data, "pdf_write",
                        f"{len(blocks)} block(s) on {pdf.page_no()} page(s){note}")


def _stamp(text: str, width: float, height: float) -> Any:
    """A one-page PDF of `width` x `height` points with `text` across its diagonal."""
    pdf = FPDF(unit="pt", format=(width, height))
    pdf.set_auto_page_break(False)
    fonts = _Fonts(pdf, [text])
    pdf.add_page()
    size = max(12.0, min(width, height) / max(len(text), 1) * 1.3)
    pdf.set_font(fonts.family, "B", size)
    pdf.set_text_color(150, 150, 150)
    shown = fonts.text(text)
    with pdf.local_context(fill_opacity=0.35, text_color=(150, 150, 150)):
        with pdf.rotation(angle=45, x=width / 2, y=height / 2):
            pdf.text(width / 2 - pdf.get_string_width(shown) / 2, height / 2 + size / 3, shown)
    return PdfReader(io.BytesIO(bytes(pdf.output()))).pages[0]


def watermark(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "pdf_watermark")
    text = req_str(args, "text", "pdf_watermark")
    if not text.strip():
        raise InvalidToolArguments("pdf_watermark: `text` must not be empty")
    output = opt_str(args, "output", "pdf_watermark") or path
    got = read_input(ctx, path, "pdf_watermark")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        return ToolOutcome(f"pdf_watermark: {rel} is encrypted with a password", is_error=True)
    writer = PdfWriter(clone_from=reader)
    stamps: dict[tuple[float, float], Any] = {}
    for page in writer.pages:
        box = page.mediabox
        size = (float(box.width), float(box.height))
        if size not in stamps:
            stamps[size] = _stamp(text, *size)
        page.merge_transformed_page(
            stamps[size], Transformation().translate(float(box.left), float(box.bottom)))
    buffer = io.BytesIO()
    writer.write(buffer)
    return write_output(ctx, output, buffer.getvalue(), "pdf_watermark",
                        f"stamped {text!r} on {len(writer.pages)} page(s)")
