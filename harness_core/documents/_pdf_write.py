"""pdf_write (fpdf2) and pdf_watermark (fpdf2 stamp merged by pypdf): the `pdf` extra.

A watermark is written as an incremental update (`_pdf_update`): the original bytes
stay, and the stamped pages' new content follows them.

fpdf2's built-in fonts cover Latin-1 only. Text outside it is set in a Unicode TrueType
font, with fallbacks found through fontconfig for what it lacks (`_fonts`); a character
no installed font has refuses the write (never an "ok" with text missing), and what
fpdf2 warns while rendering reaches the model in the observation.
"""

from __future__ import annotations

import io
import logging
import warnings
from typing import Any

from fpdf import FPDF
from fpdf.enums import XPos, YPos
from pypdf import PdfReader, Transformation

from harness_core.documents._blocks import Block, parse_blocks
from harness_core.documents._common import failed, opt_str, read_input, write_output
from harness_core.documents._fonts import FontPlan, plan_fonts, single_font_plan
from harness_core.documents._pdf_update import (
    KEPT_NOTE,
    REWRITTEN_NOTE,
    incremental_writer,
    written,
)
from harness_core.errors import InvalidToolArguments
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import req_str

__all__ = ["watermark", "write"]

logging.getLogger("fontTools").setLevel(logging.ERROR)  # font subsetting chatter

_HEADING_SIZES = {1: 20, 2: 16, 3: 14, 4: 12, 5: 11, 6: 10}


class _Fonts:
    """The font family (and its fallbacks) for the text of one document."""

    def __init__(self, pdf: FPDF, plan: FontPlan) -> None:
        self.plan = plan
        self.family = "Helvetica"
        if self.plan.main is None:
            return
        self.family = "Body"
        for style in ("", "B"):  # headings are "bold": the same face, no synthetic bold
            pdf.add_font("Body", style, self.plan.main[0],
                         collection_font_number=self.plan.main[1])
        names = []
        for number, (path, index) in enumerate(self.plan.fallbacks):
            names.append(f"Fallback{number}")
            for style in ("", "B"):
                pdf.add_font(names[-1], style, path, collection_font_number=index)
        if names:
            pdf.set_fallback_fonts(names, exact_match=False)


class _Warnings(logging.Handler):
    """Collects what fpdf2 logs or warns while it renders (a missing glyph, above all)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _missing_message(plan: FontPlan) -> str:
    shown = ", ".join(f"{c!r} (U+{ord(c):04X})" for c in plan.missing[:12])
    more = f" and {len(plan.missing) - 12} more" if len(plan.missing) > 12 else ""
    return (f"pdf_write: no installed font has a glyph for {shown}{more}; nothing written."
            " Install a font that covers them (e.g. fonts-noto-core, fonts-noto-cjk) or"
            " change the text")


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
        pdf.multi_cell(0, _HEADING_SIZES[block.level] * 0.6, block.text,
                       new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.ln(2)
    elif block.kind == "paragraph":
        pdf.set_font(fonts.family, "", 11)
        pdf.multi_cell(0, 6, block.text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.ln(2)
    elif block.kind in ("bullets", "numbered"):
        pdf.set_font(fonts.family, "", 11)
        for n, item in enumerate(block.items, 1):
            mark = "-" if block.kind == "bullets" else f"{n}."
            pdf.multi_cell(0, 6, f"  {mark} {item}", new_x=XPos.LMARGIN,
                           new_y=YPos.NEXT)
        pdf.ln(2)
    elif block.kind == "table":
        pdf.set_font(fonts.family, "", 10)
        with pdf.table() as table:
            for row in block.rows:
                cells = table.row()
                for cell in row:
                    cells.cell(cell)
        pdf.ln(2)
    else:
        pdf.add_page()


def _render(blocks: list[Block], title: str | None, plan: FontPlan) -> tuple[
        bytes, int, list[str]]:
    """The PDF's bytes, its page count and what fpdf2 warned about while making it."""
    catcher = _Warnings()
    logger = logging.getLogger("fpdf")
    logger.addHandler(catcher)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pdf = FPDF(format="A4")
            pdf.set_auto_page_break(auto=True, margin=15)
            fonts = _Fonts(pdf, plan)
            if title:
                pdf.set_title(title)
            pdf.add_page()
            for block in blocks:
                _draw(pdf, fonts, block)
            data = bytes(pdf.output())
    finally:
        logger.removeHandler(catcher)
    return data, pdf.page_no(), catcher.messages + [str(w.message) for w in caught]


