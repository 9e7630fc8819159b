"""Document built-ins behind pip extras (xlsx, docx, pptx, pdf, barcode, media).

Importing this package imports no document library: a tool's format module (and its
library) is imported on the tool's first call, and availability is a module lookup.
What a toolbox needs to offer the tools (their specs, extras and the lazy `DocumentTool`)
is defined in `harness_core.tools` and re-exported here, so a run that calls no
document tool never imports this package.
"""

from harness_core.documents._contains import DocumentCheck, check_document, document_text
from harness_core.documents._media import reload_media
from harness_core.tools._document_registry import (
    EXTRA_MODULES,
    TOOL_EXTRAS,
    extra_for_suffix,
    install_command,
    is_installed,
    require_extra,
)
from harness_core.tools._document_tools import (
    DocumentTool,
    default_toolbox,
    document_tools,
    unavailable_tools,
)

__all__ = [
    "EXTRA_MODULES",
    "TOOL_EXTRAS",
    "DocumentCheck",
    "DocumentTool",
    "check_document",
    "default_toolbox",
    "document_text",
    "document_tools",
    "extra_for_suffix",
    "install_command",
    "is_installed",
    "reload_media",
    "require_extra",
    "unavailable_tools",
]
