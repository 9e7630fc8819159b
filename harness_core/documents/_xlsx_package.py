"""An xlsx package as xlsx_edit patches it: its parts, its sheets by name, and the
workbook-level changes an edit may need (recalculate on open, no calculation chain).

Parts are read once into memory and written back member by member in their order,
each with its own compression; a part nobody replaced is written with the bytes it
had. Only the workbook part, its relationships and the content types are ever
rewritten here, each by replacing one element's text. It parses XML to read it, never
to write it.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from dataclasses import dataclass
from xml.etree import ElementTree

from openpyxl.formula.translate import Translator

from harness_core.documents._xlsx_dependents import Formula
from harness_core.documents._xlsx_sheetxml import Cell, SheetXml, Unpatchable

__all__ = ["BookIndex", "Workbook", "drop_calc_chain", "escape_text", "set_full_calc",
           "unescape", "zipped"]

_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_STRICT_REL_NS = "http://purl.oclc.org/ooxml/officeDocument/relationships"


@dataclass
class BookIndex:
    """What the workbook part says: its sheets (name -> worksheet part, chart sheets
    left out), their tab order, the active sheet and the defined names."""

    parts: dict[str, bytes]
    workbook_part: str
    sheets: dict[str, str]  # sheet name -> worksheet part
    order: list[str]  # sheet names in tab order
    active: str
    names: dict[str, list[str]]


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _rels_of(part: str) -> str:
    folder, name = posixpath.split(part)
    return posixpath.join(folder, "_rels", name + ".rels")


def _targets(parts: dict[str, bytes], part: str) -> dict[str, str]:
    """Relationship id -> the part it points to, for `part`."""
    rels = parts.get(_rels_of(part))
    if rels is None:
        return {}
    out: dict[str, str] = {}
    base = posixpath.dirname(part)
    for rel in ElementTree.fromstring(rels):
        target = rel.get("Target", "")
        if rel.get("TargetMode") == "External":
            continue
        path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(
            posixpath.join(base, target))
        out[rel.get("Id", "")] = path
    return out


def _is_worksheet(data: bytes) -> bool:
    return re.search(rb"<(?:\w+:)?sheetData\b", data) is not None


def index_book(parts: dict[str, bytes]) -> BookIndex:
    root_rels = _targets(parts, "")
    workbook_part = next((p for p in root_rels.values() if p in parts and
                          p.endswith(".xml") and "workbook" in p.rsplit("/", 1)[-1]),
                         "xl/workbook.xml")
    if workbook_part not in parts:
        raise Unpatchable("the package has no workbook part")
    rels = _targets(parts, workbook_part)
    root = ElementTree.fromstring(parts[workbook_part])
    sheets: dict[str, str] = {}
    order: list[str] = []
    names: dict[str, list[str]] = {}
    active = 0
    for element in root.iter():
        tag = _local(element.tag)
        if tag == "sheet":
            rid = element.get(f"{{{_REL_NS}}}id") or element.get(f"{{{_STRICT_REL_NS}}}id")
            name = element.get("name", "")
            order.append(name)
            if rid in rels and rels[rid] in parts and _is_worksheet(parts[rels[rid]]):
                sheets[name] = rels[rid]  # a chart or dialog sheet has no cells
        elif tag == "workbookView" and element.get("activeTab", "").isdigit():
            active = int(element.get("activeTab", "0"))
        elif tag == "definedName" and element.text:
            names.setdefault(element.get("name", "").upper(), []).append(element.text)
    if not order:
        raise Unpatchable("the workbook lists no sheets")
    return BookIndex(parts, workbook_part, sheets, order, order[min(active, len(order) - 1)],
                 names)


def unescape(text: str) -> str:
    import html

    return html.unescape(text)


def escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _item_text(item: ElementTree.Element) -> str:
    """A shared string's text: its `<t>` and its runs' `<t>`, not phonetic hints."""
    out: list[str] = []
    for child in item:
        if _local(child.tag) == "t":
            out.append(child.text or "")
        elif _local(child.tag) == "r":
            out.extend(t.text or "" for t in child if _local(t.tag) == "t")
    return "".join(out)


class Workbook:
    """The package's parts, parsed sheets and the replacements an edit makes."""

    def __init__(self, data: bytes) -> None:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            self.infos = archive.infolist()
            self.parts = {i.filename: archive.read(i) for i in self.infos if not i.is_dir()}
        self.book = index_book(self.parts)
        self.sheets = {name: SheetXml(self.parts[part], part)
                       for name, part in self.book.sheets.items()}
        self.removed: set[str] = set()
        self._strings: list[str] | None = None

    def formulas(self) -> list[Formula]:
        """Every formula cell of every sheet, shared formulas translated per cell."""
        out: list[Formula] = []
        for name, sheet in self.sheets.items():
            masters: dict[str, tuple[str, str]] = {}
            children: list[tuple[Cell, str]] = []
            for cell in sheet.formula_cells():
                found = cell.formula(sheet.prefix)
                if found is None:
                    continue
                attrs, text = found
                group = re.search(r'\bsi\s*=\s*"(\d+)"', attrs)
                if group is not None and not text.strip():
                    children.append((cell, group.group(1)))
                    continue
                if group is not None:
                    masters[group.group(1)] = (cell.ref, unescape(text))
                out.append(Formula(name, cell.row, cell.column, unescape(text)))
            for cell, si in children:
                out.append(Formula(name, cell.row, cell.column,
                                   self.translated(masters.get(si), cell.ref)))
        return out

    @staticmethod
    def translated(master: tuple[str, str] | None, ref: str) -> str | None:
        if master is None:
            return None
        try:
            moved: str = Translator("=" + master[1], origin=master[0]).translate_formula(ref)
            return moved[1:]
        except Exception:  # noqa: BLE001 - openpyxl raises anything on odd formulas;
            return None  # an untranslatable child then counts as reading every cell

    def shared_strings(self) -> list[str]:
        if self._strings is None:
            rels = _targets(self.parts, self.book.workbook_part)
            part = next((p for p in rels.values() if p.endswith("sharedStrings.xml")), None)
            self._strings = []
            if part is not None and part in self.parts:
                root = ElementTree.fromstring(self.parts[part])
                self._strings = [_item_text(si) for si in root]
        return self._strings

    def old_value(self, sheet: SheetXml, cell: Cell | None) -> object:
        """What the cell held, as xlsx_read would name it (dates as serial numbers)."""
        if cell is None:
            return None
        formula = cell.formula(sheet.prefix)
        if formula is not None and formula[1]:
            return "=" + unescape(formula[1])
        p = re.escape(sheet.prefix)
        kind = cell.attr("t") or "n"
        if kind == "inlineStr":
            return unescape("".join(re.findall(rf"<{p}t\b[^>]*>(.*?)</{p}t>", cell.inner,
                                                re.DOTALL)))
        stored = re.search(rf"<{p}v\b[^>]*>(.*?)</{p}v>", cell.inner, re.DOTALL)
        if stored is None:
            return None
        text = unescape(stored.group(1))
        if kind == "s":
            strings = self.shared_strings()
            return strings[int(text)] if text.isdigit() and int(text) < len(strings) else text
        if kind == "b":
            return text.strip() == "1"
        if kind in ("str", "e", "d"):
            return text
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if number.is_integer() and "." not in text and "E" not in \
            text.upper() else number


