"""The `shell` mechanism: lexer (allowlist) → parser → `Plan` → check → runner; handles.

A line is refused by name (`ShellRefused`, construct and column) or checked whole
against the gate before any process starts; the runner then builds the pipelines
itself (no ``sh -c``), and every process a line started dies when the line ends.
Process handles give a checked line a longer lifetime, never a second way to run.
"""

from harness_core.shell._check import Gate, LineChecker
from harness_core.shell._handles import (
    DEFAULT_POLL_WINDOW,
    MAX_LIVE_HANDLES,
    HandlePoll,
    HandleRegistry,
    HandleRow,
    HandleStart,
    HandleStore,
)
from harness_core.shell._lexer import CONSTRUCTS, lex
from harness_core.shell._line import prepare
from harness_core.shell._operands import MAX_TREE_ENTRIES, OPERAND_PROGRAMS, operand_acts
from harness_core.shell._parser import KEYWORDS, SHELL_BUILTINS, parse
from harness_core.shell._plan import (
    Blocked,
    Chain,
    CheckedChain,
    CheckedPipeline,
    CheckedRedirect,
    CheckedStage,
    Connector,
    Pipeline,
    Plan,
    Redirect,
    RedirectKind,
    RunPlan,
    Stage,
)
from harness_core.shell._runner import TIMEOUT_STATUS, Capture, Execution, LineResult, run_line
from harness_core.shell._tree import ProcessTracker

__all__ = [
    "CONSTRUCTS",
    "DEFAULT_POLL_WINDOW",
    "KEYWORDS",
    "MAX_LIVE_HANDLES",
    "MAX_TREE_ENTRIES",
    "OPERAND_PROGRAMS",
    "SHELL_BUILTINS",
    "TIMEOUT_STATUS",
    "Blocked",
    "Capture",
    "Chain",
    "CheckedChain",
    "CheckedPipeline",
    "CheckedRedirect",
    "CheckedStage",
    "Connector",
    "Execution",
    "Gate",
    "HandlePoll",
    "HandleRegistry",
    "HandleRow",
    "HandleStart",
    "HandleStore",
    "LineChecker",
    "LineResult",
    "Pipeline",
    "Plan",
    "ProcessTracker",
    "Redirect",
    "RedirectKind",
    "RunPlan",
    "Stage",
    "lex",
    "operand_acts",
    "parse",
    "prepare",
    "run_line",
]
