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
    "description": "Each {`type`: heading (`text`, `level` 1-6) | paragraph (`text`) |"
                   " bullets or numbered (`items`: strings) | table (`rows`: arrays of cells,"
                   " header first) | page_break}.",
    "items": {"type": "object"},
}


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


DOCUMENT_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec(
        "xlsx_read",
        "Read an .xlsx: its sheets, then cells row by row. Optional `sheet`, A1 `range` (e.g."
        " `A1:D20`), `max_rows` per sheet (default 1000), `password`.",
        _obj({"path": _STR, "sheet": _STR, "range": _STR, "max_rows": _INT,
              "password": _STR}, ["path"]),
    ),
    ToolSpec(
        "xlsx_write",
        "Create an .xlsx at `path` from `sheets` ({`name`, `rows` of cell values}); a string"
        " starting `=` is a formula.",
        _obj({"path": _STR, "sheets": {"type": "array", "items": _obj(
            {"name": _STR, "rows": _ROWS}, ["rows"])}}, ["path", "sheets"]),
    ),
    ToolSpec(
        "xlsx_edit",
        "Set `cells` of an existing .xlsx, keeping everything else. `cells` maps `B2` or"
        " `Sheet2!B2` to a value (`=` starts a formula); `sheet` is the default sheet (else the"
        " active one). Writes `output` (default `path`). `password` opens an encrypted file,"
        " which stays encrypted.",
        _obj({"path": _STR, "cells": {"type": "object"}, "sheet": _STR, "output": _STR,
              "password": _STR}, ["path", "cells"]),
    ),
    ToolSpec(
        "docx_read",
        "Read a .docx in order: paragraphs with styles, tables, text boxes, content controls,"
        " tracked changes as [+ins+] [-del-], then headers, footers, notes, comments."
        " `password` opens a protected file.",
        _obj({"path": _STR, "password": _STR}, ["path"]),
    ),
    ToolSpec(
        "docx_write",
        "Create a .docx at `path` from `blocks`.",
        _obj({"path": _STR, "blocks": _BLOCKS}, ["path", "blocks"]),
    ),
    ToolSpec(
        "pptx_read",
        "Read a .pptx slide by slide: text, tables, picture alt text, speaker notes."
        " `password` opens a protected file.",
        _obj({"path": _STR, "password": _STR}, ["path"]),
    ),
    ToolSpec(
        "pdf_read",
        "Read a PDF's text page by page; `pages` like `1-3,7` (1-based). Time-limited; scanned"
        " pages are not read.",
        _obj({"path": _STR, "pages": _STR}, ["path"]),
    ),
    ToolSpec(
        "pdf_write",
        "Create an A4 PDF at `path` from `blocks`. A character no installed font has fails the"
        " call; nothing is written.",
        _obj({"path": _STR, "blocks": _BLOCKS, "title": _STR}, ["path", "blocks"]),
    ),
    ToolSpec(
        "pdf_watermark",
        "Stamp `text` diagonally on every page of the PDF at `path`, writing `output`"
        " (default `path`).",
        _obj({"path": _STR, "text": _STR, "output": _STR}, ["path", "text"]),
    ),
    ToolSpec(
        "pdf_fill_form",
        "Fill the PDF's AcroForm fields by name from `values`, writing `output` (default `path`)."
        " Checkbox: true/false; radio: a state name; list/combo: an option's value or label"
        " (multi-select: an array). Without `values`, lists the fields.",
        _obj({"path": _STR, "values": {"type": "object"}, "output": _STR}, ["path"]),
    ),
    ToolSpec(
        "barcode_decode",
        "Decode every barcode in an image (QR, Data Matrix, Aztec, PDF417, EAN/UPC,"
        " Code 128/39/93, ITF, Codabar etc.).",
        _obj({"path": _STR}, ["path"]),
    ),
    ToolSpec(
        "view_image",
        "Look at an image file (PNG, JPEG, GIF, WebP), scaled down if too large.",
        _obj({"path": _STR}, ["path"]),
    ),
)}
