"""Which fonts can draw a text: pdf_write never answers ok with characters missing.

fpdf2's built-in Helvetica covers Latin-1 only. Any other text is set in a Unicode
TrueType font (DejaVu Sans where installed), and each character that font lacks sends
us to fontconfig (`fc-match -s 'sans-serif:charset=…'`) for the fonts that have it, a
Noto CJK font for Japanese where installed; every candidate's own cmap (read with
fontTools, which fpdf2 brings) decides, not fontconfig's ranking. Characters no
installed font has are returned, so the writer refuses instead of dropping them.
"""

from __future__ import annotations

import shutil
import subprocess
import unicodedata
from dataclasses import field
from functools import cache
from pathlib import Path

from harness_core._record import record
from harness_core.host import run_helper

__all__ = ["FontPlan", "plan_fonts", "single_font_plan"]

_UNICODE_FONTS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/Library/Fonts/Arial Unicode.ttf",
    "/System/Library/Fonts/Supplemental/Arial Unicode.ttf",
    "C:/Windows/Fonts/arial.ttf",
)
_MAX_FALLBACKS = 6
_FontFile = tuple[str, int]  # (path, index in a collection)


@record(frozen=False)
class FontPlan:
    """The fonts one document needs.

    Attributes:
        main: The font for the text (None: fpdf2's Helvetica, Latin-1 text only).
        fallbacks: Fonts for the characters `main` lacks, in order.
        missing: Characters no installed font has (the writer refuses them).
    """

    main: _FontFile | None = None
    fallbacks: list[_FontFile] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def describe(self) -> str:
        names = [Path(f[0]).name for f in ([self.main] if self.main else []) + self.fallbacks]
        return ", ".join(names) or "Helvetica"


def _drawn(char: str) -> bool:
    """Whether a character needs a glyph (spaces, joiners and selectors do not)."""
    if char.isspace():
        return False
    return unicodedata.category(char) not in ("Cf", "Cc") and not (
        "\ufe00" <= char <= "\ufe0f")


@cache
def _cmap(font: _FontFile) -> frozenset[int]:
    from fontTools.ttLib import TTFont

    try:
        with TTFont(font[0], fontNumber=font[1], lazy=True) as loaded:
            return frozenset(loaded.getBestCmap() or {})
    except Exception:  # noqa: BLE001 - an unreadable font file covers nothing
        return frozenset()


@cache
def _candidates(char: str) -> tuple[_FontFile, ...]:
    """Fonts fontconfig ranks for a sans-serif text holding `char`, best first."""
    exe = shutil.which("fc-match")
    if exe is None:
        return ()
    try:
        done = run_helper([exe, "-s", "-f", "%{file}|%{index}\\n",
                           f"sans-serif:charset={ord(char):x}"], timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    found: list[_FontFile] = []
    for line in done.stdout.decode("utf-8", "replace").splitlines()[:40]:
        path, _, index = line.rpartition("|")
        if path.lower().endswith((".ttf", ".otf", ".ttc")) and index.isdigit():
            found.append((path, int(index)))
    return tuple(found)


def _main_font() -> _FontFile | None:
    for candidate in _UNICODE_FONTS:
        if Path(candidate).is_file():
            return (candidate, 0)
    sans = _candidates("A")
    return sans[0] if sans else None


def plan_fonts(texts: list[str]) -> FontPlan:
    """The fonts that draw every character of `texts`, and the characters none can."""
    needed = {c for text in texts for c in text if _drawn(c)}
    if all(ord(c) < 256 for c in needed):
        return FontPlan()
    plan = FontPlan(main=_main_font())
    if plan.main is None:  # no Unicode font at all: Helvetica, and refuse the rest
        plan.missing = sorted(c for c in needed if ord(c) >= 256)
        return plan
    remaining = {c for c in needed if ord(c) not in _cmap(plan.main)}
    while remaining:
        char = min(remaining)
        found = next((f for f in _candidates(char) if ord(char) in _cmap(f)
                      and f != plan.main and f not in plan.fallbacks), None)
        if found is None or len(plan.fallbacks) >= _MAX_FALLBACKS:
            plan.missing.append(char)
            remaining.discard(char)
            continue
        plan.fallbacks.append(found)
        remaining = {c for c in remaining if ord(c) not in _cmap(found)}
    plan.missing.sort()
    return plan


def single_font_plan(text: str) -> FontPlan:
    """A plan with one font for all of `text` when one covers it (a watermark is drawn as
    one run, measured in one font); otherwise `plan_fonts`'s."""
    plan = plan_fonts([text])
    if not plan.fallbacks:
        return plan
    needed = {ord(c) for c in text if _drawn(c)}
    for font in plan.fallbacks + [f for c in text if _drawn(c) for f in _candidates(c)]:
        if needed <= _cmap(font):
            return FontPlan(main=font)
    return plan
