"""Which document tool needs which pip extra, and whether that extra is installed.

Nothing here imports a document library: availability is a `find_spec` lookup, so
building a toolbox (and `io --help`) never pays for openpyxl, pypdf or Pillow, nor for
`harness_core.documents`. A tool's implementation is named as ``"module:function"``
and imported on its first call.
"""

from __future__ import annotations

import importlib.util
from functools import cache

from harness_core.errors import MissingExtra

__all__ = [
    "EXTRA_MODULES",
    "TOOL_EXTRAS",
    "TOOL_IMPLEMENTATIONS",
    "extra_for_suffix",
    "install_command",
    "is_installed",
    "require_extra",
]

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "xlsx": ("openpyxl",),
    "docx": ("docx", "lxml"),
    "pptx": ("pptx",),
    "pdf": ("pypdf", "fpdf"),
    "barcode": ("zxingcpp", "PIL"),
    "media": ("PIL",),
}
"""The importable modules each extra installs (all must be present)."""

TOOL_EXTRAS: dict[str, str] = {
    "xlsx_read": "xlsx",
    "xlsx_write": "xlsx",
    "xlsx_edit": "xlsx",
    "docx_read": "docx",
    "docx_write": "docx",
    "pptx_read": "pptx",
    "pdf_read": "pdf",
    "pdf_write": "pdf",
    "pdf_watermark": "pdf",
    "pdf_fill_form": "pdf",
    "barcode_decode": "barcode",
    "view_image": "media",
}
"""Each document built-in and the extra it needs."""

TOOL_IMPLEMENTATIONS: dict[str, str] = {
    "xlsx_read": "harness_core.documents._xlsx:read",
    "xlsx_write": "harness_core.documents._xlsx:write",
    "xlsx_edit": "harness_core.documents._xlsx:edit",
    "docx_read": "harness_core.documents._docx:read",
    "docx_write": "harness_core.documents._docx:write",
    "pptx_read": "harness_core.documents._pptx:read",
    "pdf_read": "harness_core.documents._pdf:read",
    "pdf_write": "harness_core.documents._pdf_write:write",
    "pdf_watermark": "harness_core.documents._pdf_write:watermark",
    "pdf_fill_form": "harness_core.documents._pdf_form:fill_form",
    "barcode_decode": "harness_core.documents._barcode:decode",
    "view_image": "harness_core.documents._image:view_image",
}

_SUFFIX_EXTRAS = {".xlsx": "xlsx", ".xlsm": "xlsx", ".docx": "docx", ".pptx": "pptx",
                  ".pdf": "pdf"}


@cache
def is_installed(extra: str) -> bool:
    """Whether every module of `extra` can be imported (looked up, not imported)."""
    return all(importlib.util.find_spec(name) is not None for name in EXTRA_MODULES[extra])


def install_command(extra: str) -> str:
    """The exact command that installs `extra`."""
    return f"pip install 'io-harness[{extra}]'"


def require_extra(extra: str, what: str) -> None:
    """Raise `MissingExtra` naming `what` when `extra` is not installed."""
    if not is_installed(extra):
        raise MissingExtra(what, extra)


def extra_for_suffix(path: str) -> str | None:
    """The extra that reads a document named `path`, by its suffix (None: not a document)."""
    dot = path.rfind(".")
    return _SUFFIX_EXTRAS.get(path[dot:].lower()) if dot >= 0 else None
