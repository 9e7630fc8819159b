"""Child process of pdf_read: extract a PDF's text with pypdf, report JSON on stdout.

Run as a script (not imported by the harness), so a PDF that makes the parser loop or
balloon is killed with this process when the parent's deadline passes. Reads the PDF
from stdin; argv[1] is a JSON list of 0-based page indexes (or null for every page),
argv[2] the seconds left for poppler's `pdftotext`, argv[3] (optional) a budget of text
bytes: once the pages extracted hold that much, the rest are listed as unread instead
(a 3,000-page manual took 11 s to show its first eight pages). Imports only pypdf and
the standard library.

Each page's text is measured: glyph-name tokens (``/g18``), control and private-use
characters, replacement glyphs and lone combining marks count as noise. When pypdf's
text is unusable (noisy, or far shorter than poppler's, or sharing few characters with
it, or holding under 95 % of poppler's words) and `pdftotext` is installed, poppler's
text is used instead, and the page says so.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import unicodedata
from collections import Counter

# A malformed PDF can ask for gigabytes (a decompression bomb): cap the address space.
_MEMORY_BYTES = 2 * 1024**3
_GLYPH_NAMES = re.compile(r"/(?:[gGcC]|cid|uni|glyph)[0-9A-Fa-f]{1,6}\b")
_NOISY = 0.10  # a page whose text is more than 10 % noise is unusable


def _limit_memory() -> None:
    try:
        import resource
    except ImportError:  # Windows: the deadline still applies
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > _MEMORY_BYTES:
        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_BYTES, hard))


def noise(text: str) -> float:
    """The share of a text's visible characters that are not text (0.0 .. 1.0)."""
    visible = [c for c in text if not c.isspace()]
    if not visible:
        return 0.0
    bad = sum(len(m) for m in _GLYPH_NAMES.findall(text))
    previous = " "
    for char in _GLYPH_NAMES.sub(" ", text):
        category = unicodedata.category(char)
        if char == "\ufffd" or category in ("Co", "Cn", "Cs") or (
                category == "Cc" and not char.isspace()) or (
                category == "Mn" and not previous.isalpha()):
            bad += 1
        previous = char if category != "Mn" else previous
    return min(1.0, bad / len(visible))


