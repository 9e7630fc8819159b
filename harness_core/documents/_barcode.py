"""barcode_decode over zxing-cpp, images opened with Pillow (the `barcode` extra)."""

from __future__ import annotations

from typing import Any

import zxingcpp

from harness_core.documents._common import failed, read_input
from harness_core.documents._image import open_image
from harness_core.tool_data import DocumentRead
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import bounded, req_str

__all__ = ["decode"]


def _corners(position: Any, scale: tuple[float, float]) -> list[list[int]]:
    """The code's corners in the file's pixels (`scale`: file size / decoded size)."""
    return [[round(p.x * scale[0]), round(p.y * scale[1])]
            for p in (position.top_left, position.top_right, position.bottom_right,
                      position.bottom_left)]


def decode(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "barcode_decode")
    got = read_input(ctx, path, "barcode_decode")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    try:
        image, full = open_image(data)  # within the pixel limit: a huge JPEG reduced
    except ValueError as exc:
        return failed(f"barcode_decode: {rel}: {exc}")
    # zxing reads luminance: a grey copy is a third of an RGB one.
    found = zxingcpp.read_barcodes(image.convert("L"))
    scale = (full[0] / image.width, full[1] / image.height)
    codes = [{"format": r.format.name, "text": r.text, "position": _corners(r.position, scale),
              "orientation": r.orientation} for r in found if r.valid]
    reduced = "" if full == image.size else (
        f" (a {full[0]}x{full[1]} px image, over the pixel limit: read at {image.width}x"
        f"{image.height}, where very small codes may be missed; positions in the file's"
        " pixels)")
    if not codes:
        return ToolOutcome(output=f"no barcode found in {rel}{reduced}",
                           data=DocumentRead(rel, {"barcodes": []}))
    lines = [f"{rel}: {len(codes)} barcode(s){reduced}"]
    lines.extend(f"- {c['format']} at {c['position']}: {c['text']}" for c in codes)
    shown, _ = bounded("\n".join(lines), ctx.output_cap)
    return ToolOutcome(output=shown, data=DocumentRead(rel, {"barcodes": codes}))
