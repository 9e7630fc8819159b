"""`DocumentTool` and the default toolbox: defined in `harness_core.tools._document_tools`
(a run offers the document tools without importing this package) and named here too."""

from __future__ import annotations

from harness_core.tools._document_tools import (
    DocumentTool,
    default_toolbox,
    document_tools,
    unavailable_tools,
)

__all__ = ["DocumentTool", "default_toolbox", "document_tools", "unavailable_tools"]
