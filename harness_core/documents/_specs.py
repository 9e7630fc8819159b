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
        " `max_rows` rows per sheet (default 1000).",
        _obj({"path": _STR, "sheet": _STR, "range": _STR, "max_rows": _INT}, ["path"]),
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
        " (default: `path` itself).",
        _obj({"path": _STR, "cells": {"type": "object"}, "sheet": _STR, "output": _STR},
             ["path", "cells"]),
    ),
    ToolSpec(
        "docx_read",
        "Read a .docx document in order: paragraphs with their style names, tables, and"
        " the header and footer text of each section.",
        _obj({"path": _STR}, ["path"]),
    ),
    ToolSpec(
        "docx_write",
        "Create a new .docx document at `path` from `blocks`.",
        _obj({"path": _STR, "blocks": _BLOCKS}, ["path", "blocks"]),
    ),
    ToolSpec(
        "pptx_read",
        "Read a .pptx presentation slide by slide, in order: each slide's text, tables"
        " and speaker notes.",
        _obj({"path": _STR}, ["path"]),
    ),
    ToolSpec(
        "pdf_read",
        "Extract the text of a PDF, page by page. Optional `pages` such as `1-3,7`"
        " (1-based). Extraction stops after a time limit.",
        _obj({"path": _STR, "pages": _STR}, ["path"]),
    ),
    ToolSpec(
        "pdf_write",
        "Create a new PDF at `path` from `blocks` (A4 pages).",
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
        " values. Checkboxes take true/false. Without `values`, lists the fields, their"
        " types, current values and options.",
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
