"""pptx_read over python-pptx (the `pptx` extra), slide by slide: text (with hyperlink
targets), tables, pictures' alt text, chart data, embedded objects by name, speaker notes
and comments (`_pptx_objects`)."""

from __future__ import annotations

import io
import re
from typing import Any

import pptx
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.oxml.ns import qn

from harness_core.documents._common import read_input
from harness_core.documents._office import context_limits, office_bytes, opt_password
from harness_core.documents._pptx_objects import (
    chart_item,
    comment_authors,
    comments,
    linked_text,
    object_item,
)
from harness_core.tool_data import DocumentRead
from harness_core.tools import DocumentLimits, ToolContext, ToolOutcome
from harness_core.tools._support import bounded, req_str

__all__ = ["presentation_slides", "read", "slide_text"]


def _alt_text(shape: Any) -> str:
    props = shape._element.find(".//" + qn("p:cNvPr"))  # noqa: SLF001
    alt = "" if props is None else (props.get("descr") or props.get("title") or "").strip()
    return "" if _FILE_NAME.fullmatch(alt) else alt  # a file name describes nothing


_FILE_NAME = re.compile(r"[\w\-. ]+\.(?:png|jpe?g|gif|bmp|tiff?|emf|wmf|svg|webp)",
                        re.IGNORECASE)


def _graphic_item(shape: Any) -> list[dict[str, Any]]:
    """A picture, chart or other object with no text frame: shown by what it is."""
    kind = shape.shape_type
    if kind == MSO_SHAPE_TYPE.PICTURE or getattr(shape, "is_placeholder", False) and \
            hasattr(shape, "image"):
        alt = _alt_text(shape)
        return [{"type": "picture", "text": alt, "read": bool(alt)}]
    if getattr(shape, "has_chart", False) and shape.has_chart:
        return [chart_item(shape)]
    if kind in (MSO_SHAPE_TYPE.EMBEDDED_OLE_OBJECT, MSO_SHAPE_TYPE.MEDIA,
                MSO_SHAPE_TYPE.LINKED_OLE_OBJECT):
        return [object_item(shape, _alt_text(shape))]
    return []


def _clicked(shape: Any, text: str) -> str:
    """A shape whose click opens a link names its target after its text."""
    try:
        address = shape.click_action.hyperlink.address
    except (AttributeError, KeyError, ValueError):
        return text
    return f"{text} (link: {address})" if address and text else text


def _shape_items(shape: Any) -> list[dict[str, Any]]:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        return [item for child in shape.shapes for item in _shape_items(child)]
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [["\n".join(linked_text(p) for p in cell.text_frame.paragraphs)
                 for cell in row.cells] for row in shape.table.rows]
        return [{"type": "table", "rows": rows}]
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        text = "\n".join(linked_text(p) for p in shape.text_frame.paragraphs
                         if p.text.strip())
        text = _clicked(shape, text)
        return [{"type": "text", "text": text}] if text else []
    return _graphic_item(shape)


def _slide(index: int, slide: Any, authors: dict[str, str] | None) -> dict[str, Any]:
    title_shape = slide.shapes.title
    title = title_shape.text_frame.text if title_shape is not None else ""
    items: list[dict[str, Any]] = []
    for shape in slide.shapes:
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        items.extend(_shape_items(shape))
    return {"slide": index, "title": title, "items": items, "notes": _notes(slide),
            "comments": comments(slide, authors)}


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""
    notes = slide.notes_slide
    if notes.notes_text_frame is not None:
        return str(notes.notes_text_frame.text).strip()
    # LibreOffice writes notes without a body placeholder as a plain text box.
    texts = [item["text"] for shape in notes.shapes if not shape.is_placeholder
             for item in _shape_items(shape) if item["type"] == "text"]
    return "\n".join(texts).strip()


def presentation_slides(data: bytes, limits: DocumentLimits | None = None,
                        what: str = "the presentation",
                        password: str | None = None) -> list[dict[str, Any]]:
    """Each slide's title, text and tables (in shape order) and notes."""
    data = office_bytes(data, "pptx", limits, what, password)
    deck = pptx.Presentation(io.BytesIO(data))
    authors = comment_authors(deck.part.package)
    return [_slide(i, slide, authors) for i, slide in enumerate(deck.slides, 1)]


_LABELS = {"picture": "picture", "chart": "chart", "object": "embedded object"}


def left_out(slides: list[dict[str, Any]]) -> list[str]:
    """Counts of what the text of the slides does not hold."""
    counts: dict[str, int] = {}
    for slide in slides:
        for item in slide["items"]:
            if item["type"] == "picture" and not item["read"]:
                counts["picture(s) without alt text"] = counts.get(
                    "picture(s) without alt text", 0) + 1
            elif item["type"] == "chart" and not item["read"]:
                counts["chart(s) without data"] = counts.get("chart(s) without data", 0) + 1
            elif item["type"] == "object":
                counts["embedded object(s) (content not read)"] = counts.get(
                    "embedded object(s) (content not read)", 0) + 1
    return [f"{n} {what}" for what, n in counts.items()]


def slide_text(slide: dict[str, Any]) -> str:
    lines = [f"== slide {slide['slide']}" + (f": {slide['title']}" if slide["title"] else "")
             + " =="]
    for item in slide["items"]:
        if item["type"] == "text":
            lines.append(item["text"])
        elif item["type"] in _LABELS:
            lines.append(f"[{_LABELS[item['type']]}" + (f": {item['text']}]" if item["text"]
                                                          else "]"))
            lines.extend(f"  {line}" for line in item.get("data", ()))
        else:
            lines.extend("| " + " | ".join(row) + " |" for row in item["rows"])
    if slide["notes"]:
        lines.append(f"[notes] {slide['notes']}")
    for comment in slide.get("comments", ()):
        by = f" by {comment['author']}" if comment["author"] else ""
        lines.append(f"[comment{by}] {comment['text']}")
    return "\n".join(lines)


def read(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "pptx_read")
    password = opt_password(args, "pptx_read")
    got = read_input(ctx, path, "pptx_read")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    slides = presentation_slides(data, context_limits(ctx), rel, password)
    missing = left_out(slides)
    text = "\n".join(slide_text(s) for s in slides) or "(no slides)"
    if missing:
        text = f"[not read] {', '.join(missing)}\n{text}"
    shown, cut = bounded(text, ctx.output_cap)
    return ToolOutcome(output=shown, data=DocumentRead(rel, {"slides": slides,
                                                             "not_read": missing}, cut))
