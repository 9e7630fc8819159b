"""view_image (the `media` extra): an image file becomes image content for the model.

The image is opened with Pillow and, when it is over the limit every supported vendor
accepts, scaled down (and re-encoded) until it fits; the bytes travel with the tool
result to the provider, which writes them in its own wire format. The store keeps the
path and the file's hash; a resumed run reads the file again (`_media.reload_media`).
"""

from __future__ import annotations

import hashlib
import io
import math
import warnings
from typing import Any

from PIL import Image, ImageSequence, UnidentifiedImageError

from harness_core.documents._common import failed, read_input
from harness_core.messages import Media
from harness_core.tool_data import ImageData
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import req_str

__all__ = ["MAX_DECODED_PIXELS", "MAX_IMAGE_BYTES", "MAX_IMAGE_EDGE", "open_image",
           "prepare_image", "view_image"]

MAX_IMAGE_EDGE = 1568
"""Longest side in pixels sent: Anthropic scales anything longer down to this on its side
(and refuses over 8000); OpenAI fits high detail into 2048. Under both."""

MAX_IMAGE_BYTES = 3_750_000
"""Encoded bytes sent: Anthropic's 5 MB per image is counted on the base64 (4/3 larger);
OpenAI's 20 MB is far above."""

MAX_DECODED_PIXELS = 64_000_000
"""Pixels decoded at most (192 MB as RGB). A larger JPEG is decoded at a reduced scale
(libjpeg's 1/2, 1/4 or 1/8); any other larger image is refused before decoding."""

Image.MAX_IMAGE_PIXELS = MAX_DECODED_PIXELS  # Pillow refuses twice this when opening

_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def _encode(image: Any, fmt: str) -> bytes:
    buffer = io.BytesIO()
    if fmt == "JPEG":
        image.convert("RGB").save(buffer, "JPEG", quality=85, optimize=True)
    else:
        image.save(buffer, fmt)
    return buffer.getvalue()


def _reduced(size: tuple[int, int], edge: int | None) -> tuple[int, int]:
    """The smallest size a JPEG of `size` may be decoded at: `edge` px on its longest
    side (None: any), and a power-of-two fraction within `MAX_DECODED_PIXELS` (the
    scales libjpeg decodes at); `size` itself when it fits both."""
    width, height = size
    scale = min(1.0, edge / max(width, height)) if edge else 1.0
    pixels = max(1, width * height)
    if pixels > MAX_DECODED_PIXELS:
        scale = min(scale, 2.0 ** math.floor(math.log2(math.sqrt(MAX_DECODED_PIXELS / pixels))))
    return size if scale >= 1.0 else (max(1, math.ceil(width * scale)),
                                       max(1, math.ceil(height * scale)))


def open_image(data: bytes, edge: int | None = None) -> tuple[Any, tuple[int, int]]:
    """`data` opened and decoded by Pillow within `MAX_DECODED_PIXELS`, and the size
    the file declares (larger than the image's when a JPEG was decoded reduced).

    A JPEG larger than `edge` px (or the pixel limit) is decoded at a reduced scale,
    at least as large as needed: a 108-megapixel photograph took 2 s and 900 MB, and
    Pillow's decompression-bomb warning reached stderr. Other formats over the limit
    are refused before a pixel is decoded.

    Raises:
        ValueError: Not an image Pillow can read, or too large to decode.
    """
    try:
        with warnings.catch_warnings():  # the limit below is io's; Pillow's warning is noise
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError:
        raise ValueError(f"over {2 * MAX_DECODED_PIXELS:,} pixels, refused unread (a"
                         " decompression bomb, or an image to scale down first)") from None
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"not an image Pillow can read ({exc})") from None
    width, height = image.size
    if image.format == "JPEG" and _reduced(image.size, edge) != image.size:
        image.draft(image.mode, _reduced(image.size, edge))
    if image.width * image.height > MAX_DECODED_PIXELS:
        raise ValueError(f"{width}x{height} px ({width * height:,} pixels) is over the"
                         f" {MAX_DECODED_PIXELS:,} pixels io decodes; scale it down first")
    try:
        image.load()
    except OSError as exc:
        raise ValueError(f"not an image Pillow can read ({exc})") from None
    return image, (width, height)


def prepare_image(data: bytes, path: str) -> Media:
    """The `Media` to send for an image file's bytes, scaled down when over the limits.

    Raises:
        ValueError: Not a PNG, JPEG, GIF or WebP image Pillow can read, or too large.
    """
    digest = hashlib.sha256(data).hexdigest()
    image, full = open_image(data, MAX_IMAGE_EDGE)
    fmt = image.format or ""
    if fmt not in _FORMATS:
        raise ValueError(f"{fmt or 'unknown'} images are not supported (PNG, JPEG, GIF, WebP)")
    if len(data) <= MAX_IMAGE_BYTES and max(full) <= MAX_IMAGE_EDGE:
        return Media(_FORMATS[fmt], data, path, digest, *full)
    frame = image if getattr(image, "n_frames", 1) == 1 else \
        next(iter(ImageSequence.Iterator(image))).copy()  # an animation's first frame
    # Palette and animated images become PNG; photographs stay JPEG (or WebP).
    out_fmt = fmt if fmt in ("JPEG", "WEBP") else "PNG"
    scale = min(1.0, MAX_IMAGE_EDGE / max(frame.size))
    while True:
        size = (max(1, round(frame.width * scale)), max(1, round(frame.height * scale)))
        encoded = _encode(frame.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0),
                          out_fmt)
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
