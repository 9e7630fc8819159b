"""docx_read over the package's XML (streamed), docx_write over python-docx (the `docx`
extra)."""

from __future__ import annotations

import io
import zipfile
from collections import Counter
from collections.abc import Callable
from typing import Any

import docx
from docx.styles import BabelFish

from harness_core.documents._blocks import Block, parse_blocks
from harness_core.documents._common import read_input, write_output
from harness_core.documents._docx_package import WordPackage
from harness_core.documents._docx_walk import W, Walker, block_lines, plain
from harness_core.documents._office import context_limits, office_bytes, opt_password
from harness_core.tool_data import DocumentRead
from harness_core.tools import DocumentLimits, ToolContext, ToolOutcome
from harness_core.tools._support import bounded, req_str

__all__ = ["document_text", "read", "write"]


_NOT_READ = ("pictures without text", "charts", "diagrams (SmartArt)", "embedded objects",
             "embedded files (altChunk)")
_NOTE_KINDS = {"footnotes": "footnote", "endnotes": "endnote", "comments": "comment"}


def _style_names(styles: Any) -> Callable[[str | None], str]:
    """styleId -> the name Word shows (built-in names as python-docx spells them)."""
    names: dict[str, str] = {}
    default = "Normal"
    for style in styles.iter(W + "style") if styles is not None else ():
        if style.get(W + "type") != "paragraph":
            continue
        found = style.find(W + "name")
        sid = style.get(W + "styleId") or ""
        name = BabelFish.internal2ui(found.get(W + "val")) if found is not None else sid
        names[sid] = name
        if style.get(W + "default") in ("1", "true", "on"):
            default = name
    return lambda sid: names.get(sid, default) if sid else default


def _size(line: str) -> int:
    return (len(line) if line.isascii() else len(line.encode("utf-8"))) + 1  # + newline


