"""pdf_read: text per page, extracted by pypdf in a child process with a deadline.

A malformed PDF can make a parser loop, recurse or allocate without end; in a child
process the deadline and the memory cap (in `_pdf_worker`) turn each of those into an
error observation, and the run goes on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness_core.documents._common import failed, opt_str, read_input
from harness_core.errors import InvalidToolArguments, ToolError
from harness_core.host import run_helper
from harness_core.tool_data import DocumentRead
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import bounded, req_str

__all__ = ["PDF_READ_SECONDS", "PdfUnreadable", "extract_pages", "parse_pages", "pdf_text",
           "read"]

PDF_READ_SECONDS = 60.0
"""Seconds one extraction may take (a 100-page PDF costs ~1.5 s of CPU: bench/README.md)."""

_WORKER = Path(__file__).with_name("_pdf_worker.py")


class PdfUnreadable(ToolError):
    """The PDF could not be read (malformed, encrypted, or over the deadline)."""


def parse_pages(spec: str | None) -> list[int] | None:
    """0-based page indexes of a 1-based spec such as ``1-3,7`` (None: every page)."""
    if spec is None or not spec.strip():
        return None
    indexes: list[int] = []
    for part in spec.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            lo = int(first)
            hi = int(last) if dash else lo
        except ValueError:
            raise InvalidToolArguments(
                f"pdf: invalid page range {part.strip()!r} (expected e.g. 1-3,7)") from None
        if lo < 1 or hi < lo:
            raise InvalidToolArguments(f"pdf: invalid page range {part.strip()!r}")
        indexes.extend(range(lo - 1, hi))
    return sorted(set(indexes))


def extract_pages(
    data: bytes, pages: list[int] | None, timeout: float = PDF_READ_SECONDS
) -> tuple[int, list[dict[str, Any]]]:
    """(page count, [{page, text}]) of a PDF, extracted in a child process.

    Raises:
        PdfUnreadable: The PDF is malformed or encrypted, or extraction passed `timeout`.
    """
    result = _extract(data, pages, timeout, None)
    return int(result["page_count"]), list(result["pages"])


def pdf_text(data: bytes, page: int | None, timeout: float = PDF_READ_SECONDS) -> str:
    """The text the document gate reads: one page's (0-based `page`), or every page's
    after the form's fields and values (they are in the fields, not on the pages).

    Raises:
        PdfUnreadable: As `extract_pages`.
        LookupError: The PDF has no such page.
    """
    result = _extract(data, None if page is None else [page], timeout, None)
    if page is not None and not result["pages"]:
        raise LookupError(f"the PDF has no page {page + 1}")
    fields = _fields(list(result.get("fields") or [])) if page is None else ""
    return fields + "\n".join(str(p["text"]) for p in result["pages"])


def _extract(data: bytes, pages: list[int] | None, timeout: float,
             budget: int | None) -> dict[str, Any]:
    """The worker's answer: page_count, pages and the 1-based `unread` pages (those past
    `budget` bytes of text, never extracted)."""
    # poppler's pdftotext (the fallback for unusable text) gets half of the deadline.
    argv = [sys.executable, str(_WORKER), json.dumps(pages), f"{timeout / 2:.3f}",
            json.dumps(budget)]
    try:
        done = run_helper(argv, input=data, timeout=timeout)  # in io's folder, not the workspace
    except subprocess.TimeoutExpired:
        raise PdfUnreadable(f"text extraction did not finish within {timeout:g} s") from None
    try:
        result = json.loads(done.stdout)
    except ValueError:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise PdfUnreadable(f"text extraction failed (exit {done.returncode}: {tail[0]})") \
            from None
    if "error" in result:
        raise PdfUnreadable(str(result["error"]))
    return dict(result)


def _spans(numbers: list[int]) -> str:
    """Page numbers as ranges, the first 20 of them: ``9-120, 200 and 31 more``."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    more = sum(b - a + 1 for a, b in spans[20:])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in spans[:20]) + (
        f" and {more} more" if more else "")


def _summary(pages: list[dict[str, Any]], unread: list[int]) -> str:
    """Which pages were read by poppler, which have no usable text, which were not
    read at all (past the output cap)."""
    poppler = [p["page"] for p in pages if p.get("source") == "pdftotext"]
    blank = [p["page"] for p in pages if "note" in p and p.get("source") != "pdftotext"]
    lines = []
    if poppler:
        lines.append(f"[page(s) {_spans(poppler)}: text from poppler's pdftotext, pypdf's"
                     " was unusable or incomplete]")
    if blank:
        lines.append(f"[not read] page(s) {_spans(blank)}: no usable text layer (no OCR)")
    if unread:
        lines.append(f"[not read] page(s) {_spans(unread)}: past the output cap, not"
                     f" extracted; pass `pages` (e.g. \"{_next(unread)}\") to read them")
    return "".join(line + "\n" for line in lines)


_MAX_FIELDS = 200


def _fields(fields: list[dict[str, Any]]) -> str:
    """The form's fields and their values, before the pages (a value is in its field,
    not in the page text)."""
    if not fields:
        return ""
    lines = [f"== form fields ({len(fields)}) =="]
    for field in fields[:_MAX_FIELDS]:
        value = field["value"]
        shown = "(empty)" if value in (None, "", []) else json.dumps(value, ensure_ascii=False)
        lines.append(f"{field['name']} ({field['type']}): {shown}")
    if len(fields) > _MAX_FIELDS:
        lines.append(f"[{len(fields) - _MAX_FIELDS} more field(s) not shown; pdf_fill_form"
                     " lists them all]")
    return "\n".join(lines) + "\n"


def _next(unread: list[int]) -> str:
    """A `pages` value for the next few unread pages."""
    last = unread[0]
    for n in unread[1:10]:
        if n != last + 1:
            break
        last = n
    return f"{unread[0]}-{last}" if last > unread[0] else str(unread[0])


def read(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "pdf_read")
    pages = parse_pages(opt_str(args, "pages", "pdf_read"))
    got = read_input(ctx, path, "pdf_read")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    try:
        # Pages past the output cap are never extracted: the model could not see them.
        result = _extract(data, pages, PDF_READ_SECONDS, ctx.output_cap)
    except PdfUnreadable as exc:
        return failed(f"pdf_read: cannot read {rel}: {exc}")
    count, extracted, unread = int(result["page_count"]), result["pages"], result["unread"]
    fields = result.get("fields") or []
    text = f"{rel}: {count} page(s)\n" + _summary(extracted, unread) + _fields(fields) + "\n".join(
        f"== page {p['page']} ==\n" + (f"[{p['note']}]\n" if "note" in p else "") + p["text"]
        for p in extracted)
    shown, cut = bounded(text, ctx.output_cap)
    # The ledger keeps `data` for every call: only the pages the model was shown.
    kept, size = [], 0
    for page in extracted:
        if size >= ctx.output_cap:
            break
        kept.append(page)
        size += len(page["text"].encode("utf-8")) + 16
    extra: dict[str, Any] = {"page_count": count, "pages": kept}
    if fields:
        extra["form_fields"] = fields
    if unread:
        extra["unread_pages"] = _spans(unread)
    return ToolOutcome(output=shown, data=DocumentRead(rel, extra, cut))
