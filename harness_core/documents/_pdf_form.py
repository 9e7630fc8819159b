"""pdf_fill_form over pypdf (the `pdf` extra): list AcroForm fields, or fill them by name.

Filling writes each value and regenerates the widget's appearance stream (pypdf's
``update_page_form_field_values``), and also sets ``/NeedAppearances`` so a viewer that
prefers to redraw fields does so. The poppler test renders the result to prove the
values are really drawn.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from pypdf import PdfReader, PdfWriter
from pypdf.generic import DictionaryObject, NameObject

from harness_core.documents._common import failed, opt_str, read_input, write_output
from harness_core.errors import InvalidToolArguments
from harness_core.tool_data import DocumentRead
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.tools._support import bounded, req_str

__all__ = ["fill_form", "form_fields"]

logging.getLogger("pypdf").setLevel(logging.ERROR)

_TYPES = {"/Tx": "text", "/Btn": "button", "/Ch": "choice", "/Sig": "signature"}


def _field_info(name: str, field: Any) -> dict[str, Any]:
    kind = _TYPES.get(str(field.get("/FT")), "unknown")
    states = [str(s) for s in field.get("/_States_", [])]
    info: dict[str, Any] = {"name": name, "type": kind}
    if kind == "button":
        info["type"] = "checkbox" if len(states) <= 2 else "radio"
        info["states"] = [s.lstrip("/") for s in states if s != "/Off"]
    value = field.get("/V")
    info["value"] = None if value is None else str(value).lstrip("/") if kind == "button" \
        else str(value)
    options = field.get("/Opt")
    if options:
        info["options"] = [str(o[-1]) if isinstance(o, list) else str(o) for o in options]
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


def _values(fields: list[dict[str, Any]], wanted: dict[str, Any]) -> dict[str, Any]:
    by_name = {f["name"]: f for f in fields}
    unknown = [name for name in wanted if name not in by_name]
    if unknown:
        raise ValueError(f"no field named {', '.join(map(repr, unknown))}; fields: "
                         f"{', '.join(by_name) or '(none)'}")
    out: dict[str, Any] = {}
    for name, value in wanted.items():
        info = by_name[name]
        if info["type"] in ("checkbox", "radio"):
            out[name] = _button_value(info, value)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            out[name] = str(value)
        else:
            raise ValueError(f"field {name!r} takes a string or a number")
    return out


def _listing(rel: str, fields: list[dict[str, Any]]) -> str:
    if not fields:
        return f"{rel} has no form fields"
    lines = [f"{rel}: {len(fields)} form field(s)"]
    for f in fields:
        extra = f" states={f['states']}" if "states" in f else ""
        extra += f" options={f['options']}" if "options" in f else ""
        lines.append(f"- {f['name']} ({f['type']}) = {f['value']!r}{extra}")
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
    if not wanted:
        shown, _ = bounded(_listing(rel, fields), ctx.output_cap)
        return ToolOutcome(output=shown, data=DocumentRead(rel, {"fields": fields}))
    try:
        values = _values(fields, wanted)
    except ValueError as exc:
        return failed(f"pdf_fill_form: {exc}; nothing written")
    writer = PdfWriter(clone_from=reader)
    writer.update_page_form_field_values(None, values, auto_regenerate=False)
    writer.set_need_appearances_writer(True)
    _ensure_fonts(writer)
    buffer = io.BytesIO()
    writer.write(buffer)
    return write_output(ctx, output, buffer.getvalue(), "pdf_fill_form",
                        f"filled {len(values)} field(s) of {rel}",
                        {"filled": sorted(values)})
