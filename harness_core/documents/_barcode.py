"""barcode_decode over zxing-cpp, images opened with Pillow (the `barcode` extra)."""

from __future__ import annotations

import io
from typing import Any

import zxingcpp
from PIL import Image, UnidentifiedImageError

from harness_core.documents._common import failed, read_input
from harness_core.tool_data import DocumentRead
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import bounded, req_str

__all__ = ["decode"]

# Decoding a huge image is slow and a decompression bomb is worse: Pillow's own guard.
Image.MAX_IMAGE_PIXELS = 64_000_000


def _corners(position: Any) -> list[list[int]]:
    return [[p.x, p.y] for p in (position.top_left, position.top_right,
                                 position.bottom_right, position.bottom_left)]


def decode(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "barcode_decode")
    got = read_input(ctx, path, "barcode_decode")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        return failed(f"barcode_decode: {rel} is not an image Pillow can read ({exc})")
    found = zxingcpp.read_barcodes(image.convert("RGB"))
    codes = [{"format": r.format.name, "text": r.text, "position": _corners(r.position),
              "orientation": r.orientation} for r in found if r.valid]
    if not codes:
        return ToolOutcome(output=f"no barcode found in {rel}",
                           data=DocumentRead(rel, {"barcodes": []}))
    lines = [f"{rel}: {len(codes)} barcode(s)"]
    lines.extend(f"- {c['format']} at {c['position']}: {c['text']}" for c in codes)
    shown, _ = bounded("\n".join(lines), ctx.output_cap)
    return ToolOutcome(output=shown, data=DocumentRead(rel, {"barcodes": codes}))
