"""barcode_decode on codes drawn by maintained generator libraries (segno, qrcode)."""

from __future__ import annotations

from pathlib import Path

import segno

from tests.integration.documents.conftest import call, make_ctx


def test_qr_code_from_segno_decodes_with_format_text_and_position(tmp_path: Path) -> None:
    segno.make_qr("https://example.org/io?run=42", error="m").save(
        str(tmp_path / "qr.png"), scale=6, border=4)
    out = call(make_ctx(tmp_path), "barcode_decode", path="qr.png")
    assert not out.is_error, out.output
    [code] = out.data.extra["barcodes"]
    assert code["format"] == "QRCode" and code["text"] == "https://example.org/io?run=42"
    xs = [p[0] for p in code["position"]]
    ys = [p[1] for p in code["position"]]
    # segno's 4-module quiet zone at 6 px a module: the symbol starts at 24 px.
    assert min(xs) == 24 and min(ys) == 24
    assert "QRCode" in out.output and "run=42" in out.output


def test_two_codes_of_different_kinds_in_one_image(tmp_path: Path) -> None:
    import qrcode
    from PIL import Image

    left = qrcode.make("left side").get_image().convert("RGB")
    segno.make_micro("RIGHT").save(str(tmp_path / "micro.png"), scale=8, border=2)
    right = Image.open(tmp_path / "micro.png").convert("RGB")
    canvas = Image.new("RGB", (left.width + right.width + 40, max(left.height, right.height)),
                       "white")
    canvas.paste(left, (0, 0))
    canvas.paste(right, (left.width + 40, 0))
    canvas.save(tmp_path / "both.jpg", quality=95)
    out = call(make_ctx(tmp_path), "barcode_decode", path="both.jpg")
    found = {(c["format"], c["text"]) for c in out.data.extra["barcodes"]}
    assert found == {("QRCode", "left side"), ("MicroQRCode", "RIGHT")}


def test_no_barcode_is_a_plain_observation(tmp_path: Path) -> None:
    from PIL import Image

    Image.new("RGB", (64, 64), "white").save(tmp_path / "blank.png")
    out = call(make_ctx(tmp_path), "barcode_decode", path="blank.png")
    assert not out.is_error and out.data.extra["barcodes"] == []
