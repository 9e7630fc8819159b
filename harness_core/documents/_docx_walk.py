"""The text of a Word part, walked once over its XML: nothing the author wrote is dropped.

python-docx's paragraph API skips tracked insertions (`w:ins`), content controls
(`w:sdt`), text boxes (`w:txbxContent`) and notes, and some of its lookups are
quadratic on large tables. This walker reads the element tree python-docx parsed (with
its safe parser) in one pass: runs, tracked insertions as ``[+text+]`` and deletions as
``[-text-]`` (moves too), hyperlinks, fields' results, inline and block content controls,
text boxes (the DrawingML choice of an `mc:AlternateContent`, never its VML fallback as
well), equations, tables, hyperlinks with their targets (``[text](https://…)``), and
note/comment references as ``[^1]``/``[^i]``/``[c1]`` (a note's custom mark as itself,
``[^*]``).
What has no text (a picture without alt text, a chart, an embedded object) is counted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = ["W", "Walker", "block_lines", "plain", "render_blocks"]

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_WP = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_CHART = "http://schemas.openxmlformats.org/drawingml/2006/chart"
_DIAGRAM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
_PIC = "http://schemas.openxmlformats.org/drawingml/2006/picture"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_O = "{urn:schemas-microsoft-com:office:office}"
# A HYPERLINK field to an address (not `\l`, a place in the document such as a TOC entry).
_FIELD_LINK = re.compile(r'\s*HYPERLINK\s+"([^"]+)"')

# Inline wrappers whose children are read as if they were the paragraph's own.
_PASS_THROUGH = {W + "hyperlink", W + "smartTag", W + "customXml", W + "fldSimple",
                 W + "bdo", W + "dir", W + "r"}
_MARKS = {W + "ins": ("[+", "+]", "insertions"), W + "moveTo": ("[+", "+]", "insertions"),
          W + "del": ("[-", "-]", "deletions"), W + "moveFrom": ("[-", "-]", "deletions")}
_RUN_TEXT = {W + "t": None, W + "delText": None, W + "tab": "\t", W + "br": "\n",
             W + "cr": "\n", W + "noBreakHyphen": "-", W + "softHyphen": ""}


_FILE_NAME = re.compile(r"[\w\-. ]+\.(?:png|jpe?g|gif|bmp|tiff?|emf|wmf|svg|webp)",
                        re.IGNORECASE)


def _local(tag: Any) -> str:
    return str(tag).rpartition("}")[2]


class Walker:
    """Walks the parts of one document; `counts` tallies what was found (tracked
    changes, content controls, text boxes) and what could not be read (pictures,
    charts, embedded objects)."""

    def __init__(self, style_name: Callable[[str | None], str]) -> None:
        self.style_name = style_name
        self.counts: Counter[str] = Counter()
        # Note ids in the order their references appear, numbered as Word shows them:
        # footnotes 1, 2, 3; endnotes i, ii, iii (the defaults of Word and LibreOffice).
        self.numbers: dict[str, dict[str, str]] = {"footnote": {}, "endnote": {}}
        self._counted = {"footnote": 0, "endnote": 0}  # notes with an automatic number
        self._marks: list[Any] = []  # text elements read as a custom note mark
        self.links: dict[str, str] = {}
        """Hyperlink relationship id -> target, of the part being walked."""
        self._field_link = ""  # the target of the HYPERLINK field being read

    # -- blocks -------------------------------------------------------------------
    def blocks(self, container: Any) -> list[dict[str, Any]]:
        """Paragraphs, tables and text boxes of a body, cell, note, header or text box."""
        out: list[dict[str, Any]] = []
        for child in container:
            tag = child.tag
            if tag == W + "p":
                self._paragraph(child, out)
            elif tag == W + "tbl":
                out.append({"type": "table", "rows": self._rows(child)})
            elif tag == W + "sdt":
                self.counts["content controls"] += 1
                out.extend(self.blocks(_content(child)))
            elif tag in (W + "customXml", W + "ins", W + "moveTo", W + "del", W + "moveFrom"):
                out.extend(self.blocks(child))
            elif tag == W + "altChunk":
                self.counts["embedded files (altChunk)"] += 1
        return out

    def _paragraph(self, p: Any, out: list[dict[str, Any]]) -> None:
        boxes: list[list[dict[str, Any]]] = []
        text = self._inline(p, boxes).strip("\n")
        ppr = p.find(W + "pPr")
        style_el = ppr.find(W + "pStyle") if ppr is not None else None
        listed = ppr is not None and ppr.find(W + "numPr") is not None
        if text.strip():
            style = self.style_name(None if style_el is None else style_el.get(W + "val"))
            out.append({"type": "paragraph", "style": style, "text": text, "list": listed})
        for box in boxes:
            if box:
                out.append({"type": "textbox", "blocks": box})

    def _rows(self, tbl: Any) -> list[list[str]]:
        rows: list[list[str]] = []
        for child in tbl:
            if child.tag == W + "sdt":  # a row-level content control
                self.counts["content controls"] += 1
                trs = [tr for tr in _content(child) if tr.tag == W + "tr"]
            else:
                trs = [child] if child.tag == W + "tr" else []
            for tr in trs:
                rows.append([self._cell(tc) for tc in tr if tc.tag in (W + "tc", W + "sdt")])
        return rows

    def _cell(self, tc: Any) -> str:
        if tc.tag == W + "sdt":
            self.counts["content controls"] += 1
            tc = _content(tc).find(W + "tc")
            if tc is None:
                return ""
        return plain(self.blocks(tc))

    # -- inline -------------------------------------------------------------------
    def _inline(self, parent: Any, boxes: list[list[dict[str, Any]]]) -> str:
        parts: list[str] = []
        for child in parent:
            tag = child.tag
            if tag in _MARKS:
                opening, closing, kind = _MARKS[tag]
                inner = self._inline(child, boxes)
                if inner:
                    self.counts[kind] += 1
                    parts.append(f"{opening}{inner}{closing}")
            elif tag == W + "hyperlink":
                parts.append(self._link(child, self._inline(child, boxes)))
            elif tag in _PASS_THROUGH:
                parts.append(self._run(child, boxes) if tag == W + "r"
                             else self._inline(child, boxes))
            elif tag == W + "sdt":
                self.counts["content controls"] += 1
                parts.append(self._inline(_content(child), boxes))
            elif tag in (_M + "oMath", _M + "oMathPara"):
                parts.append("".join(t.text or "" for t in child.iter(_M + "t")))
        return "".join(parts)

    def _run(self, r: Any, boxes: list[list[dict[str, Any]]]) -> str:
        parts: list[str] = []
        for child in r:
            tag = child.tag
            if tag in _RUN_TEXT:
                if any(child is mark for mark in self._marks):
                    continue  # already shown as the note's custom mark
                fixed = _RUN_TEXT[tag]
                parts.append(child.text or "" if fixed is None else fixed)
            elif tag in (W + "footnoteReference", W + "endnoteReference"):
                parts.append(f"[^{self._custom_mark(child) or self._number(child)}]")
            elif tag == W + "commentReference":
                parts.append(f"[c{child.get(W + 'id')}]")
            elif tag == W + "sym":
                if not any(child is mark for mark in self._marks):
                    parts.append(_symbol(child.get(W + "char")))
            elif tag == W + "instrText":
                found = _FIELD_LINK.match(child.text or "")
                if found:
                    self._field_link = found.group(1)
            elif tag == W + "fldChar" and child.get(W + "fldCharType") == "end" and \
                    self._field_link:
                parts.append(f" (link: {self._field_link})")  # a HYPERLINK field's target
                self._field_link = ""
            elif tag in (W + "drawing", W + "pict", W + "object", _MC + "AlternateContent"):
                parts.append(self._graphic(child, boxes))
        return "".join(parts)

    def _number(self, ref: Any) -> str:
        kind = "footnote" if ref.tag == W + "footnoteReference" else "endnote"
        seen = self.numbers[kind]
        note_id = str(ref.get(W + "id"))
        if note_id not in seen:
            self._counted[kind] += 1
            n = self._counted[kind]
            seen[note_id] = str(n) if kind == "footnote" else _roman(n)
        return seen[note_id]

    def _custom_mark(self, ref: Any) -> str | None:
        """The mark the author typed for a note (`customMarkFollows`): the text right
        after the reference, in its run or the next. Word shows it instead of a number,
        and such a note takes no number from the sequence."""
        if ref.get(W + "customMarkFollows") not in ("1", "true", "on"):
            return None
        wanted = (W + "t", W + "sym")
        text = next((s for s in ref.itersiblings() if s.tag in wanted), None)
        if text is None:
            run = ref.getparent().getnext()
            text = next((s for s in run if s.tag in wanted), None) \
                if run is not None and run.tag == W + "r" else None
        mark = "" if text is None else _symbol(text.get(W + "char")) \
            if text.tag == W + "sym" else (text.text or "").strip()
        if text is None or not mark.strip():
            return None
        self._marks.append(text)
        kind = "footnote" if ref.tag == W + "footnoteReference" else "endnote"
        self.numbers[kind][str(ref.get(W + "id"))] = mark
        return mark

    def _link(self, link: Any, text: str) -> str:
        """A hyperlink's text with its target: ``[text](https://…)``, or ``(#bookmark)``."""
        target = self.links.get(link.get(_R + "id") or "", "")
        anchor = link.get(W + "anchor")
        if not target and anchor:
            target = "#" + anchor
        if not target or not text.strip() or target == text.strip():
            return text
        return f"[{text}]({target})"

    def _graphic(self, el: Any, boxes: list[list[dict[str, Any]]]) -> str:
        if el.tag == _MC + "AlternateContent":
            choice = el.find(_MC + "Choice")
            el = choice if choice is not None else el.find(_MC + "Fallback")
            if el is None:
                return ""
        contents = [c for c in el.iter(W + "txbxContent")
                    if not any(a.tag == W + "txbxContent" for a in c.iterancestors())]
        if contents:
            self.counts["text boxes"] += len(contents)
            boxes.extend(self.blocks(c) for c in contents)
            return ""
        return self._picture(el)

    def _picture(self, el: Any) -> str:
        uris = {g.get("uri") for g in el.iter(_A + "graphicData")}
        if _CHART in uris:
            self.counts["charts"] += 1
            return "[chart]"
        if _DIAGRAM in uris:
            self.counts["diagrams (SmartArt)"] += 1
            return "[diagram]"
        if el.tag == W + "object":
            self.counts["embedded objects"] += 1
            ole = next(el.iter(_O + "OLEObject"), None)
            program = "" if ole is None else (ole.get("ProgID") or "").strip()
            return f"[embedded object: {program}]" if program else "[embedded object]"
        if _PIC in uris or any(_local(d.tag) == "imagedata" for d in el.iter()):
            described = next((d for d in el.iter(_WP + "docPr")), None)
            alt = (described.get("descr") or described.get("title") or "").strip() \
                if described is not None else ""
            if alt and not _FILE_NAME.fullmatch(alt):  # a file name describes nothing
                self.counts["pictures with alt text"] += 1
                return f"[picture: {alt}]"
            self.counts["pictures without text"] += 1
            return "[picture]"
        return ""

    def notes(self, root: Any, tag: str) -> list[dict[str, Any]]:
        """Footnotes, endnotes or comments of a notes part: id, author, text."""
        found: list[dict[str, Any]] = []
        for note in root.iter(W + tag):
            if note.get(W + "type") in ("separator", "continuationSeparator",
                                        "continuationNotice"):
                continue
            text = plain(self.blocks(note)).strip()
            if text:
                note_id = str(note.get(W + "id"))
                item = {"id": self.numbers.get(tag, {}).get(note_id, note_id), "text": text}
                if note.get(W + "author"):
                    item["author"] = note.get(W + "author")
                found.append(item)
        return found


