"""Large documents for the bounds tests, written as raw bytes in a second or two each.

A real 50 MB Office file is mostly embedded media (photographs: incompressible) plus
large XML; a real 50 MB PDF is scanned or photographic pages plus a text layer; a real
50 MB PNG is a photograph or a screenshot of a huge canvas. Each maker here writes that
shape directly: noise from a seeded `random.Random` (fast, and the same every run), PNGs
encoded by hand (zlib level 0 over noise), and the Office XML as strings into a zip.
"""

from __future__ import annotations

import io
import json
import os
import random
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

from tests.conftest import REPO

__all__ = ["MIB", "SLOW_SHAPES", "big_document", "declared_png", "big_presentation", "big_sheet",
           "measured", "noise_jpeg", "noise_png", "plain_png", "report_pdf",
           "slow_document"]

MIB = 1024 * 1024
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "documents"

# One call in a fresh interpreter, the tool's module (and so its libraries) imported
# first. CPU is
# the process's and its children's (not wall time: the machine may be shared). Memory
# is VmHWM, the peak RSS of this process image only: getrusage's ru_maxrss carries the
# parent's peak across fork and exec, so it would measure the test process. A child
# (the PDF worker, pdftotext) is measured by RUSAGE_CHILDREN, an upper bound for the
# same reason.
_CHILD = """
import importlib, json, resource, sys
from pathlib import Path
from harness_core.documents._registry import TOOL_IMPLEMENTATIONS
from tests.integration.documents.conftest import call, make_ctx
root, tool, args = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
importlib.import_module(TOOL_IMPLEMENTATIONS[tool].partition(":")[0])
ctx = make_ctx(root)
def cpu():
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
def peak():
    return next(int(line.split()[1]) for line in open("/proc/self/status")
                if line.startswith("VmHWM:"))
rss, used = peak(), cpu()
out = call(ctx, tool, **args)
print(json.dumps({"error": out.is_error, "text": out.output, "cpu": cpu() - used,
                  "grew_mib": (peak() - rss) / 1024,
                  "child_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "data": None if out.data is None else out.data.to_json(),
                  "media": [len(m.data) for m in out.media]}))
"""


