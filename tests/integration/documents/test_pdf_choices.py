"""Issue 27 item 4: pdf_fill_form on list and combo boxes with [export, display] option
pairs, a multi-select list, a radio group and a checkbox: each is filled, read back,
and rendered by poppler to prove the appearance (tests/fixtures/documents/choices.pdf,
a LibreOffice form whose boxes make_fixtures.py gives option pairs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from pypdf import PdfReader

from tests.integration.documents.conftest import call, make_ctx

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "documents"
_VALUES = {"buyer": "Ada Lovelace", "country": "Germany", "fruits": ["apl", "Cherry"],
           "size": "Large", "ship": "sea", "gift": True}


@pytest.fixture
def form(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "choices.pdf", tmp_path / "choices.pdf")
    return tmp_path


def _widgets(pdf: Path) -> tuple[float, dict[str, list[tuple[float, ...]]]]:
    page = PdfReader(pdf).pages[0]
    out: dict[str, list[tuple[float, ...]]] = {}
    for ref in page["/Annots"]:
        widget = ref.get_object()
        name = widget.get("/T") or widget["/Parent"].get_object().get("/T")
        out.setdefault(str(name), []).append(tuple(float(v) for v in widget["/Rect"]))
    return float(page.mediabox.height), out


def _render(pdf: Path) -> object:
    from PIL import Image

    stem = pdf.with_suffix("")
    subprocess.run(["pdftoppm", "-r", "288", "-png", "-f", "1", "-l", "1", "-singlefile",
                    str(pdf), str(stem)], check=True, capture_output=True, timeout=120)
    return Image.open(f"{stem}.png").convert("RGB")


def _crop(image: object, rect: tuple[float, ...], height: float) -> list[tuple[int, ...]]:
    x0, y0, x1, y1 = rect
    box = (int(4 * (x0 + 1.5)), int(4 * (height - y1 + 1.5)), int(4 * (x1 - 1.5)),
           int(4 * (height - y0 - 1.5)))
    cropped = image.crop(box).convert("RGB")  # type: ignore[attr-defined]
    data = cropped.tobytes()
    return [tuple(data[i:i + 3]) for i in range(0, len(data), 3)]


def _dark(pixels: list[tuple[int, ...]]) -> int:
    return sum(1 for r, g, b in pixels if r + g + b < 300)


def _blue(pixels: list[tuple[int, ...]]) -> int:
    return sum(1 for r, g, b in pixels if b > r + 40 and b > 150)


def test_listing_shows_option_pairs_and_lists(form: Path) -> None:
    out = call(make_ctx(form), "pdf_fill_form", path="choices.pdf")
    fields = {f["name"]: f for f in out.data.extra["fields"]}
    assert fields["country"]["type"] == "combo"
    assert fields["country"]["options"][1] == {"value": "de", "label": "Germany"}
    assert fields["fruits"]["multi_select"] is True and fields["fruits"]["value"] == []
    assert fields["ship"]["type"] == "radio" and fields["ship"]["states"] == ["air", "sea",
                                                                             "road"]
    assert '- fruits (list) = [] options=[{"value": "apl", "label": "Apple"}' in out.output


def test_every_kind_is_filled_read_back_and_drawn(form: Path) -> None:
    ctx = make_ctx(form)
    blank_height, rects = _widgets(form / "choices.pdf")
    before = _render(form / "choices.pdf")
    out = call(ctx, "pdf_fill_form", path="choices.pdf", output="filled.pdf", values=_VALUES)
    assert not out.is_error, out.output
    listed = call(ctx, "pdf_fill_form", path="filled.pdf")
    values = {f["name"]: f["value"] for f in listed.data.extra["fields"]}
    assert values == {"buyer": "Ada Lovelace", "country": "de", "fruits": ["apl", "chr"],
                      "size": "Large", "ship": "sea", "gift": "Yes"}
    assert '- fruits (list) = ["apl", "chr"]' in listed.output  # JSON, not a Python repr
    after = _render(form / "filled.pdf")
    height = blank_height
    for name in ("buyer", "country", "gift"):
        rect = rects[name][0]
        assert _dark(_crop(after, rect, height)) > _dark(_crop(before, rect, height)) + 20, name
    # The list box highlights exactly the chosen rows: Apple and Cherry, not Banana.
    fruits = rects["fruits"][0]
    band = (fruits[3] - fruits[1]) / 3
    rows = [(fruits[0], fruits[3] - (i + 1) * band, fruits[2], fruits[3] - i * band)
            for i in range(3)]
    highlighted = [_blue(_crop(after, row, height)) > 50 for row in rows]
    assert highlighted == [True, False, True], highlighted
    # The radio group: the "sea" button (the second widget) gains its dot, the others not.
    gained = [_dark(_crop(after, r, height)) - _dark(_crop(before, r, height))
              for r in rects["ship"]]
    assert gained[1] > 20 and gained[0] <= 5 and gained[2] <= 5, gained


def test_bad_choices_write_nothing(form: Path) -> None:
    ctx = make_ctx(form)
    for values, said in (({"country": "Spain"}, "no option 'Spain'"),
                         ({"country": ["fr", "de"]}, "takes one option, not a list"),
                         ({"fruits": ["apl", {"x": 1}]}, "takes option values")):
        out = call(ctx, "pdf_fill_form", path="choices.pdf", output="x.pdf", values=values)
        assert out.is_error and said in out.output and "nothing written" in out.output
        assert not (form / "x.pdf").exists()
