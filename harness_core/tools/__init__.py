"""Tools: the `Tool` seam, the `Toolbox`, and the built-ins."""

from harness_core.tools._base import (
    DEFAULT_OUTPUT_CAP,
    ActGate,
    PauseRequested,
    Refusal,
    Resumable,
    RunServices,
    Tool,
    ToolContext,
    ToolOutcome,
)
from harness_core.tools._doc_limits import DocumentLimits
from harness_core.tools._document_registry import TOOL_EXTRAS
from harness_core.tools._document_tools import default_toolbox
from harness_core.tools._files import measure_edit
from harness_core.tools._git import GitSettings, GitStatus, StatusEntry
from harness_core.tools._toolbox import RESERVED_TOOL_NAMES, Toolbox

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "DocumentLimits",
    "GitSettings",
    "GitStatus",
    "RESERVED_TOOL_NAMES",
    "TOOL_EXTRAS",
    "ActGate",
    "PauseRequested",
    "Refusal",
    "Resumable",
    "RunServices",
    "StatusEntry",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "Toolbox",
    "default_toolbox",
    "measure_edit",
]
