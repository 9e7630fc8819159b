"""xlsx_edit's lossless write: the named cells patched into the workbook's own XML.

Loading and saving a workbook through openpyxl rewrites every part: floats lose their
last digits (15 significant), formulas lose their cached results, and what openpyxl
does not model is dropped. Here the package is copied member by member and only these
change:
- the worksheet parts holding an edited cell: that cell's element, and the cached
  result (`<v>`) of each formula cell that depends on an edited cell
  (`_xlsx_dependents`); a shared formula whose master cell is overwritten has its
  other cells written out as plain formulas; `<dimension>` grows to a new cell;
- `xl/workbook.xml`: `fullCalcOnLoad="1"` on `<calcPr>` when a cached result was
  dropped or a formula written, so Excel and LibreOffice recalculate on open;
- `xl/calcChain.xml` (with its relationship and content type) is removed when a formula
  cell is added or overwritten: Excel "repairs" a workbook whose chain names a cell that
  holds no formula, and rebuilds the chain itself.
Strings are written inline (`t="inlineStr"`), so the shared string table stays as it
was. Every other part's bytes, and every other byte of a patched part, stay identical.
"""

from __future__ import annotations

import io
import math
import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from xml.etree import ElementTree

from openpyxl.formula.translate import Translator

from harness_core.documents._xlsx_dependents import Formula, dependents
from harness_core.documents._xlsx_sheetxml import (
    Cell,
    SheetXml,
    Unpatchable,
    cell_element,
    parse_coordinate,
)

__all__ = ["Patched", "Unpatchable", "patch_cells"]

_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_STRICT_REL_NS = "http://purl.oclc.org/ooxml/officeDocument/relationships"


@dataclass
class Patched:
    """The new package and what the edit did."""

    data: bytes
    changes: list[dict[str, object]]
    stale: list[str] = field(default_factory=list)
    """Formula cells (``Sheet!C4``) whose cached results were dropped."""
    recalc: bool = False
    """`fullCalcOnLoad` was set."""


@dataclass
class _Book:
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


def _book(parts: dict[str, bytes]) -> _Book:
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
    return _Book(parts, workbook_part, sheets, order, order[min(active, len(order) - 1)],
                 names)


def _target(ref: str, default: str, book: _Book) -> tuple[str, str]:
    sheet, bang, cell = ref.rpartition("!")
    sheet = sheet.strip("'").replace("''", "'") if bang else default
    if sheet not in book.order:
        raise LookupError(f"no sheet {sheet!r}; sheets: {', '.join(book.order)}")
    if sheet not in book.sheets:
        raise LookupError(f"{sheet!r} is a chart sheet, it has no cells")
    cell = cell.replace("$", "").upper()
    parse_coordinate(cell)  # raises ValueError for a bad reference
    return sheet, cell


def _in_ranges(row: int, column: int, ranges: list[str]) -> str | None:
    """The range (`A1:B2`) holding the cell other than as its top-left corner."""
    for text in ranges:
        first, _, last = text.partition(":")
        try:
            r1, c1 = parse_coordinate(first)
            r2, c2 = parse_coordinate(last or first)
        except ValueError:
            continue
        if r1 <= row <= r2 and c1 <= column <= c2 and (row, column) != (r1, c1):
            return text
    return None


def _check_value(value: object) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("a cell value must be a finite number")
    if value is not None and not isinstance(value, (str, int, float, bool)):
        raise ValueError("a cell value must be a string, number, boolean or null")


def _array_ranges(sheet: SheetXml) -> list[str]:
    """The ranges of array and data-table formulas (one formula over many cells)."""
    found: list[str] = []
    for cell in sheet.formula_cells():
        formula = cell.formula(sheet.prefix)
        if formula is not None and re.search(r'\bt\s*=\s*"(?:array|dataTable)"',
                                             formula[0]):
            ref = re.search(r'\bref\s*=\s*"([^"]+)"', formula[0])
            if ref is not None and ":" in ref.group(1):
                found.append(ref.group(1))
    return found


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)


def _escape_text(text: str) -> str:
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