class _Body:
    """The body's blocks as they are walked: rendered, and kept until `budget` bytes of
    text (the output cap: what the model can be shown), then only counted, so a long
    document never holds more than a screenful of blocks (None: keep everything)."""

    def __init__(self, budget: int | None, keep_blocks: bool) -> None:
        self.budget, self.keep_blocks = budget, keep_blocks
        self.blocks: list[dict[str, Any]] = []
        self.lines: list[str] = []
        self.size = self.tables = self.omitted_bytes = 0
        self.omitted: Counter[str] = Counter()

    def add(self, blocks: list[dict[str, Any]]) -> None:
        for block in blocks:
            self.tables += block["type"] == "table"
            lines = block_lines(block, self.tables)
            size = sum(map(_size, lines))
            if self.budget is not None and self.size >= self.budget and self.lines:
                self.omitted[block["type"]] += 1
                self.omitted_bytes += size
                continue
            self.size += size
            self.lines.extend(lines)
            if self.keep_blocks:
                self.blocks.append(block)

    def left_out(self) -> str:
        names = {"paragraph": "paragraph(s)", "table": "table(s)", "textbox": "text box(es)"}
        parts = [f"{n:,} {names[kind]}" for kind, n in self.omitted.items()]
        return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def _parse(data: bytes, budget: int | None, keep_blocks: bool) -> tuple[dict[str, Any], _Body]:
    """Body, headers, footers, notes and comments, and the walker's counts."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        package = WordPackage(archive)
        parts = package.parts()
        walker = Walker(_style_names(next((r for k, r, _ in parts if k == "styles"),
                                          None)))
        walker.links = package.links(package.main)
        body = _Body(budget, keep_blocks)
        package.body_blocks(lambda element: body.add(walker.blocks([element])))
    result: dict[str, Any] = {"blocks": body.blocks, "headers": [], "footers": [],
                              "footnotes": [], "endnotes": [], "comments": []}
    for kind, root, links in parts:
        walker.links = links
        if kind in ("header", "footer"):
            text = plain(walker.blocks(root)).strip()
            if text and text not in result[kind + "s"]:
                result[kind + "s"].append(text)
        elif kind in _NOTE_KINDS:
            result[kind] = walker.notes(root, _NOTE_KINDS[kind])
    counts = dict(walker.counts)
    result["not_read"] = {k: counts.pop(k) for k in _NOT_READ if k in counts}
    result["found"] = counts
    return result, body


def _summary(result: dict[str, Any]) -> list[str]:
    """What the document holds beyond plain paragraphs, and what was not read."""
    found = dict(result["found"])
    marks = {"insertions": "[+…+]", "deletions": "[-…-]"}
    shown = [f"{n} tracked {k} shown as {marks[k]}" if k in marks else f"{n} {k}"
             for k, n in found.items() if k in marks]
    shown += [f"{n} {k}" for k, n in found.items() if k not in marks]
    shown += [f"{len(result[k])} {k}" for k in ("footnotes", "endnotes", "comments")
              if result[k]]
    lines = [f"[contains] {', '.join(shown)}"] if shown else []
    if result["not_read"]:
        lines.append("[not read] " + ", ".join(f"{n} {k}" for k, n in
                                                 result["not_read"].items()))
    return lines


def _render(result: dict[str, Any], body: _Body) -> str:
    lines = list(body.lines)
    for key, label in (("headers", "header"), ("footers", "footer")):
        lines.extend(f"[{label}] {text}" for text in result[key])
    for key, label in _NOTE_KINDS.items():
        for note in result[key]:
            by = f" by {note['author']}" if "author" in note else ""
            lines.append(f"[{label} {note['id']}{by}] {note['text']}")
    return "\n".join(lines)


def _shown(text: str, cap: int, body: _Body) -> tuple[str, int]:
    """`text` cut to `cap` bytes; the note counts the bytes of the blocks never kept
    too, and names them."""
    shown, cut = bounded(text, cap)
    if not body.omitted:
        return shown, cut
    total = cut + body.omitted_bytes
    return (shown.rpartition("\n[output truncated:")[0] if cut else shown) + (
        f"\n[output truncated: {total} more bytes not shown, among them the body's last"
        f" {body.left_out()}]"), total


def read(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "docx_read")
    password = opt_password(args, "docx_read")
    got = read_input(ctx, path, "docx_read")
    if isinstance(got, ToolOutcome):
        return got
    rel, data = got
    data = office_bytes(data, "docx", context_limits(ctx), rel, password)
    result, body = _parse(data, ctx.output_cap, keep_blocks=True)
    text = "\n".join([*_summary(result), _render(result, body) or "(no text)"])
    shown, cut = _shown(text, ctx.output_cap, body)
    if body.omitted:
        result["omitted"] = {**body.omitted, "bytes": body.omitted_bytes}
    return ToolOutcome(output=shown, data=DocumentRead(rel, result, cut))


def document_text(data: bytes, limits: DocumentLimits | None = None,
                  what: str = "the document") -> str:
    """The whole text of a .docx (body with tracked changes marked, text boxes, tables,
    headers, footers, notes and comments), for the document gate."""
    data = office_bytes(data, "docx", limits, what)
    return _render(*_parse(data, None, keep_blocks=False))


def _add(document: Any, block: Block) -> None:
    if block.kind == "heading":
        document.add_heading(block.text, level=block.level)
    elif block.kind == "paragraph":
        document.add_paragraph(block.text)
    elif block.kind in ("bullets", "numbered"):
        style = "List Bullet" if block.kind == "bullets" else "List Number"
        for item in block.items:
            document.add_paragraph(item, style=style)
    elif block.kind == "table":
        table = document.add_table(rows=len(block.rows), cols=len(block.rows[0]))
        table.style = "Table Grid"
        for r, row in enumerate(block.rows):
            for c, text in enumerate(row):
                table.cell(r, c).text = text
                if r == 0:
                    for run in table.cell(r, c).paragraphs[0].runs:
                        run.bold = True
    else:
        document.add_page_break()


def write(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = req_str(args, "path", "docx_write")
    blocks = parse_blocks(args.get("blocks"), "docx_write")
    document = docx.Document()
    for block in blocks:
        _add(document, block)
    buffer = io.BytesIO()
    document.save(buffer)
    return write_output(ctx, path, buffer.getvalue(), "docx_write", f"{len(blocks)} block(s)")
