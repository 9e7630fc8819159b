"""Malformed documents (truncated, random bytes, a PDF that never ends) are error
observations, never a crash or a hang of the caller."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from harness_core.documents._pdf import PdfUnreadable, extract_pages
from tests.integration.documents.conftest import call, make_ctx

_READERS = {"orders.xlsx": "xlsx_read", "report.docx": "docx_read", "deck.pptx": "pptx_read",
            "report.pdf": "pdf_read", "form.pdf": "pdf_fill_form"}
_LIMIT = 30.0  # seconds one malformed document may take, the PDF deadline included


def _damaged(original: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    flipped = bytearray(original)
    for _ in range(40):
        flipped[rng.randrange(len(flipped))] = rng.randrange(256)
    return [original[: len(original) // 2], original[:100], b"",
            bytes(rng.randrange(256) for _ in range(4096)), bytes(flipped)]


@pytest.mark.parametrize("name", sorted(_READERS))
def test_damaged_documents_are_error_observations(workspace: Path, name: str) -> None:
    ctx = make_ctx(workspace)
    original = (workspace / name).read_bytes()
    for i, data in enumerate(_damaged(original, seed=len(name))):
        target = f"bad{i}{Path(name).suffix}"
        (workspace / target).write_bytes(data)
        started = time.monotonic()
        out = call(ctx, _READERS[name], path=target)
        assert time.monotonic() - started < _LIMIT
        # Flipped bytes may leave a readable document; the rest cannot be read.
        if i < 4:
            assert out.is_error, (target, out.output)
            assert _READERS[name] in out.output


def test_a_pdf_that_hangs_the_parser_is_stopped_at_the_deadline() -> None:
    # A deadline no child can meet (an interpreter alone takes tens of milliseconds to
    # start) shows the child is killed and the error is a value, not a hang, on a fast
    # machine as on a loaded one (a 0.2 s deadline on a big file was met on an idle one).
    pages = b"".join(b"%d 0 obj << /Type /Page >> endobj\n" % i for i in range(3, 200_003))
    data = b"%PDF-1.4\n" + pages + b"trailer << /Root 1 0 R >>\n%%EOF"
    started = time.monotonic()
    with pytest.raises(PdfUnreadable, match="did not finish within 0.001 s"):
        extract_pages(data, None, timeout=0.001)
    assert time.monotonic() - started < 10


def test_random_bytes_images_are_errors(workspace: Path) -> None:
    (workspace / "noise.png").write_bytes(random.Random(1).randbytes(2048))
    out = call(make_ctx(workspace), "barcode_decode", path="noise.png")
    assert out.is_error and "not an image" in out.output


def test_the_pdf_worker_caps_its_address_space() -> None:
    import subprocess
    import sys

    from harness_core.documents import _pdf

    code = ("import resource, runpy, sys\n"
            f"worker = runpy.run_path({str(_pdf._WORKER)!r})\n"
            "worker['_limit_memory']()\n"
            "print(resource.getrlimit(resource.RLIMIT_AS)[0])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert int(done.stdout) == 2 * 1024**3


def test_a_workbook_named_docx_is_not_read_as_a_word_document(workspace: Path) -> None:
    # docx_read finds the main part through the package's relationships and checks its
    # content type, as python-docx did when it opened the whole package.
    (workspace / "sheet.docx").write_bytes((workspace / "orders.xlsx").read_bytes())
    out = call(make_ctx(workspace), "docx_read", path="sheet.docx")
    assert out.is_error and "not a Word document: its main part xl/workbook.xml is" \
        in out.output, out.output
