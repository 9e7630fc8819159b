"""What each document built-in tells the model: defined in
`harness_core.tools._document_specs` and named here too."""

from __future__ import annotations

from harness_core.tools._document_specs import DOCUMENT_SPECS

__all__ = ["DOCUMENT_SPECS"]