class _Workbook:
    """The package's parts, parsed sheets and the replacements an edit makes."""

    def __init__(self, data: bytes) -> None:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            self.infos = archive.infolist()
            self.parts = {i.filename: archive.read(i) for i in self.infos if not i.is_dir()}
        self.book = _book(self.parts)
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
                    masters[group.group(1)] = (cell.ref, _unescape(text))
                out.append(Formula(name, cell.row, cell.column, _unescape(text)))
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
            return "=" + _unescape(formula[1])
        p = re.escape(sheet.prefix)
        kind = cell.attr("t") or "n"
        if kind == "inlineStr":
            return _unescape("".join(re.findall(rf"<{p}t\b[^>]*>(.*?)</{p}t>", cell.inner,
                                                re.DOTALL)))
        stored = re.search(rf"<{p}v\b[^>]*>(.*?)</{p}v>", cell.inner, re.DOTALL)
        if stored is None:
            return None
        text = _unescape(stored.group(1))
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


def _without_cached(sheet: SheetXml, cell: Cell, text: str | None) -> str:
    """The cell's element (or its rewritten `text`) without `<v>` and its type."""
    element = text if text is not None else sheet.text[cell.start:cell.end]
    p = re.escape(sheet.prefix)
    head_end = element.index(">")
    head, rest = element[:head_end], element[head_end:]
    head = re.sub(r'\s+t\s*=\s*"[^"]*"', "", head)
    rest = re.sub(rf"<{p}v\b[^>]*?(?:/>|>.*?</{p}v>)", "", rest, flags=re.DOTALL)
    return head + rest


def _style(sheet: SheetXml, cell: Cell | None, ref: str) -> str:
    """The style attribute a written cell keeps: its own, else its row's or column's."""
    if cell is not None:
        own = cell.attr("s")
        return f' s="{own}"' if own else ""
    row, column = parse_coordinate(ref)
    element = sheet.row(row)
    if element is not None and re.search(r'\bcustomFormat\s*=\s*"(?:1|true)"',
                                         element.attrs):
        found = re.search(r'(?:^|\s)s\s*=\s*"(\d+)"', element.attrs)
        if found:
            return f' s="{found.group(1)}"'
    p = re.escape(sheet.prefix)
    for attrs in re.findall(rf"<{p}col\b([^>]*?)/?>", sheet.text):
        bounds = re.search(r'\bmin\s*=\s*"(\d+)".*?\bmax\s*=\s*"(\d+)"', attrs)
        style = re.search(r'\bstyle\s*=\s*"(\d+)"', attrs)
        if bounds and style and int(bounds.group(1)) <= column <= int(bounds.group(2)):
            return f' s="{style.group(1)}"'
    return ""


def patch_cells(data: bytes, cells: dict[str, object], sheet: str | None) -> Patched:
    """`data` (an xlsx package) with `cells` set and nothing else changed but what the
    module docstring lists.

    Args:
        data: The workbook's zip bytes (decrypted, zip-guarded).
        cells: ``B2`` or ``Sheet2!B2`` to a value; a string starting with ``=`` is a
            formula.
        sheet: The sheet of references without one (None: the active sheet).

    Raises:
        LookupError: A sheet that is not there, or a cell inside a merged range or an
            array formula (nothing is written).
        ValueError: A bad cell reference or value.
        Unpatchable: The package cannot be patched in place.
    """
    try:
        book = _Workbook(data)
    except ElementTree.ParseError as exc:
        raise ValueError(f"not a valid xlsx file: a part is not well-formed XML ({exc})"
                         ) from None
    default = sheet or book.book.active
    targets: dict[str, dict[str, object]] = {}
    for ref, value in cells.items():
        name, coord = _target(ref, default, book.book)
        _check_value(value)
        targets.setdefault(name, {})[coord] = value
    changes, formula_changed, stale = _apply(book, targets)
    recalc = bool(stale) or any(isinstance(v, str) and v.startswith("=") and len(v) > 1
                                for t in targets.values() for v in t.values())
    for name, xml in book.sheets.items():
        if xml.changed:
            book.parts[book.book.sheets[name]] = xml.render()
    if recalc:
        _set_full_calc(book)
    if formula_changed:
        _drop_calc_chain(book)
    return Patched(_zip(book), changes, stale, recalc)


_Texts = dict[tuple[str, str], str]


