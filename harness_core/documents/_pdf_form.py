"""pdf_fill_form over pypdf (the `pdf` extra): list AcroForm fields, or fill them by name.

The file is written as an incremental update (`_pdf_update`): the original bytes stay
as they were, and the changed objects follow them. Filling writes each value and the widget's appearance stream: pypdf's
``update_page_form_field_values`` for text fields and buttons (a radio group's chosen
widget gets its on state), `_pdf_choice` for list and combo boxes (option pairs,
multi-select). The document's ``/NeedAppearances`` flag is left as it was: set, it makes
poppler redraw every field itself, and its redraw of radio buttons draws no dot. The
poppler tests render the result to prove the values are really drawn.
"""

from __future__ import annotations

import io
import json
import logging
from typing import Any

from pypdf import PdfReader, PdfWriter
from pypdf.generic import DictionaryObject, NameObject

from harness_core.documents._common import failed, opt_str, read_input, write_output
from harness_core.documents._pdf_choice import choice_info, choice_value, fill_choices
from harness_core.documents._pdf_update import (
    KEPT_NOTE,
    REWRITTEN_NOTE,
    incremental_writer,
    written,
)
from harness_core.errors import InvalidToolArguments
from harness_core.tool_data import DocumentRead
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import bounded, req_str

__all__ = ["fill_form", "form_fields"]

logging.getLogger("pypdf").setLevel(logging.ERROR)

_TYPES = {"/Tx": "text", "/Btn": "button", "/Ch": "choice", "/Sig": "signature"}


_RADIO = 1 << 15
_PUSH = 1 << 16


def _field_info(name: str, field: Any) -> dict[str, Any]:
    kind = _TYPES.get(str(field.get("/FT")), "unknown")
    info: dict[str, Any] = {"name": name, "type": kind}
    if kind == "choice":
        info.update(choice_info(field))
        return info
    value = field.get("/V")
    info["value"] = None if value is None else str(value)
    if kind == "button":
        flags = int(field.get("/Ff", 0))
        info["type"] = "radio" if flags & _RADIO else "pushbutton" if flags & _PUSH \
            else "checkbox"
        states = [str(s) for s in field.get("/_States_", [])]
        info["states"] = [s.lstrip("/") for s in states if s != "/Off"]
        info["value"] = None if value is None else str(value).lstrip("/")
    return info


def form_fields(reader: PdfReader) -> list[dict[str, Any]]:
    """Every terminal AcroForm field: name, type, value, and states or options."""
    fields = reader.get_fields() or {}
    return [_field_info(name, field) for name, field in fields.items() if "/FT" in field]


def _button_value(info: dict[str, Any], value: Any) -> str:
    states: list[str] = info.get("states", [])
    if isinstance(value, bool):
        if not value:
            return "/Off"
        if not states:
            raise ValueError(f"checkbox {info['name']!r} has no on state")
        return "/" + states[0]
    text = str(value).lstrip("/")
    if text == "Off" or text in states:
        return "/" + text
    raise ValueError(f"field {info['name']!r} takes true/false or one of {states}")


def _values(fields: list[dict[str, Any]], wanted: dict[str, Any], raw: dict[str, Any]
            ) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The values pypdf fills (text, buttons) and the choice fields' export values."""
    by_name = {f["name"]: f for f in fields}
    unknown = [name for name in wanted if name not in by_name]
    if unknown:
        raise ValueError(f"no field named {', '.join(map(repr, unknown))}; fields: "
                         f"{', '.join(by_name) or '(none)'}")
    out: dict[str, Any] = {}
    choices: dict[str, list[str]] = {}
    for name, value in wanted.items():
        info = by_name[name]
        if info["type"] in ("checkbox", "radio"):
            out[name] = _button_value(info, value)
        elif info["type"] in ("combo", "list"):
            choices[name] = choice_value(info, raw[name], value)
        elif info["type"] in ("pushbutton", "signature"):
            raise ValueError(f"field {name!r} is a {info['type']} and holds no value")
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            out[name] = str(value)
        else:
            raise ValueError(f"field {name!r} takes a string or a number")
    return out, choices


def _listing(rel: str, fields: list[dict[str, Any]]) -> str:
    if not fields:
        return f"{rel} has no form fields"
    lines = [f"{rel}: {len(fields)} form field(s)"]
    for f in fields:
        extra = f" states={json.dumps(f['states'])}" if "states" in f else ""
        extra += f" options={json.dumps(f['options'], ensure_ascii=False)}" \
            if "options" in f else ""
        extra += " (several may be chosen: pass a list)" if f.get("multi_select") else ""
        lines.append(f"- {f['name']} ({f['type']}) ="
                     f" {json.dumps(f['value'], ensure_ascii=False)}{extra}")
    return "\n".join(lines)


# Fonts a field's /DA may name by these short names without /DR defining them (LibreOffice
# omits ZaDb, the check mark font); a viewer that redraws the field then draws nothing.
_STANDARD_FONTS = {"/ZaDb": "/ZapfDingbats", "/Helv": "/Helvetica"}


def _dictionary(value: Any) -> DictionaryObject:
    found = value.get_object()
    if not isinstance(found, DictionaryObject):
        raise ValueError("the form's resources are not a dictionary")
    return found


def _ensure_fonts(writer: PdfWriter) -> None:
    form = _dictionary(writer.root_object["/AcroForm"])
    if "/DR" not in form:
        form[NameObject("/DR")] = DictionaryObject()
    resources = _dictionary(form["/DR"])
    if "/Font" not in resources:
        resources[NameObject("/Font")] = DictionaryObject()
    fonts = _dictionary(resources["/Font"])
    for short, base in _STANDARD_FONTS.items():
        if short not in fonts:
            fonts[NameObject(short)] = writer._add_object(DictionaryObject({
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject(base),
            }))


def fill_form(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "pdf_fill_form")
    wanted = args.get("values")
    if wanted is not None and not isinstance(wanted, dict):
        raise InvalidToolArguments("pdf_fill_form: `values` must map field names to values")
    output = opt_str(args, "output", "pdf_fill_form") or path
    got = read_input(ctx, path, "pdf_fill_form")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        return failed(f"pdf_fill_form: {rel} is encrypted with a password")
    fields = form_fields(reader)
    raw = reader.get_fields() or {}
    if not wanted:
        shown, _ = bounded(_listing(rel, fields), ctx.output_cap)
        return ToolOutcome(output=shown, data=DocumentRead(rel, {"fields": fields}))
    try:
        values, choices = _values(fields, wanted, raw)
    except ValueError as exc:
        return failed(f"pdf_fill_form: {exc}; nothing written")
    writer = incremental_writer(data, reader)
    _ensure_fonts(writer)
    if values:
        writer.update_page_form_field_values(None, values, auto_regenerate=False)
    fill_choices(writer, choices)
    saved = written(writer)
    kept = saved[:len(data)] == data
    return write_output(ctx, output, saved, "pdf_fill_form",
                        f"filled {len(values) + len(choices)} field(s) of {rel}"
                        + (KEPT_NOTE if kept else REWRITTEN_NOTE),
                        {"filled": sorted([*values, *choices]), "incremental": kept})