def write(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "pdf_write")
    blocks = parse_blocks(args.get("blocks"), "pdf_write")
    title = opt_str(args, "title", "pdf_write")
    plan = plan_fonts(_texts(blocks) + [title or ""])
    if plan.missing:
        return failed(_missing_message(plan))
    data, pages, warned = _render(blocks, title, plan)
    if any("missing" in w and "glyph" in w for w in warned):
        return failed("pdf_write: fpdf2 could not draw every character; nothing written: "
                      + "; ".join(warned))
    note = f"; fonts: {plan.describe()}" if plan.main is not None else ""
    note += f"; fpdf2 warned: {'; '.join(warned)}" if warned else ""
    return write_output(ctx, path, data, "pdf_write",
                        f"{len(blocks)} block(s) on {pages} page(s){note}")


def _stamp(text: str, width: float, height: float) -> Any:
    """A one-page PDF of `width` x `height` points with `text` across its diagonal."""
    pdf = FPDF(unit="pt", format=(width, height))
    pdf.set_auto_page_break(False)
    fonts = _Fonts(pdf, single_font_plan(text))
    pdf.add_page()
    pdf.set_font(fonts.family, "B", 100)
    # As large as fits along 80 % of the diagonal (the text is measured in its font).
    diagonal = (width**2 + height**2) ** 0.5
    size = max(12.0, min(0.8 * diagonal * 100 / max(pdf.get_string_width(text), 1.0),
                         min(width, height) / 3))
    pdf.set_font(fonts.family, "B", size)
    span = pdf.get_string_width(text)
    with pdf.local_context(fill_opacity=0.35, text_color=(150, 150, 150)):
        with pdf.rotation(angle=45, x=width / 2, y=height / 2):
            # cell(), not text(): only cell() draws through fallback fonts. x and y are
            # set directly: set_xy() reads a negative x as measured from the right edge.
            pdf.x, pdf.y = width / 2 - span / 2, height / 2 - size / 2
            pdf.cell(span, size, text, align="C")
    return PdfReader(io.BytesIO(bytes(pdf.output()))).pages[0]


def watermark(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "pdf_watermark")
    text = req_str(args, "text", "pdf_watermark")
    if not text.strip():
        raise InvalidToolArguments("pdf_watermark: `text` must not be empty")
    output = opt_str(args, "output", "pdf_watermark") or path
    missing = plan_fonts([text]).missing
    if missing:
        return failed(_missing_message(FontPlan(missing=missing)).replace(
            "pdf_write", "pdf_watermark"))
    got = read_input(ctx, path, "pdf_watermark")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        return ToolOutcome(f"pdf_watermark: {rel} is encrypted with a password", is_error=True)
    writer = incremental_writer(data, reader)
    stamps: dict[tuple[float, float], Any] = {}
    for page in writer.pages:
        box = page.mediabox
        size = (float(box.width), float(box.height))
        if size not in stamps:
            stamps[size] = _stamp(text, *size)
        page.merge_transformed_page(
            stamps[size], Transformation().translate(float(box.left), float(box.bottom)))
    saved = written(writer)
    kept = saved[:len(data)] == data
    return write_output(ctx, output, saved, "pdf_watermark",
                        f"stamped {text!r} on {len(writer.pages)} page(s)"
                        + (KEPT_NOTE if kept else REWRITTEN_NOTE), {"incremental": kept})