def _roman(n: int) -> str:
    out = ""
    for value, letters in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"),
                           (90, "xc"), (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"),
                           (4, "iv"), (1, "i")):
        while n >= value:
            out, n = out + letters, n - value
    return out


def _content(sdt: Any) -> Any:
    content = sdt.find(W + "sdtContent")
    return content if content is not None else []


def _symbol(code: str | None) -> str:
    try:
        value = int(code or "", 16)
    except ValueError:
        return ""
    # Symbol-font characters live at F000-F0FF: the glyph is the low byte's.
    return chr(value - 0xF000) if value >= 0xF000 else chr(value)


def plain(blocks: list[dict[str, Any]]) -> str:
    """Blocks as plain text (a table cell, a note): paragraphs and rows on their lines."""
    lines: list[str] = []
    for block in blocks:
        if block["type"] == "paragraph":
            lines.append(block["text"])
        elif block["type"] == "textbox":
            lines.append(plain(block["blocks"]))
        else:
            lines.extend(" | ".join(row) for row in block["rows"])
    return "\n".join(lines)


def block_lines(block: dict[str, Any], table: int) -> list[str]:
    """One block as the lines the model reads; `table` numbers a table."""
    if block["type"] == "paragraph":
        mark = "- " if block["list"] else ""
        return [f"[{block['style']}] {mark}{block['text']}"]
    if block["type"] == "textbox":
        return [f"[text box] {line}" for line in render_blocks(block["blocks"])]
    return [f"[table {table}]"] + ["| " + " | ".join(c.replace("\n", " / ") for c in row)
                                   + " |" for row in block["rows"]]


def render_blocks(blocks: list[dict[str, Any]]) -> list[str]:
    """Blocks as the lines the model reads (tables numbered from 1)."""
    lines: list[str] = []
    tables = 0
    for block in blocks:
        tables += block["type"] == "table"
        lines.extend(block_lines(block, tables))
    return lines
