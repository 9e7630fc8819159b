"""view_image (the `media` extra): an image file becomes image content for the model.

The image is opened with Pillow and, when it is over the limit every supported vendor
accepts, scaled down (and re-encoded) until it fits; the bytes travel with the tool
result to the provider, which writes them in its own wire format. The store keeps the
path and the file's hash; a resumed run reads the file again (`_media.reload_media`).
"""

from __future__ import annotations

import hashlib
import io
from typing import Any

from PIL import Image, ImageSequence, UnidentifiedImageError

from harness_core.documents._common import failed, read_input
from harness_core.messages import Media
from harness_core.tool_data import ImageData
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import req_str

__all__ = ["MAX_IMAGE_BYTES", "MAX_IMAGE_EDGE", "prepare_image", "view_image"]

MAX_IMAGE_EDGE = 1568
"""Longest side in pixels sent: Anthropic scales anything longer down to this on its side
(and refuses over 8000); OpenAI fits high detail into 2048. Under both."""

MAX_IMAGE_BYTES = 3_750_000
"""Encoded bytes sent: Anthropic's 5 MB per image is counted on the base64 (4/3 larger);
OpenAI's 20 MB is far above."""

Image.MAX_IMAGE_PIXELS = 64_000_000  # refuse decompression bombs (Pillow raises)

_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def _encode(image: Any, fmt: str) -> bytes:
    buffer = io.BytesIO()
    if fmt == "JPEG":
        image.convert("RGB").save(buffer, "JPEG", quality=85, optimize=True)
    else:
        image.save(buffer, fmt)
    return buffer.getvalue()


def prepare_image(data: bytes, path: str) -> Media:
    """The `Media` to send for an image file's bytes, scaled down when over the limits.

    Raises:
        ValueError: Not a PNG, JPEG, GIF or WebP image Pillow can read.
    """
    digest = hashlib.sha256(data).hexdigest()
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise ValueError(f"not an image Pillow can read ({exc})") from None
    fmt = image.format or ""
    if fmt not in _FORMATS:
        raise ValueError(f"{fmt or 'unknown'} images are not supported (PNG, JPEG, GIF, WebP)")
    if len(data) <= MAX_IMAGE_BYTES and max(image.size) <= MAX_IMAGE_EDGE:
        return Media(_FORMATS[fmt], data, path, digest, *image.size)
    frame = next(iter(ImageSequence.Iterator(image))).copy()  # an animation's first frame
    # Palette and animated images become PNG; photographs stay JPEG (or WebP).
    out_fmt = fmt if fmt in ("JPEG", "WEBP") else "PNG"
    scale = min(1.0, MAX_IMAGE_EDGE / max(frame.size))
    while True:
        size = (max(1, round(frame.width * scale)), max(1, round(frame.height * scale)))
        encoded = _encode(frame.resize(size, Image.Resampling.LANCZOS), out_fmt)
        if len(encoded) <= MAX_IMAGE_BYTES:
            return Media(_FORMATS[out_fmt], encoded, path, digest, *size)
        scale *= 0.75


def view_image(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "view_image")
    got = read_input(ctx, path, "view_image")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    try:
        media = prepare_image(data, rel)
    except ValueError as exc:
        return failed(f"view_image: {rel}: {exc}")
    note = "" if media.data is data else f", scaled down from {len(data)} bytes to fit"
    text = f"{rel}: {media.media_type}, {media.width}x{media.height} px{note}"
    return ToolOutcome(output=text, media=(media,), data=ImageData(
        rel, media.media_type, media.width, media.height, len(media.data),
        media.source_sha256))