def measured(root: Path, tool: str, **args: Any) -> dict[str, Any]:
    """`tool` called on files under `root` in a child process: its answer (`error`,
    `text`, `data`, `media` sizes), `cpu` seconds, `grew_mib` (peak RSS growth),
    `child_mib` and `stderr`."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(root), tool, json.dumps(args)],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return {**json.loads(done.stdout), "stderr": done.stderr}

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_PIC = "http://schemas.openxmlformats.org/drawingml/2006/picture"
_WP = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_XDR = "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"
_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_CT = "http://schemas.openxmlformats.org/package/2006/content-types"
_IMAGE_REL = f"{_R}/image"
_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'


# -- images ---------------------------------------------------------------------------
def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(
        ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _png(width: int, height: int, raw: bytes, level: int) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw, level)) + _chunk(b"IEND", b""))


def noise_png(width: int, height: int, seed: int = 0) -> bytes:
    """An RGB PNG of noise: as large on disk as in memory (width * height * 3 bytes)."""
    rng = random.Random(seed)
    row = width * 3
    raw = b"".join(b"\x00" + rng.randbytes(row) for _ in range(height))
    return _png(width, height, raw, 0)


def plain_png(width: int, height: int) -> bytes:
    """A one-colour RGB PNG: a few KB on disk whatever its dimensions."""
    row = b"\x00" + b"\x80\x40\x20" * width
    compressor = zlib.compressobj(9)
    body = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", body)
            + _chunk(b"IEND", b""))


def declared_png(width: int, height: int) -> bytes:
    """A PNG header declaring `width` x `height` with no pixel data: what a
    decompression bomb looks like to a reader that checks the size before decoding."""
    return _png(width, height, b"", 9)


def noise_jpeg(width: int, height: int, seed: int = 0, quality: int = 90,
               grain: int = 1, mode: str = "RGB", code: str | None = None) -> bytes:
    """A JPEG of noise (Pillow's encoder) in `grain`-pixel squares: grain 1 is as large
    on disk as a detailed photograph (about 1.5 bytes a pixel), larger grains smaller.
    `code`: a QR code of that text on a white card near the top left corner, a sixth
    of the height across."""
    from PIL import Image

    rng = random.Random(seed)
    size = (-(-width // grain), -(-height // grain))
    image = Image.frombytes(mode, size, rng.randbytes(size[0] * size[1] * len(mode)))
    if code is not None:
        import segno

        qr = io.BytesIO()
        segno.make_qr(code, error="m").save(qr, kind="png", scale=1, border=4)
        card = Image.open(qr).convert(mode)
        card = card.resize((size[1] // 6,) * 2, Image.Resampling.NEAREST)
        image.paste(card, (size[1] // 12, size[1] // 12))
    if grain > 1:
        image = image.resize((width, height), Image.Resampling.NEAREST)
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


# -- Office packages ------------------------------------------------------------------
def _rels(items: list[tuple[str, str, str]]) -> str:
    body = "".join(f'<Relationship Id="{rid}" Type="{kind}" Target="{target}"/>'
                   for rid, kind, target in items)
    return f'{_HEAD}<Relationships xmlns="{_REL}">{body}</Relationships>'


def _content_types(overrides: dict[str, str]) -> str:
    body = "".join(f'<Override PartName="/{name}" ContentType="{kind}"/>'
                   for name, kind in overrides.items())
    return (f'{_HEAD}<Types xmlns="{_CT}"><Default Extension="rels" ContentType='
            '"application/vnd.openxmlformats-package.relationships+xml"/><Default '
            'Extension="xml" ContentType="application/xml"/><Default Extension="png" '
            f'ContentType="image/png"/>{body}</Types>')


def _write_zip(target: Path, parts: dict[str, bytes | str], stored: dict[str, bytes],
               base: Path | io.BytesIO | None = None) -> None:
    """`base`'s members (those not replaced), `parts` deflated and `stored` as they are."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
        if base is not None:
            with zipfile.ZipFile(base) as source:
                for info in source.infolist():
                    if info.filename not in parts and info.filename not in stored:
                        out.writestr(info.filename, source.read(info))
        for name, data in parts.items():
            out.writestr(name, data.encode() if isinstance(data, str) else data)
        for name, data in stored.items():
            out.writestr(name, data, zipfile.ZIP_STORED)


def _media(count: int, side: int, seed: int) -> dict[int, bytes]:
    """`count` distinct noise PNGs of `side` x `side` px (3 * side**2 bytes each)."""
    return {n: noise_png(side, side, seed + n) for n in range(1, count + 1)}


def _inline_picture(n: int) -> str:
    """A Word run holding picture `n` with no alt text (as Word inserts a photograph)."""
    return (f'<w:r><w:drawing><wp:inline><wp:extent cx="914400" cy="914400"/><wp:docPr '
            f'id="{n}" name="Picture {n}"/><a:graphic><a:graphicData uri="{_PIC}"><pic:pic>'
            f'<pic:nvPicPr><pic:cNvPr id="{n}" name="photo{n}.png"/><pic:cNvPicPr/>'
            f'</pic:nvPicPr><pic:blipFill><a:blip r:embed="rIdImg{n}"/><a:stretch>'
            '<a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/>'
            '<a:ext cx="914400" cy="914400"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/>'
            '</a:prstGeom></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline>'
            '</w:drawing></w:r>')


def _word_package(target: Path, body: str, media: dict[int, bytes],
                  extra: dict[str, tuple[str, str, str]] | None = None) -> None:
    """A .docx of `body` (the inside of <w:body>), pictures `media` (rIdImg1…) and
    `extra` parts: name -> (XML, relationship type, content type)."""
    extra = extra or {}
    namespaces = (f'xmlns:w="{_W}" xmlns:r="{_R}" xmlns:a="{_A}" xmlns:pic="{_PIC}" '
                  f'xmlns:wp="{_WP}"')
    main = "application/vnd.openxmlformats-officedocument.wordprocessingml"
    rels = [(f"rIdImg{n}", _IMAGE_REL, f"media/image{n}.png") for n in media]
    rels += [(f"rIdX{i}", kind, name.removeprefix("word/"))
             for i, (name, (_, kind, _)) in enumerate(extra.items())]
    parts: dict[str, bytes | str] = {
        "[Content_Types].xml": _content_types(
            {"word/document.xml": f"{main}.document.main+xml",
             **{name: ctype for name, (_, _, ctype) in extra.items()}}),
        "_rels/.rels": _rels([("rId1", f"{_R}/officeDocument", "word/document.xml")]),
        "word/_rels/document.xml.rels": _rels(rels),
        "word/document.xml": f"{_HEAD}<w:document {namespaces}><w:body>{body}"
                             "</w:body></w:document>",
        **{name: xml for name, (xml, _, _) in extra.items()},
    }
    _write_zip(target, parts, {f"word/media/image{n}.png": data for n, data in media.items()})


def _table(label: str, rows: int, cols: int) -> str:
    cell = "<w:tc><w:p><w:r><w:t>{}</w:t></w:r></w:p></w:tc>"
    return "<w:tbl>" + "".join(
        "<w:tr>" + "".join(cell.format(f"{label}r{r}c{c}") for c in range(cols)) + "</w:tr>"
        for r in range(rows)) + "</w:tbl>"


def big_document(target: Path, paragraphs: int = 60_000, pictures: int = 15,
                 side: int = 1000) -> None:
    """A report: `paragraphs` paragraphs with a small table every 200, a photograph
    (noise PNG, 3 MB at the default side) every few thousand paragraphs."""
    every = max(1, paragraphs // pictures)
    parts: list[str] = []
    for i in range(paragraphs):
        parts.append(f"<w:p><w:r><w:t>Paragraph {i} of the annual report, with the words"
                     f" a reader expects to find.</w:t></w:r></w:p>")
        if i % 200 == 199:
            parts.append(_table(f"t{i}", 5, 4))
        if i % every == 0 and i // every < pictures:
            parts.append(f"<w:p>{_inline_picture(i // every + 1)}</w:p>")
    _word_package(target, "".join(parts), _media(pictures, side, 100))


def _slide(n: int, text_lines: int) -> str:
    body = "".join(f"<a:p><a:r><a:t>Slide {n} point {k}: revenue, costs and the outlook"
                   f"</a:t></a:r></a:p>" for k in range(text_lines))
    return (f'{_HEAD}<p:sld xmlns:a="{_A}" xmlns:r="{_R}" xmlns:p="{_P}"><p:cSld><p:spTree>'
            '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
            '<p:grpSpPr/><p:sp><p:nvSpPr><p:cNvPr id="2" name="Title 1"/><p:cNvSpPr/><p:nvPr>'
            '<p:ph type="title"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/>'
            f'<a:p><a:r><a:t>Title {n}</a:t></a:r></a:p></p:txBody></p:sp><p:sp><p:nvSpPr>'
            '<p:cNvPr id="3" name="Text 2"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr>'
            f'<p:spPr/><p:txBody><a:bodyPr/>{body}</p:txBody></p:sp><p:pic><p:nvPicPr>'
            f'<p:cNvPr id="4" name="Picture 3"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr><p:blipFill>'
            '<a:blip r:embed="rId2"/><a:stretch><a:fillRect/></a:stretch></p:blipFill>'
            '<p:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="914400" cy="914400"/></a:xfrm>'
            '<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr></p:pic></p:spTree>'
            '</p:cSld></p:sld>')


def big_presentation(target: Path, slides: int = 120, side: int = 380,
                     text_lines: int = 40) -> None:
    """A deck from python-pptx's own template: `slides` slides, each a title, a text
    box of `text_lines` lines and a photograph (a noise PNG of `side` px, no alt text)."""
    import pptx

    base = io.BytesIO()
    pptx.Presentation().save(base)
    with zipfile.ZipFile(base) as source:
        presentation = source.read("ppt/presentation.xml").decode()
        rels = source.read("ppt/_rels/presentation.xml.rels").decode()
        types = source.read("[Content_Types].xml").decode()
    kind = "application/vnd.openxmlformats-officedocument.presentationml.slide+xml"
    ids = "".join(f'<p:sldId id="{255 + n}" r:id="rIdS{n}"/>' for n in range(1, slides + 1))
    presentation = presentation.replace("</p:sldMasterIdLst>",
                                        f"</p:sldMasterIdLst><p:sldIdLst>{ids}</p:sldIdLst>")
    rels = rels.replace("</Relationships>", "".join(
        f'<Relationship Id="rIdS{n}" Type="{_R}/slide" Target="slides/slide{n}.xml"/>'
        for n in range(1, slides + 1)) + "</Relationships>")
    types = types.replace("</Types>", '<Default Extension="png" ContentType="image/png"/>'
                          + "".join(f'<Override PartName="/ppt/slides/slide{n}.xml" '
                                    f'ContentType="{kind}"/>' for n in range(1, slides + 1))
                          + "</Types>")
    parts: dict[str, bytes | str] = {"ppt/presentation.xml": presentation,
                                     "ppt/_rels/presentation.xml.rels": rels,
                                     "[Content_Types].xml": types}
    for n in range(1, slides + 1):
        parts[f"ppt/slides/slide{n}.xml"] = _slide(n, text_lines)
        parts[f"ppt/slides/_rels/slide{n}.xml.rels"] = _rels([
            ("rId1", f"{_R}/slideLayout", "../slideLayouts/slideLayout2.xml"),
            ("rId2", _IMAGE_REL, f"../media/image{n}.png")])
    stored = {f"ppt/media/image{n}.png": data for n, data in _media(slides, side, 500).items()}
    base.seek(0)
    _write_zip(target, parts, stored, base=base)


def big_sheet(target: Path, rows: int = 400_000, pictures: int = 14, side: int = 1000,
              base: Path | None = None) -> None:
    """A workbook (`base`'s, default the fixture dimension.xlsx) whose first sheet holds
    `rows` rows of text and numbers under a <dimension> claiming A1:A1, and a drawing
    of `pictures` photographs (noise PNGs of `side` px)."""
    base = base or FIXTURES / "dimension.xlsx"
    body = "".join(
        f'<row r="{r}"><c r="A{r}" t="inlineStr"><is><t>item {r}</t></is></c><c r="B{r}">'
        f'<v>{r}</v></c><c r="C{r}"><v>{r * 1.5}</v></c></row>' for r in range(1, rows + 1))
    sheet = (f'{_HEAD}<worksheet xmlns="{_S}" xmlns:r="{_R}"><dimension ref="A1:A1"/>'
             f'<sheetData>{body}</sheetData><drawing r:id="rIdD1"/></worksheet>')
    anchors = "".join(
        f'<xdr:oneCellAnchor><xdr:from><xdr:col>5</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>'
        f'{n * 20}</xdr:row><xdr:rowOff>0</xdr:rowOff></xdr:from><xdr:ext cx="914400" '
        f'cy="914400"/><xdr:pic><xdr:nvPicPr><xdr:cNvPr id="{n}" name="Picture {n}"/>'
        '<xdr:cNvPicPr/></xdr:nvPicPr><xdr:blipFill><a:blip r:embed="rIdImg'
        f'{n}"/><a:stretch><a:fillRect/></a:stretch></xdr:blipFill><xdr:spPr><a:prstGeom '
        'prst="rect"><a:avLst/></a:prstGeom></xdr:spPr></xdr:pic><xdr:clientData/>'
        '</xdr:oneCellAnchor>' for n in range(1, pictures + 1))
    with zipfile.ZipFile(base) as source:
        types = source.read("[Content_Types].xml").decode()
    drawing_type = "application/vnd.openxmlformats-officedocument.drawing+xml"
    if 'Extension="png"' not in types:
        types = types.replace("</Types>", '<Default Extension="png" ContentType='
                              '"image/png"/></Types>')
    types = types.replace("</Types>", '<Override PartName="/xl/drawings/drawing1.xml" '
                          f'ContentType="{drawing_type}"/></Types>')
    parts: dict[str, bytes | str] = {
        "[Content_Types].xml": types,
        "xl/worksheets/sheet1.xml": sheet,
        "xl/worksheets/_rels/sheet1.xml.rels": _rels(
            [("rIdD1", f"{_R}/drawing", "../drawings/drawing1.xml")]),
        "xl/drawings/drawing1.xml": f'{_HEAD}<xdr:wsDr xmlns:xdr="{_XDR}" xmlns:a="{_A}" '
                                    f'xmlns:r="{_R}">{anchors}</xdr:wsDr>',
        "xl/drawings/_rels/drawing1.xml.rels": _rels(
            [(f"rIdImg{n}", _IMAGE_REL, f"../media/image{n}.png")
             for n in range(1, pictures + 1)]),
    }
    stored = {f"xl/media/image{n}.png": data
              for n, data in _media(pictures, side, 900).items()}
    _write_zip(target, parts, stored, base=base)


# -- PDF ------------------------------------------------------------------------------
def report_pdf(target: Path, text_pages: int, photos: int = 0, side: int = 1400) -> None:
    """A PDF of `photos` pages each of one photograph (a noise JPEG of `side` px, about
    1.6 MB at 1400) then `text_pages` pages of text in Helvetica, written object by
    object (fpdf2 takes 10 ms a page): a survey's pictures and its long report."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []

    def page(content: bytes, resources: bytes) -> None:
        stream = zlib.compress(content, 1)
        objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream"
                       % (len(stream), stream))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources"
                       b" << %s >> /Contents %d 0 R >>" % (resources, len(objects)))
        kids.append(b"%d 0 R" % len(objects))

    for n in range(photos):
        jpeg = noise_jpeg(side, side, 700 + n)
        objects.append(b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace"
                       b" /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>"
                       b"\nstream\n%s\nendstream" % (side, side, len(jpeg), jpeg))
        page(b"q 515 0 0 515 40 160 cm /Im1 Do Q", b"/XObject << /Im1 %d 0 R >>"
             % len(objects))
    for number in range(1, text_pages + 1):
        lines = "".join(f"(Page {number} line {k}: clauses, terms and the schedule.) Tj T* "
                        for k in range(45))
        page(f"BT /F1 10 Tf 14 TL 40 800 Td {lines}ET".encode(), b"/Font << /F1 3 0 R >>")
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    target.write_bytes(bytes(out))


# -- the slow docx --------------------------------------------------------------------
def _run(text: str) -> str:
    return f"<w:r><w:t>{text}</w:t></w:r>"


def _notes(tag: str, count: int, attrs: str = "") -> str:
    body = "".join(f'<w:{tag} w:id="{i}"{attrs}><w:p>{_run(f"{tag} text {i}")}</w:p></w:{tag}>'
                   for i in range(1, count + 1))
    return f'{_HEAD}<w:{tag}s xmlns:w="{_W}">{body}</w:{tag}s>'


_MAIN = "application/vnd.openxmlformats-officedocument.wordprocessingml"
SLOW_SHAPES = ("tables", "revisions", "runs", "nested", "footnotes", "comments")


def slow_document(target: Path, shape: str, count: int = 3000) -> None:
    """A document of about half a megabyte in one of the shapes that made Word readers
    slow: thousands of small tables, tracked revisions, runs, nested tables, footnote
    references or comments (issue 27: one such .docx took 19 s and 258 MB)."""
    extra: dict[str, tuple[str, str, str]] = {}
    if shape == "tables":
        body = "".join(_table(f"k{i}", 2, 2) + f"<w:p>{_run(f'gap {i}')}</w:p>"
                       for i in range(count))
    elif shape == "revisions":
        body = "".join(
            f'<w:p><w:ins w:id="{2 * i}" w:author="A" w:date="2024-01-01T00:00:00Z">'
            f'{_run(f"new {i}")}</w:ins><w:del w:id="{2 * i + 1}" w:author="B"><w:r>'
            f"<w:rPr><w:b/></w:rPr><w:delText>old {i}</w:delText></w:r></w:del></w:p>"
            for i in range(count))
    elif shape == "runs":
        body = "".join("<w:p>" + "".join(_run(f"w{i}.{k} ") for k in range(40)) + "</w:p>"
                       for i in range(count // 6))
    elif shape == "nested":
        deep = "<w:tbl><w:tr><w:tc>" * 40 + f"<w:p>{_run('deep')}</w:p>" \
            + "</w:tc></w:tr></w:tbl><w:p/>" * 40
        body = deep * (count // 40)
    elif shape == "footnotes":
        body = "".join(f'<w:p>{_run(f"claim {i}")}<w:r><w:footnoteReference w:id="{i}"/>'
                       "</w:r></w:p>" for i in range(1, count + 1))
        extra["word/footnotes.xml"] = (_notes("footnote", count), f"{_R}/footnotes",
                                       f"{_MAIN}.footnotes+xml")
    elif shape == "comments":
        body = "".join(f'<w:p><w:commentRangeStart w:id="{i}"/>{_run(f"remark {i}")}'
                       f'<w:commentRangeEnd w:id="{i}"/><w:r><w:commentReference w:id="{i}"/>'
                       "</w:r></w:p>" for i in range(1, count + 1))
        extra["word/comments.xml"] = (_notes("comment", count, ' w:author="Ann"'),
                                      f"{_R}/comments", f"{_MAIN}.comments+xml")
    else:
        raise ValueError(shape)
    _word_package(target, body, {}, extra)
