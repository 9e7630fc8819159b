"""What each document built-in tells the model: name, description, JSON schema.

Plain data, so a toolbox can advertise the tools without importing a document library.
"""

from __future__ import annotations

from typing import Any

from harness_core.messages import ToolSpec

__all__ = ["DOCUMENT_SPECS"]

_STR: dict[str, Any] = {"type": "string"}
_INT: dict[str, Any] = {"type": "integer"}
_SCALAR: dict[str, Any] = {"type": ["string", "number", "boolean", "null"]}
_ROWS: dict[str, Any] = {"type": "array", "items": {"type": "array", "items": _SCALAR}}
_BLOCKS: dict[str, Any] = {
    "type": "array",
    "description": "Blocks in order. Each is an object with `type`: `heading` (`text`,"
                   " `level` 1-6), `paragraph` (`text`), `bullets` or `numbered` (`items`:"
                   " strings), `table` (`rows`: arrays of cells; the first row is the"
                   " header) or `page_break`.",
    "items": {"type": "object"},
}


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


DOCUMENT_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec(
        "xlsx_read",
        "Read an .xlsx workbook: lists its sheets, then each sheet's cells row by row"
        " (or only `sheet`, and only the A1-style `range` such as `A1:D20`). Formula cells"
        " show the formula as stored and its cached value; dates are ISO 8601. At most"
        " `max_rows` rows per sheet (default 1000); every sheet's cells are scanned, and"
        " what is not shown (rows past the limit, charts, pictures, comments) is named."
        " `password` opens a password-protected workbook.",
        _obj({"path": _STR, "sheet": _STR, "range": _STR, "max_rows": _INT,
              "password": _STR}, ["path"]),
    ),
    ToolSpec(
        "xlsx_write",
        "Create a new .xlsx workbook at `path` from `sheets`: an array of {`name`, `rows`}"
        " (rows are arrays of cell values; a string starting with `=` is a formula).",
        _obj({"path": _STR, "sheets": {"type": "array", "items": _obj(
            {"name": _STR, "rows": _ROWS}, ["rows"])}}, ["path", "sheets"]),
    ),
    ToolSpec(
        "xlsx_edit",
        "Set cells of an existing .xlsx workbook and keep everything else (other sheets,"
        " styles, formulas, merged cells, defined names). `cells` maps a cell such as"
        " `B2` or `Sheet2!B2` to its new value (`=` starts a formula); `sheet` names the"
        " sheet for cells without one (default: the active sheet). Writes `output`"
        " (default: `path` itself). `password` opens a password-protected workbook, which"
        " is written back encrypted with it.",
        _obj({"path": _STR, "cells": {"type": "object"}, "sheet": _STR, "output": _STR,
              "password": _STR}, ["path", "cells"]),
    ),
    ToolSpec(
        "docx_read",
        "Read a .docx document in order: paragraphs with their style names, tables,"
        " text boxes and content controls; tracked insertions shown as [+text+] and"
        " deletions as [-text-]; then headers, footers, footnotes, endnotes and comments."
        " The first lines say what the document holds and what could not be read"
        " (pictures without alt text, charts). `password` opens a protected file.",
        _obj({"path": _STR, "password": _STR}, ["path"]),
    ),
    ToolSpec(
        "docx_write",
        "Create a new .docx document at `path` from `blocks`.",
        _obj({"path": _STR, "blocks": _BLOCKS}, ["path", "blocks"]),
    ),
    ToolSpec(
        "pptx_read",
        "Read a .pptx presentation slide by slide, in order: each slide's text, tables,"
        " pictures' alt text and speaker notes; charts and objects without text are"
        " named as not read. `password` opens a protected file.",
        _obj({"path": _STR, "password": _STR}, ["path"]),
    ),
    ToolSpec(
        "pdf_read",
        "Extract the text of a PDF, page by page. Optional `pages` such as `1-3,7`"
        " (1-based). Extraction stops after a time limit. A page whose text pypdf"
        " cannot decode is read by poppler's pdftotext, and the output says so; a page"
        " with no usable text layer (a scan) is named as not read.",
        _obj({"path": _STR, "pages": _STR}, ["path"]),
    ),
    ToolSpec(
        "pdf_write",
        "Create a new PDF at `path` from `blocks` (A4 pages). Text in any script an"
        " installed font covers (CJK through a Noto CJK font); a character no font has"
        " fails the call and nothing is written.",
        _obj({"path": _STR, "blocks": _BLOCKS, "title": _STR}, ["path", "blocks"]),
    ),
    ToolSpec(
        "pdf_watermark",
        "Stamp `text` diagonally across every page of the PDF at `path`, writing `output`"
        " (default: `path` itself).",
        _obj({"path": _STR, "text": _STR, "output": _STR}, ["path", "text"]),
    ),
    ToolSpec(
        "pdf_fill_form",
        "Fill the AcroForm fields of the PDF at `path` by field name and write `output`"
        " (default: `path` itself), with appearances drawn so any viewer shows the"
        " values. Checkboxes take true/false; radio groups a state name; list and combo"
        " boxes an option's value or label, a multi-select list box an array of them."
        " Without `values`, lists the fields, their types, current values and options.",
        _obj({"path": _STR, "values": {"type": "object"}, "output": _STR}, ["path"]),
    ),
    ToolSpec(
        "barcode_decode",
        "Decode every barcode in an image file (QR, Data Matrix, Aztec, PDF417, EAN/UPC,"
        " Code 128/39/93, ITF, Codabar …): format, text and corner positions.",
        _obj({"path": _STR}, ["path"]),
    ),
    ToolSpec(
        "view_image",
        "Look at an image file (PNG, JPEG, GIF or WebP): it is shown to you as an image,"
        " scaled down when larger than the model accepts.",
        _obj({"path": _STR}, ["path"]),
    ),
)}