_AFTER_CALC = ("oleSize", "customWorkbookViews", "pivotCaches", "smartTagPr",
               "smartTagTypes", "webPublishing", "fileRecoveryPr", "webPublishObjects",
               "extLst")


def set_full_calc(book: Workbook) -> None:
    """`fullCalcOnLoad="1"` on the workbook's `<calcPr>` (added where it must go)."""
    part = book.book.workbook_part
    text = book.parts[part].decode("utf-8")
    found = re.search(r"<(\w+:)?calcPr\b([^>]*?)(/?)>", text)
    if found is not None:
        attrs = found.group(2)
        if re.search(r'\bfullCalcOnLoad\s*=\s*"(?:1|true)"', attrs):
            return
        attrs = re.sub(r'\s+fullCalcOnLoad\s*=\s*"[^"]*"', "", attrs)
        tag = f"<{found.group(1) or ''}calcPr{attrs} fullCalcOnLoad=\"1\"{found.group(3)}>"
        text = text[:found.start()] + tag + text[found.end():]
    else:
        root = re.search(r"<(\w+:)?workbook\b", text)
        prefix = (root.group(1) if root else None) or ""
        names = "|".join(_AFTER_CALC)
        after = re.search(rf"<{re.escape(prefix)}(?:{names})\b|</{re.escape(prefix)}workbook>",
                          text)
        if after is None:
            raise Unpatchable("the workbook part is not closed")
        text = text[:after.start()] + f'<{prefix}calcPr fullCalcOnLoad="1"/>' + \
            text[after.start():]
    book.parts[part] = text.encode("utf-8")


def drop_calc_chain(book: Workbook) -> None:
    """Remove the calculation chain part, its relationship and its content type."""
    part = book.book.workbook_part
    chain = next((t for t in _targets(book.parts, part).values()
                  if t.endswith("calcChain.xml")), None)
    if chain is None or chain not in book.parts:
        return
    book.removed.add(chain)
    rels = _rels_of(part)
    name = re.escape(posixpath.basename(chain))
    book.parts[rels] = re.sub(
        rf'<(\w+:)?Relationship\b[^>]*?Target\s*=\s*"[^"]*{name}"[^>]*?/>'.encode(), b"",
        book.parts[rels])
    types = "[Content_Types].xml"
    if types in book.parts:
        book.parts[types] = re.sub(
            rf'<(\w+:)?Override\b[^>]*?PartName\s*=\s*"/{re.escape(chain)}"[^>]*?/>'.encode(),
            b"", book.parts[types])


def zipped(book: Workbook) -> bytes:
    """The package again: members in their order, each with its own compression."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for info in book.infos:
            if info.filename in book.removed:
                continue
            copy = zipfile.ZipInfo(info.filename, info.date_time)
            copy.compress_type = info.compress_type
            copy.external_attr = info.external_attr
            copy.create_system = info.create_system
            archive.writestr(copy, b"" if info.is_dir() else book.parts[info.filename])
    return out.getvalue()
