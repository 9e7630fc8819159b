"""The text a `document_contains` gate searches: one page, one sheet, or the whole file.

Each format module is imported only when a gate asks about that format; without the
format's extra the gate raises `MissingExtra` naming the install command.
"""

from __future__ import annotations

import re

from harness_core._record import record
from harness_core.errors import (
    DocumentEncrypted,
    DocumentTooLarge,
    MissingExtra,
    ToolError,
    WorkspaceError,
)
from harness_core.tools import DocumentLimits
from harness_core.tools._document_registry import extra_for_suffix, require_extra
from harness_core.workspace import Workspace

__all__ = ["DocumentCheck", "check_document", "document_text"]


@record
class DocumentCheck:
    """The outcome of one document check.

    Attributes:
        passed: The text (or a match of the regex) was found.
        detail: What was searched and what was found, for the gate's output.
    """

    passed: bool
    detail: str


def _page_text(data: bytes, page: int | None, timeout: float | None) -> str:
    from harness_core.documents._pdf import PDF_READ_SECONDS, pdf_text

    try:
        return pdf_text(data, None if page is None else page - 1,
                        timeout or PDF_READ_SECONDS)
    except LookupError as exc:
        raise ToolError(str(exc)) from None


def _slide_text(data: bytes, page: int | None, limits: DocumentLimits | None,
                what: str) -> str:
    from harness_core.documents._pptx import presentation_slides, slide_text

    slides = presentation_slides(data, limits, what)
    if page is not None:
        if not 1 <= page <= len(slides):
            raise ToolError(f"the presentation has no slide {page}")
        slides = [slides[page - 1]]
    return "\n".join(slide_text(s) for s in slides)


def document_text(
    data: bytes, path: str, *, page: int | None = None, sheet: str | None = None,
    timeout: float | None = None, limits: DocumentLimits | None = None,
) -> str:
    """The text of a document by its suffix (.xlsx/.xlsm, .docx, .pptx, .pdf).

    Args:
        data: The file's bytes.
        path: Its name (the suffix picks the format).
        page: A 1-based page (PDF) or slide (pptx).
        sheet: A sheet name (xlsx).
        timeout: Seconds PDF extraction may take (default `PDF_READ_SECONDS`).
        limits: How far an Office file may unpack (default `DocumentLimits()`).

    Raises:
        MissingExtra: The format's extra is not installed.
        DocumentTooLarge: An Office file would unpack past `limits`.
        DocumentEncrypted: An Office file is password-protected.
        ToolError: Not a document format, no such page/slide/sheet, or unreadable.
    """
    extra = extra_for_suffix(path)
    if extra is None:
        raise ToolError(f"{path} is not a document this gate reads (xlsx, docx, pptx, pdf)")
    require_extra(extra, f"document_contains on {path}")
    if extra == "pdf":
        return _page_text(data, page, timeout)
    if extra == "pptx":
        return _slide_text(data, page, limits, path)
    if extra == "xlsx":
        from harness_core.documents._xlsx import sheet_text

        return sheet_text(data, sheet, limits, path)
    from harness_core.documents._docx import document_text as docx_text

    return docx_text(data, limits, path)


def check_document(
    workspace: Workspace, path: str, *, text: str | None = None, regex: str | None = None,
    page: int | None = None, sheet: str | None = None, timeout: float | None = None,
    limits: DocumentLimits | None = None,
) -> DocumentCheck:
    """Whether the document at `path` contains `text` (or matches `regex`).

    A missing or unreadable file fails the check with the reason as its detail; so does
    an Office file that would unpack past `limits` (the `[documents]` table).

    Raises:
        MissingExtra: The format's extra is not installed.
    """
    try:
        data = workspace.read_bytes(workspace.resolve(path))
        content = document_text(data, path, page=page, sheet=sheet, timeout=timeout,
                                limits=limits)
    except MissingExtra:
        raise
    except (DocumentTooLarge, DocumentEncrypted) as exc:
        return DocumentCheck(False, str(exc))  # the message names the file
    except (WorkspaceError, ToolError) as exc:
        return DocumentCheck(False, f"cannot read {path}: {exc}")
    # The format library raises anything on a malformed file: the gate fails, with why.
    except Exception as exc:  # noqa: BLE001
        return DocumentCheck(False, f"cannot read {path}: {type(exc).__name__}: {exc}")
    where = f"{path}" + (f" page {page}" if page else "") + (f" sheet {sheet!r}" if sheet else "")
    if regex is not None:
        found = re.search(regex, content, re.MULTILINE)
        if found:
            return DocumentCheck(True, f"{where} matches /{regex}/: {found.group(0)!r}")
        return DocumentCheck(False, f"{where} has no match for /{regex}/")
    if text is not None and text in content:
        return DocumentCheck(True, f"{where} contains {text!r}")
    return DocumentCheck(False, f"{where} does not contain {text!r}")
