"""Issue 27 item 7: io's text against a reference reader's, by word recall.

Each file of tests/fixtures/documents/ (rebuilt by make_fixtures.py) has the reference
reader's answer next to it (`NAME.oracle.txt`: LibreOffice's text export for .docx,
openpyxl in full mode for .xlsx, python-pptx's every text frame for .pptx, pdftotext for
.pdf). The reading tool must give at least 98 % of the oracle's words, counted with
their repetitions; a missing tracked insertion or a sheet read as empty fails it.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.documents.conftest import call, make_ctx

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "documents"
_READERS = {".docx": "docx_read", ".xlsx": "xlsx_read", ".pptx": "pptx_read",
            ".pdf": "pdf_read"}
_WORD = re.compile(r"[^\W\d_]+|\d+")
_MIN_RECALL = 0.98


def words(text: str) -> Counter[str]:
    """Lower-cased words and numbers; each CJK character counts as a word (no spaces)."""
    found: Counter[str] = Counter()
    for token in _WORD.findall(text.lower()):
        if any(ord(c) >= 0x2E80 for c in token):
            found.update(token)
        else:
            found[token] += 1
    return found


def recall(oracle: str, ours: str) -> float:
    wanted, got = words(oracle), words(ours)
    total = sum(wanted.values())
    return sum(min(n, got[w]) for w, n in wanted.items()) / total if total else 1.0


_CASES = sorted(str(p.relative_to(FIXTURES))[: -len(".oracle.txt")]
                for p in FIXTURES.glob("**/*.oracle.txt")
                if words(p.read_text(encoding="utf-8")))


def test_the_corpus_covers_every_format_io_reads() -> None:
    assert {Path(name).suffix for name in _CASES} == set(_READERS)


@pytest.mark.parametrize("name", _CASES)
def test_word_recall_against_the_reference_reader(name: str, tmp_path: Path) -> None:
    shutil.copy(FIXTURES / name, tmp_path / Path(name).name)
    out = call(make_ctx(tmp_path), _READERS[Path(name).suffix], path=Path(name).name)
    assert not out.is_error, out.output
    oracle = (FIXTURES / f"{name}.oracle.txt").read_text(encoding="utf-8")
    score = recall(oracle, out.output)
    missing = words(oracle) - words(out.output)
    assert score >= _MIN_RECALL, (score, sorted(missing.elements())[:40])


def test_the_measure_fails_a_reader_that_drops_words() -> None:
    # Negative control: the old docx_read's answer on review.docx (no tracked
    # insertions, no notes) scores under the bar.
    oracle = (FIXTURES / "review.docx.oracle.txt").read_text(encoding="utf-8")
    old = ("Supply Agreement\nThe buyer orders lemons each week from the cooperative.\n"
           "Prices are fixed for one season and reviewed afterwards.\nDelivery point: .\n"
           "Cold chain obligations apply throughout transport.\nStamp of the cooperative:\n"
           "Month Crates October 240\nSigned by both parties in duplicate.")
    assert recall(oracle, old) < 0.8
    assert recall(oracle, oracle) == 1.0
