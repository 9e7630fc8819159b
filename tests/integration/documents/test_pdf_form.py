"""pdf_fill_form on a form LibreOffice exported (AcroForm fields from HTML form
controls): the values are really drawn, as poppler renders them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pypdf import PdfReader

from tests.integration.documents.conftest import call, make_ctx


def _rects(pdf: Path) -> tuple[float, dict[str, tuple[float, float, float, float]]]:
    page = PdfReader(pdf).pages[0]
    out: dict[str, tuple[float, float, float, float]] = {}
    for annot in page["/Annots"]:
        widget = annot.get_object()
        name = widget.get("/T") or widget["/Parent"].get_object().get("/T")
        x0, y0, x1, y1 = (float(v) for v in widget["/Rect"])
        out[str(name)] = (x0, y0, x1, y1)
    return float(page.mediabox.height), out


def _ink(pdf: Path, tmp: Path, rect: tuple[float, float, float, float], height: float) -> int:
    """Dark pixels inside `rect` (PDF points) of page 1 rendered at 288 dpi (4 px a pt)."""
    from PIL import Image

    stem = tmp / pdf.stem
    subprocess.run(["pdftoppm", "-r", "288", "-png", "-f", "1", "-l", "1", "-singlefile",
                    str(pdf), str(stem)], check=True, capture_output=True)
    image = Image.open(f"{stem}.png").convert("L")
    x0, y0, x1, y1 = rect
    # Inset by 1.5 pt so the field's own border is not counted.
    box = (int(4 * (x0 + 1.5)), int(4 * (height - y1 + 1.5)), int(4 * (x1 - 1.5)),
           int(4 * (height - y0 - 1.5)))
    return sum(1 for v in image.crop(box).tobytes() if v < 128)


def test_filled_values_are_drawn_where_the_fields_are(workspace: Path, tmp_path: Path) -> None:
    out = call(make_ctx(workspace), "pdf_fill_form", path="form.pdf", output="filled.pdf",
               values={"full_name": "Ada Lovelace", "city": "London", "agree": True})
    assert not out.is_error, out.output
    assert out.data.extra["filled"] == ["agree", "city", "full_name"]
    height, rects = _rects(workspace / "form.pdf")
    for name in ("full_name", "city", "agree"):
        before = _ink(workspace / "form.pdf", tmp_path, rects[name], height)
        after = _ink(workspace / "filled.pdf", tmp_path, rects[name], height)
        assert after > before + 40, (name, before, after)


def test_filled_text_is_in_poppler_text_layer(workspace: Path) -> None:
    call(make_ctx(workspace), "pdf_fill_form", path="form.pdf", output="filled.pdf",
         values={"full_name": "Grace Hopper", "city": "Arlington"})
    text = subprocess.run(["pdftotext", str(workspace / "filled.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    assert "Grace Hopper" in text and "Arlington" in text


def test_filled_values_read_back_as_field_values(workspace: Path) -> None:
    ctx = make_ctx(workspace)
    call(ctx, "pdf_fill_form", path="form.pdf", values={"city": "Paris", "agree": True})
    listed = call(ctx, "pdf_fill_form", path="form.pdf")
    values = {f["name"]: f["value"] for f in listed.data.extra["fields"]}
    assert values["city"] == "Paris" and values["agree"] == "Yes"


def test_unknown_field_or_bad_checkbox_value_writes_nothing(workspace: Path) -> None:
    ctx = make_ctx(workspace)
    before = (workspace / "form.pdf").read_bytes()
    unknown = call(ctx, "pdf_fill_form", path="form.pdf", values={"nmae": "x"})
    assert unknown.is_error and "'nmae'" in unknown.output and "full_name" in unknown.output
    bad = call(ctx, "pdf_fill_form", path="form.pdf", values={"agree": "maybe"})
    assert bad.is_error and "true/false" in bad.output
    assert (workspace / "form.pdf").read_bytes() == before
