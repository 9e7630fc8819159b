"""The parts of a .docx that hold text, found and parsed without loading the rest.

python-docx loads every part of a package when it opens one (each picture's bytes) and
parses the main document whole: a 9 MB document of a million paragraphs took 1.2 GB and
7 s. docx_read only needs the parts with text. `WordPackage` resolves them through the
package's relationships (the Open Packaging Conventions, as python-docx does), parses
the small ones (styles, headers, footers, notes, comments) with the same safe parser
settings as python-docx, and streams the main document with `iterparse`: each block of
the body is handed over when its end tag is read, then freed, so memory holds one block
at a time whatever the document's length. Media parts are never read.
"""

from __future__ import annotations

import posixpath
import zipfile
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from lxml import etree

__all__ = ["WordPackage"]

_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_CT = "{http://schemas.openxmlformats.org/package/2006/content-types}"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
# The main part's content types Word writes: documents and templates, with macros or not.
_WORD_MAIN = ("wordprocessingml.document.main+xml", "wordprocessingml.template.main+xml",
              "ms-word.document.macroEnabled.main+xml",
              "ms-word.template.macroEnabledTemplate.main+xml")
_BLOCK_TAGS = [_W + tag for tag in ("p", "tbl", "sdt", "customXml", "ins", "del", "moveTo",
                                    "moveFrom", "altChunk")]
# python-docx's parser: no entities resolved, nothing fetched, blank text dropped.
_SAFE = {"resolve_entities": False, "no_network": True, "remove_blank_text": True}


def _rels_name(part: str) -> str:
    folder, _, name = part.rpartition("/")
    return f"{folder}/_rels/{name}.rels" if folder else f"_rels/{name}.rels"


class WordPackage:
    """An open .docx: its main document part, related parts by kind, each parsed."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.archive = archive
        self._names = set(archive.namelist())
        self.main = self._main_part()

    def _xml(self, name: str) -> Any:
        return etree.fromstring(self.archive.read(name), etree.XMLParser(**_SAFE))

    def _related(self, part: str) -> list[tuple[str, str]]:
        """(kind, part name) of each internal relationship of `part`, in file order;
        kind is the last segment of the relationship type (``styles``, ``header``)."""
        rels = _rels_name(part)
        if rels not in self._names:
            return []
        folder = part.rpartition("/")[0]
        found: list[tuple[str, str]] = []
        for rel in self._xml(rels).iter(_REL):
            target = rel.get("Target") or ""
            if rel.get("TargetMode") == "External" or not target:
                continue
            name = posixpath.normpath(posixpath.join(
                "/" if target.startswith("/") else "/" + folder, unquote(target))).lstrip("/")
            if name in self._names:
                found.append(((rel.get("Type") or "").rpartition("/")[2], name))
        return found

    def links(self, part: str) -> dict[str, str]:
        """Relationship id -> target of each hyperlink relationship of `part` (a web
        address, a file, or a place in this package)."""
        rels = _rels_name(part)
        if rels not in self._names:
            return {}
        return {rel.get("Id") or "": rel.get("Target") or ""
                for rel in self._xml(rels).iter(_REL)
                if (rel.get("Type") or "").endswith("/hyperlink")}

    def _main_part(self) -> str:
        main = next((name for kind, name in self._related("") if kind == "officeDocument"),
                    None)
        if main is None:
            raise ValueError("not a Word document: the package names no main document part")
        kind = self._content_type(main)
        if not kind.endswith(_WORD_MAIN):
            raise ValueError(f"not a Word document: its main part {main} is {kind!r}")
        return main

    def _content_type(self, part: str) -> str:
        if "[Content_Types].xml" not in self._names:
            return ""
        types = self._xml("[Content_Types].xml")
        for override in types.iter(_CT + "Override"):
            if (override.get("PartName") or "").lstrip("/") == part:
                return override.get("ContentType") or ""
        extension = part.rpartition(".")[2].lower()
        for default in types.iter(_CT + "Default"):
            if (default.get("Extension") or "").lower() == extension:
                return default.get("ContentType") or ""
        return ""

    def parts(self) -> list[tuple[str, Any, dict[str, str]]]:
        """(kind, parsed root, hyperlink targets) of each part related to the main
        document that can hold text or style names: styles, headers, footers,
        footnotes, endnotes, comments."""
        wanted = ("styles", "header", "footer", "footnotes", "endnotes", "comments")
        related = sorted((name, kind) for kind, name in self._related(self.main)
                         if kind in wanted)  # header1, header2 … in name order
        return [(kind, self._xml(name), self.links(name)) for name, kind in related]

    def body_blocks(self, visit: Callable[[Any], None]) -> None:
        """Call `visit` with each child element of the main document's body, in order,
        as soon as it is parsed; it is freed after the call."""
        body = _W + "body"
        with self.archive.open(self.main) as stream:
            # Only the tags a body's child can have raise events (filtered in C).
            for _, element in etree.iterparse(stream, events=("end",), tag=_BLOCK_TAGS,
                                              **_SAFE):
                parent = element.getparent()
                if parent is None or parent.tag != body:
                    continue  # a paragraph of a table cell: its table is visited whole
                visit(element)
                element.clear()
                while element.getprevious() is not None:
                    del parent[0]
