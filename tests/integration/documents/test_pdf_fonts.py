"""Issue 27 item 2: pdf_write writes what was asked or fails, and fpdf2's warnings reach
the model. "café 日本語" answered ok with only "café" in the PDF; now the CJK text is
set in a font fontconfig finds (Noto CJK here; .ci/run installs fonts-noto-cjk)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness_core.documents import _pdf_write
from harness_core.documents._fonts import FontPlan, plan_fonts
from tests.integration.documents.conftest import call, make_ctx


def _text(path: Path) -> str:
    return subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True,
                          check=True, timeout=60).stdout


def test_cjk_text_is_set_in_a_fallback_font_and_really_drawn(tmp_path: Path) -> None:
    out = call(make_ctx(tmp_path), "pdf_write", path="mixed.pdf", title="日本語の報告",
               blocks=[{"type": "heading", "text": "café 日本語"},
                       {"type": "paragraph", "text": "Ελληνικά, русский, 한국어, 中文."},
                       {"type": "table", "rows": [["都市", "city"], ["東京", "Tokyo"]]}])
    assert not out.is_error, out.output
    assert "NotoSansCJK" in out.output  # the observation names the fonts used
    text = _text(tmp_path / "mixed.pdf")
    for expected in ("café", "日本語", "Ελληνικά", "русский", "한국어", "中文", "東京"):
        assert expected in text, (expected, text)


def test_latin1_text_stays_in_helvetica(tmp_path: Path) -> None:
    assert plan_fonts(["plain café"]) == FontPlan()
    out = call(make_ctx(tmp_path), "pdf_write", path="plain.pdf",
               blocks=[{"type": "paragraph", "text": "plain café"}])
    assert "fonts:" not in out.output and "plain café" in _text(tmp_path / "plain.pdf")


def test_a_character_no_font_has_fails_and_writes_nothing(tmp_path: Path) -> None:
    out = call(make_ctx(tmp_path), "pdf_write", path="nope.pdf",
               blocks=[{"type": "paragraph", "text": "ok \U0010fffd then 日本"}])
    assert out.is_error and "U+10FFFD" in out.output and "nothing written" in out.output
    assert not (tmp_path / "nope.pdf").exists()
    stamp = call(make_ctx(tmp_path), "pdf_write", path="base.pdf",
                 blocks=[{"type": "paragraph", "text": "base"}])
    assert not stamp.is_error
    refused = call(make_ctx(tmp_path), "pdf_watermark", path="base.pdf", text="\U0010fffd")
    assert refused.is_error and "pdf_watermark: no installed font" in refused.output


def test_a_watermark_in_japanese_is_drawn(tmp_path: Path) -> None:
    call(make_ctx(tmp_path), "pdf_write", path="doc.pdf",
         blocks=[{"type": "paragraph", "text": "body"}])
    out = call(make_ctx(tmp_path), "pdf_watermark", path="doc.pdf", text="社外秘")
    assert not out.is_error, out.output
    text = _text(tmp_path / "doc.pdf")  # poppler splits rotated text into lines
    assert all(char in text for char in "社外秘"), text


def test_fpdf2_warnings_reach_the_model_and_a_missing_glyph_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A font plan that (wrongly) trusts DejaVu for Japanese: fpdf2 logs the missing
    # glyphs while rendering, and the tool refuses with fpdf2's own words.
    dejavu = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    if shutil.which("fc-match") is None or not Path(dejavu).is_file():
        pytest.fail("DejaVu Sans and fontconfig are needed (.ci/run installs them)")
    monkeypatch.setattr(_pdf_write, "plan_fonts", lambda texts: FontPlan(main=(dejavu, 0)))
    out = call(make_ctx(tmp_path), "pdf_write", path="lost.pdf",
               blocks=[{"type": "paragraph", "text": "café 日本語"}])
    assert out.is_error, out.output
    assert "fpdf2 could not draw every character" in out.output
    assert "missing the following glyphs" in out.output
    assert not (tmp_path / "lost.pdf").exists()
