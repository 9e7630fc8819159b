"""What a pptx slide holds beside its text frames: chart data, comments, OLE objects,
hyperlink targets. Read for pptx_read; never writes.

A chart is read from the values the file caches for it (python-pptx's chart API):
title, categories, and each series' name and values, as a viewer draws them without
opening the embedded workbook. Comments are read from the slide's comments part, the
legacy one (`p:cm`, authors in `commentAuthors.xml`) or the 2018 one (`p188:cm` with
replies, authors in `authors.xml`).
"""

from __future__ import annotations

from typing import Any

from lxml import etree

__all__ = ["chart_item", "comment_authors", "comments", "linked_text", "object_item"]

_SAFE = {"resolve_entities": False, "no_network": True}
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"


def _number(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        value = round(value, 10)  # a cached 8.200000000000001 is shown as 8.2
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def chart_item(shape: Any) -> dict[str, Any]:
    """The chart's title, categories and series (name and values), as text."""
    chart = shape.chart
    lines: list[str] = []
    title = ""
    try:
        if chart.has_title:
            title = chart.chart_title.text_frame.text.strip()
        names = [str(s.name) for plot in chart.plots for s in plot.series]
        if not title and len(names) == 1 and not _title_deleted(chart):
            title = names[0]  # a one-series chart without a title shows its name as one
        for plot in chart.plots:
            categories = [str(c) for c in plot.categories]
            if categories:
                lines.append("categories: " + ", ".join(categories))
            for series in plot.series:
                values = ", ".join(_number(v) for v in series.values)
                xs = series._element.xpath("./c:xVal//c:pt/c:v/text()")  # noqa: SLF001
                if xs:  # a scatter or bubble series: its x values too
                    values = f"x {', '.join(map(str, xs))}; y {values}"
                lines.append(f"series {series.name}: {values}")
    # python-pptx raises anything on a chart part it cannot model; say so, keep reading.
    except Exception as exc:  # noqa: BLE001
        lines.append(f"(chart data not read: {type(exc).__name__})")
        return {"type": "chart", "text": title, "data": lines, "read": False}
    return {"type": "chart", "text": title, "data": lines, "read": bool(lines or title)}


def _title_deleted(chart: Any) -> bool:
    found = chart._chartSpace.xpath("c:chart/c:autoTitleDeleted/@val")  # noqa: SLF001
    return bool(found) and str(found[0]) in ("1", "true")


def object_item(shape: Any, alt: str) -> dict[str, Any]:
    """An embedded or linked OLE object (or media) by its program, file and name."""
    names: list[str] = []
    ole = getattr(shape, "ole_format", None)
    try:
        if ole is not None and ole.prog_id:
            names.append(str(ole.prog_id))
        rid = next((v for k, v in shape._element.xpath(".//p:oleObj")[0].attrib.items()
                    if k == _R + "id"), None) if ole is not None else None  # noqa: SLF001
        if rid and rid in shape.part.rels:
            rel = shape.part.rels[rid]
            names.append(rel.target_ref if rel.is_external else
                         str(rel.target_part.partname).rpartition("/")[2])
    except (IndexError, KeyError, AttributeError, ValueError):
        pass
    if shape.name:
        names.append(str(shape.name))
    if alt:
        names.append(alt)
    return {"type": "object", "text": ", ".join(dict.fromkeys(names)), "read": False}


def linked_text(paragraph: Any) -> str:
    """A paragraph's text with each hyperlink's target: ``[text](https://…)``."""
    text = str(paragraph.text)
    for run in paragraph.runs:
        try:
            address = run.hyperlink.address
        except (KeyError, ValueError):  # a link whose relationship is missing
            continue
        if address and run.text.strip() and address != run.text.strip():
            text = text.replace(run.text, f"[{run.text}]({address})", 1)
    return text


def comment_authors(package: Any) -> dict[str, str]:
    """Comment author id -> name, from the legacy and the 2018 authors parts."""
    names: dict[str, str] = {}
    for part in package.iter_parts():
        name = str(part.partname)
        if name.endswith(("/commentAuthors.xml", "/authors.xml")):
            try:
                root = etree.fromstring(part.blob, etree.XMLParser(**_SAFE))
            except etree.XMLSyntaxError:
                continue  # comments are then shown without their authors
            for author in root:
                names[author.get("id") or ""] = author.get("name") or ""
    return names


def comments(slide: Any, authors: dict[str, str] | None = None) -> list[dict[str, str]]:
    """The slide's comments (and replies) in file order: author and text."""
    found: list[dict[str, str]] = []
    for rel in slide.part.rels.values():
        if rel.is_external or not rel.reltype.endswith("/comments"):
            continue
        if authors is None:
            authors = comment_authors(slide.part.package)
        try:
            root = etree.fromstring(rel.target_part.blob, etree.XMLParser(**_SAFE))
        except etree.XMLSyntaxError:
            found.append({"author": "", "text": "(a comments part that is not valid XML:"
                                               " not read)"})
            continue
        for element in root.iter():
            if etree.QName(element).localname not in ("cm", "reply"):
                continue
            texts = [t.text or "" for t in element.iter() if etree.QName(t).localname
                     in ("t", "text") and not any(etree.QName(a).localname == "reply"
                                                  for a in t.iterancestors()
                                                  if a is not element)]
            text = "".join(texts).strip()
            if text:
                found.append({"author": authors.get(element.get("authorId") or "", ""),
                              "text": text})
    return found