def _poppler(data: bytes, first: int, last: int, seconds: float) -> dict[int, str] | None:
    """Pages `first`..`last` (0-based) by `pdftotext`, by index; None if unavailable."""
    exe = shutil.which("pdftotext")
    if exe is None or seconds <= 0:
        return None
    argv = [exe, "-q", "-enc", "UTF-8", "-f", str(first + 1), "-l", str(last + 1), "-", "-"]
    try:
        done = subprocess.run(argv, input=data,
                              capture_output=True, timeout=seconds, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    pages = done.stdout.decode("utf-8", "replace").split("\f")
    return {first + i: text for i, text in enumerate(pages)}


def _verdict(mine: str, theirs: str | None) -> str | None:
    """Why pypdf's text should give way to poppler's (None: keep pypdf's)."""
    if theirs is None:
        return None
    own, other = mine.split(), theirs.split()
    own_len, other_len = sum(map(len, own)), sum(map(len, other))
    if other_len == 0 or noise(theirs) > _NOISY:
        return None
    if noise(mine) > _NOISY:
        return f"pypdf's text was {noise(mine):.0%} glyph names or non-text characters"
    if own_len < 0.5 * other_len:
        return f"pypdf found {own_len} characters where poppler found {other_len}"
    shared = set("".join(own)) & set("".join(other))
    if len(shared) < 0.5 * len(set("".join(other))):
        return "pypdf's characters barely match poppler's (a font without a usable map)"
    share = word_recall(theirs, mine)
    if share < _MIN_WORDS:
        return f"pypdf read {share:.0%} of the words poppler read"
    return None


_WORD = re.compile(r"[^\W\d_]+|\d+")
_MIN_WORDS = 0.95  # below this share of poppler's words, pypdf's text is incomplete


def _words(text: str) -> Counter[str]:
    """Lower-cased words and numbers; each CJK character counts as one word."""
    found: Counter[str] = Counter()
    for token in _WORD.findall(text.lower()):
        if any(ord(c) >= 0x2E80 for c in token):
            found.update(token)
        else:
            found[token] += 1
    return found


def word_recall(reference: str, text: str) -> float:
    """The share of `reference`'s words (with repetitions) that `text` holds too."""
    wanted, got = _words(reference), _words(text)
    total = sum(wanted.values())
    return sum(min(n, got[w]) for w, n in wanted.items()) / total if total else 1.0


def _page(index: int, text: str, poppler: dict[int, str] | None) -> dict[str, object]:
    theirs = poppler.get(index) if poppler is not None else None
    page: dict[str, object] = {"page": index + 1, "text": text, "source": "pypdf"}
    reason = _verdict(text, theirs)
    if reason is not None and theirs is not None:
        page.update(text=theirs, source="pdftotext", note=f"text from poppler's pdftotext:"
                                                          f" {reason}")
    elif not text.strip():
        page["note"] = "no text layer (a scanned or drawn page? there is no OCR)"
    elif noise(text) > _NOISY:  # left out: glyph names would only eat the output limit
        page.update(text="", note=f"text unusable, left out: {noise(text):.0%} glyph names"
                    " or non-text characters" + ("" if poppler is not None else
                                                 "; poppler's pdftotext is not installed"))
    return page


def _extract(data: bytes, wanted: list[int] | None, seconds: float,
             budget: int | None = None) -> dict[str, object]:
    import logging

    logging.disable(logging.WARNING)  # pypdf logs every repair it makes
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        return {"error": "the PDF is encrypted with a password"}
    count = len(reader.pages)
    indexes = range(count) if wanted is None else [i for i in wanted if i < count]
    texts: dict[int, str] = {}
    size = 0
    for index in indexes:
        if budget is not None and size >= budget:
            break  # the rest would not be shown: named as unread, never extracted
        texts[index] = reader.pages[index].extract_text() or ""
        size += len(texts[index].encode("utf-8", "replace")) + 16
    poppler = _poppler(data, min(texts), max(texts), seconds) if texts else None
    return {"page_count": count, "pages": [_page(i, t, poppler) for i, t in texts.items()],
            "unread": [i + 1 for i in indexes if i not in texts],
            "fields": form_values(reader)}


_RADIO, _PUSH = 1 << 15, 1 << 16


def _kind(field: dict[str, object]) -> str:
    kind = str(field.get("/FT"))
    if kind == "/Btn":
        flags = int(str(field.get("/Ff", 0)))
        return "radio" if flags & _RADIO else "pushbutton" if flags & _PUSH else "checkbox"
    return {"/Tx": "text", "/Ch": "choice", "/Sig": "signature"}.get(kind, "field")


def _value(value: object) -> object:
    if value is None:
        return None
    if isinstance(value, list):
        return [_value(v) for v in value]
    text = str(value)
    return text[1:] if text.startswith("/") else text


def form_values(reader: object) -> list[dict[str, object]]:
    """Each AcroForm field with a type: its name, kind and value (None when empty).
    A form's values live in its fields, not in the page text pypdf extracts."""
    try:
        fields = reader.get_fields() or {}  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a malformed form is reported as having none
        return []
    return [{"name": str(name), "type": _kind(field), "value": _value(field.get("/V"))}
            for name, field in fields.items() if "/FT" in field]


def main() -> None:
    wanted = json.loads(sys.argv[1]) if len(sys.argv) > 1 else None
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    budget = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
    data = sys.stdin.buffer.read()
    _limit_memory()
    try:
        result = _extract(data, wanted, seconds, budget)
    except MemoryError:
        result = {"error": "the PDF needs more memory than extraction allows"}
    except RecursionError:
        result = {"error": "the PDF's object structure nests too deeply"}
    # The parser raises anything on a malformed file; report it as data, whatever it is.
    except Exception as exc:  # noqa: BLE001
        result = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main()
