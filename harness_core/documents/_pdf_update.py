"""How pdf_fill_form and pdf_watermark write a PDF they change: as an incremental update.

An incremental update appends the changed objects and a new cross-reference section to
the file's bytes, which stay exactly as they were: every object the tool did not touch
(and any signature over the original bytes) is kept byte for byte. An encrypted PDF (opened
with the empty user password) is rewritten whole instead, and the observation says so.
"""

from __future__ import annotations

import io

from pypdf import PdfReader, PdfWriter

__all__ = ["KEPT_NOTE", "REWRITTEN_NOTE", "incremental_writer", "written"]

KEPT_NOTE = "; written as an incremental update (the original bytes kept as they were)"
REWRITTEN_NOTE = ("; rewritten whole (an encrypted PDF cannot be updated incrementally"
                  " here): objects were renumbered and streams compressed again")


def incremental_writer(data: bytes, reader: PdfReader) -> PdfWriter:
    """A writer whose output is `data` followed by an update (the whole file rewritten
    for an encrypted PDF)."""
    if reader.is_encrypted:
        return PdfWriter(clone_from=reader)
    return PdfWriter(io.BytesIO(data), incremental=True)


def written(writer: PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
