"""Child process of pdf_read: extract a PDF's text with pypdf, report JSON on stdout.

Run as a script (not imported by the harness), so a PDF that makes the parser loop or
balloon is killed with this process when the parent's deadline passes. Reads the PDF
from stdin; argv[1] is a JSON list of 0-based page indexes (or null for every page).
Imports only pypdf and the standard library.
"""

from __future__ import annotations

import io
import json
import sys

# A malformed PDF can ask for gigabytes (a decompression bomb): cap the address space.
_MEMORY_BYTES = 2 * 1024**3


def _limit_memory() -> None:
    try:
        import resource
    except ImportError:  # Windows: the deadline still applies
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > _MEMORY_BYTES:
        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_BYTES, hard))


def _extract(data: bytes, wanted: list[int] | None) -> dict[str, object]:
    import logging

    logging.disable(logging.WARNING)  # pypdf logs every repair it makes
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        return {"error": "the PDF is encrypted with a password"}
    count = len(reader.pages)
    indexes = range(count) if wanted is None else [i for i in wanted if i < count]
    pages = []
    for index in indexes:
        text = reader.pages[index].extract_text() or ""
        pages.append({"page": index + 1, "text": text})
    return {"page_count": count, "pages": pages}


def main() -> None:
    wanted = json.loads(sys.argv[1]) if len(sys.argv) > 1 else None
    data = sys.stdin.buffer.read()
    _limit_memory()
    try:
        result = _extract(data, wanted)
    except MemoryError:
        result = {"error": "the PDF needs more memory than extraction allows"}
    except RecursionError:
        result = {"error": "the PDF's object structure nests too deeply"}
    # The parser raises anything on a malformed file; report it as data, whatever it is.
    except Exception as exc:  # noqa: BLE001
        result = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main()
