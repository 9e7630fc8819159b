"""Choice fields (list and combo boxes) of pdf_fill_form: options, values, appearances.

An option may be a string or an [export, display] pair (the pdf.js and Acrobat forms
use pairs); a list box may allow several selections (/Ff bit 22), whose value is an
array. pypdf's appearance generator joins the options as strings and fails on pairs,
so a choice field's value (/V, and /I for a list box) and its appearance stream are
written here: a combo box shows the chosen option's display text, a list box every
option with the chosen ones highlighted.
"""

from __future__ import annotations

import re
from typing import Any

from pypdf import PdfWriter
from pypdf.generic import (
    ArrayObject,
    DictionaryObject,
    NameObject,
    NumberObject,
    StreamObject,
    TextStringObject,
)

__all__ = ["choice_info", "choice_value", "fill_choices"]

_COMBO = 1 << 17
_EDIT = 1 << 18
_MULTI = 1 << 21
_HIGHLIGHT = "0.60 0.75 0.85 rg"


def _options(field: Any) -> list[tuple[str, str]]:
    """(export, display) of each option (a plain option is both)."""
    out: list[tuple[str, str]] = []
    for option in field.get("/Opt") or []:
        option = option.get_object() if hasattr(option, "get_object") else option
        if isinstance(option, list) and option:
            out.append((str(option[0]), str(option[-1])))
        else:
            out.append((str(option), str(option)))
    return out


def _flags(field: Any) -> int:
    return int(field.get("/Ff", 0))


def choice_info(field: Any) -> dict[str, Any]:
    """What the listing shows of a choice field: kind, options, value (a list when
    several may be chosen)."""
    flags = _flags(field)
    options = _options(field)
    value = field.get("/V")
    multi = bool(flags & _MULTI)
    if isinstance(value, list):
        shown: Any = [str(v) for v in value]
    else:
        shown = None if value in (None, "") else str(value)
    if multi and isinstance(shown, str):
        shown = [shown]
    info: dict[str, Any] = {
        "type": "combo" if flags & _COMBO else "list", "value": shown,
        "options": [e if e == d else {"value": e, "label": d} for e, d in options]}
    if multi:
        info["multi_select"] = True
    if flags & _EDIT:
        info["editable"] = True
    return info


def choice_value(info: dict[str, Any], field: Any, value: Any) -> list[str]:
    """The export values `value` selects (a string, or a list for a multi-select box);
    an option's display text is accepted for its export value.

    Raises:
        ValueError: A value that is not an option (unless the combo box is editable).
    """
    wanted = value if isinstance(value, list) else [value]
    if len(wanted) > 1 and not info.get("multi_select"):
        raise ValueError(f"field {info['name']!r} takes one option, not a list")
    options = _options(field)
    chosen: list[str] = []
    for item in wanted:
        if not isinstance(item, (str, int, float)) or isinstance(item, bool):
            raise ValueError(f"field {info['name']!r} takes option values (strings)")
        text = str(item)
        match = next((e for e, d in options if text in (e, d)), None)
        if match is None and not info.get("editable"):
            names = [e if e == d else f"{e} ({d})" for e, d in options]
            raise ValueError(f"field {info['name']!r} has no option {text!r}; options:"
                             f" {names}")
        chosen.append(match if match is not None else text)
    return chosen


def _font(annotation: Any, field: Any, form: Any) -> tuple[str, float]:
    found = re.search(r"/([^\s/]+)\s+([\d.]+)\s+Tf", str(annotation.get("/DA")
                                                         or field.get("/DA")
                                                         or form.get("/DA") or ""))
    name, size = (found.group(1), float(found.group(2))) if found else ("Helv", 0.0)
    return name, size or 10.0


def _escape(text: str) -> str:
    safe = text.encode("latin-1", "replace").decode("latin-1")
    return safe.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _appearance(writer: PdfWriter, annotation: Any, field: Any, chosen: list[str],
                form: Any) -> None:
    x0, y0, x1, y1 = (float(v) for v in annotation["/Rect"])
    width, height = abs(x1 - x0), abs(y1 - y0)
    font, size = _font(annotation, field, form)
    options = _options(field)
    if _flags(field) & _COMBO:
        label = next((d for e, d in options if e == chosen[0]), chosen[0]) if chosen else ""
        lines = [(label, False)]
    else:
        lines = [(d, e in chosen) for e, d in options]
    step = size * 1.15
    ops = ["/Tx BMC", "q", f"0 0 {width:.2f} {height:.2f} re W n"]
    for row, (label, selected) in enumerate(lines):
        top = height - 1 - row * step
        if selected:
            ops.append(f"{_HIGHLIGHT} 1 {top - step:.2f} {width - 2:.2f} {step:.2f} re f")
        baseline = top - size if len(lines) > 1 else (height - size) / 2 + size * 0.22
        ops.append(f"BT /{font} {size:g} Tf 0 g 2 {baseline:.2f} Td ({_escape(label)}) Tj ET")
    ops += ["Q", "EMC"]
    stream = StreamObject()
    stream.set_data("\n".join(ops).encode("latin-1"))
    fonts = form.get("/DR", {}).get_object().get("/Font", DictionaryObject())
    stream.update({
        NameObject("/Type"): NameObject("/XObject"), NameObject("/Subtype"): NameObject("/Form"),
        NameObject("/BBox"): ArrayObject([NumberObject(0), NumberObject(0),
                                          NumberObject(round(width)),
                                          NumberObject(round(height))]),
        NameObject("/Resources"): DictionaryObject({NameObject("/Font"): fonts}),
    })
    annotation[NameObject("/AP")] = DictionaryObject({NameObject("/N"):
                                                      writer._add_object(stream)})


def fill_choices(writer: PdfWriter, values: dict[str, list[str]]) -> None:
    """Set each named choice field's value and draw each of its widgets."""
    form = writer.root_object["/AcroForm"].get_object()
    for page in writer.pages:
        for ref in page.get("/Annots") or []:
            annotation = ref.get_object()
            if annotation.get("/Subtype") != "/Widget":
                continue
            field = annotation if "/T" in annotation else annotation["/Parent"].get_object()
            name = _qualified(field)
            if name not in values:
                continue
            chosen = values[name]
            _set_value(field, chosen)
            _appearance(writer, annotation, field, chosen, form)


def _qualified(field: Any) -> str:
    parts: list[str] = []
    while field is not None:
        if "/T" in field:
            parts.append(str(field["/T"]))
        parent = field.get("/Parent")
        field = parent.get_object() if parent is not None else None
    return ".".join(reversed(parts))


def _set_value(field: Any, chosen: list[str]) -> None:
    if _flags(field) & _MULTI:
        field[NameObject("/V")] = ArrayObject(TextStringObject(v) for v in chosen)
    else:
        field[NameObject("/V")] = TextStringObject(chosen[0] if chosen else "")
    exports = [e for e, _ in _options(field)]
    indexes = sorted(exports.index(v) for v in chosen if v in exports)
    if indexes and not _flags(field) & _COMBO:
        field[NameObject("/I")] = ArrayObject(NumberObject(i) for i in indexes)
    elif "/I" in field:
        del field["/I"]