def _apply(book: _Workbook, targets: dict[str, dict[str, object]]
           ) -> tuple[list[dict[str, object]], bool, list[str]]:
    """Write each edited cell; drop the cached results that depend on one. Returns the
    changes, whether a formula cell was added or overwritten, and the stale cells."""
    changes: list[dict[str, object]] = []
    formula_changed = False
    texts: _Texts = {}
    edited: set[tuple[str, int, int]] = set()
    for name, wanted in targets.items():
        xml = book.sheets[name]
        merged, arrays = xml.ranges("mergeCell"), _array_ranges(xml)
        new: dict[str, str] = {}
        for coord, value in wanted.items():
            row, column = parse_coordinate(coord)
            if inside := _in_ranges(row, column, merged):
                raise LookupError(f"{name}!{coord} is inside the merged range {inside}; set"
                                  " its top-left cell instead")
            if inside := _in_ranges(row, column, arrays):
                raise LookupError(f"{name}!{coord} is inside the array formula over"
                                  f" {inside}; set its first cell instead")
            cell = xml.cell(coord)
            had_formula = cell is not None and cell.formula(xml.prefix) is not None
            formula_changed |= had_formula or (isinstance(value, str)
                                               and value.startswith("=") and len(value) > 1)
            element = cell_element(coord, _style(xml, cell, coord), value, xml.prefix)
            if cell is None:
                new[coord] = element
            else:
                texts[(name, coord)] = element
                if had_formula:
                    _unshare(book, name, cell, texts, wanted)
            edited.add((name, row, column))
            changes.append({"sheet": name, "cell": coord,
                            "old": book.old_value(xml, cell), "new": value})
        if new:
            xml.insert(new)
            xml.set_dimension(list(new))
    stale = _drop_stale(book, edited, texts)
    for (name, ref), text in texts.items():
        xml = book.sheets[name]
        found = xml.cell(ref)
        if found is not None:
            xml.replace(found, text)
    return changes, formula_changed, stale


def _drop_stale(book: _Workbook, edited: set[tuple[str, int, int]], texts: _Texts
                ) -> list[str]:
    from openpyxl.utils import get_column_letter

    stale: list[str] = []
    for formula in dependents(book.formulas(), edited, book.book.names,
                                  book.book.order):
        xml = book.sheets[formula.sheet]
        key = (formula.sheet, f"{get_column_letter(formula.column)}{formula.row}")
        cell = xml.cell(key[1])
        if cell is None or not re.search(rf"<{re.escape(xml.prefix)}v\b", cell.inner):
            continue  # no cached result: nothing stale
        texts[key] = _without_cached(xml, cell, texts.get(key))
        stale.append(f"{key[0]}!{key[1]}")
    return stale


def _unshare(book: _Workbook, name: str, master: Cell, texts: _Texts,
             wanted: dict[str, object]) -> None:
    """A shared formula's master is overwritten: its other cells get their own formula."""
    xml = book.sheets[name]
    found = master.formula(xml.prefix)
    if found is None or not found[1].strip():
        return
    si = re.search(r'\bt\s*=\s*"shared"[^>]*?\bsi\s*=\s*"(\d+)"|'
                   r'\bsi\s*=\s*"(\d+)"[^>]*?\bt\s*=\s*"shared"', found[0])
    if si is None:
        return
    group = si.group(1) or si.group(2)
    p = re.escape(xml.prefix)
    for cell in xml.formula_cells():
        own = cell.formula(xml.prefix)
        if cell.ref in wanted or own is None or own[1].strip() or \
                not re.search(rf'\bsi\s*=\s*"{group}"', own[0]):
            continue
        text = book.translated((master.ref, _unescape(found[1])), cell.ref)
        if text is None:
            raise Unpatchable(f"the shared formula of {name}!{master.ref} cannot be written"
                              f" out for {cell.ref}")
        element = texts.get((name, cell.ref), xml.text[cell.start:cell.end])
        own_f = f"<{xml.prefix}f>{_escape_text(text)}</{xml.prefix}f>"
        old_f = re.search(rf"<{p}f\b[^>]*?(?:/>|>\s*</{p}f>)", element)
        if old_f is not None:
            texts[(name, cell.ref)] = element[:old_f.start()] + own_f + element[old_f.end():]


_AFTER_CALC = ("oleSize", "customWorkbookViews", "pivotCaches", "smartTagPr",
               "smartTagTypes", "webPublishing", "fileRecoveryPr", "webPublishObjects",
               "extLst")


def _set_full_calc(book: _Workbook) -> None:
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


def _drop_calc_chain(book: _Workbook) -> None:
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


def _zip(book: _Workbook) -> bytes:
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
