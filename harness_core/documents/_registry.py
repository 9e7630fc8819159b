"""Which document tool needs which pip extra: defined in
`harness_core.tools._document_registry` (a toolbox offers the document tools without
this package) and named here too."""

from __future__ import annotations

from harness_core.tools._document_registry import (
    EXTRA_MODULES,
    TOOL_EXTRAS,
    TOOL_IMPLEMENTATIONS,
    extra_for_suffix,
    install_command,
    is_installed,
    require_extra,
)

__all__ = [
    "EXTRA_MODULES",
    "TOOL_EXTRAS",
    "TOOL_IMPLEMENTATIONS",
    "extra_for_suffix",
    "install_command",
    "is_installed",
    "require_extra",
]
