"""The `shell` mechanism: lexer (allowlist) → parser → `Plan` → check → runner; handles.

A line is refused by name (`ShellRefused`, construct and column) or checked whole
against the gate before any process starts; the runner then builds the pipelines
itself (no ``sh -c``), and every process a line started dies when the line ends.
Process handles give a checked line a longer lifetime, never a second way to run.

Names are re-exported lazily (PEP 562): a run that only keeps a handle registry imports
`_handles`, not the lexer, parser, planner and runner a `shell` call needs (about 15 ms
of every run's start-up).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Gate": "harness_core.shell._check",
    "LineChecker": "harness_core.shell._check",
    "DEFAULT_POLL_WINDOW": "harness_core.shell._handles",
    "MAX_LIVE_HANDLES": "harness_core.shell._handles",
    "HandlePoll": "harness_core.shell._handles",
    "HandleRegistry": "harness_core.shell._handles",
    "HandleRow": "harness_core.shell._handles",
    "HandleStart": "harness_core.shell._handles",
    "HandleStore": "harness_core.shell._handles",
    "CONSTRUCTS": "harness_core.shell._lexer",
    "lex": "harness_core.shell._lexer",
    "prepare": "harness_core.shell._line",
    "MAX_TREE_ENTRIES": "harness_core.shell._operands",
    "OPERAND_PROGRAMS": "harness_core.shell._operands",
    "operand_acts": "harness_core.shell._operands",
    "KEYWORDS": "harness_core.shell._parser",
    "SHELL_BUILTINS": "harness_core.shell._parser",
    "parse": "harness_core.shell._parser",
    "Blocked": "harness_core.shell._plan",
    "Chain": "harness_core.shell._plan",
    "CheckedChain": "harness_core.shell._plan",
    "CheckedPipeline": "harness_core.shell._plan",
    "CheckedRedirect": "harness_core.shell._plan",
    "CheckedStage": "harness_core.shell._plan",
    "Connector": "harness_core.shell._plan",
    "Pipeline": "harness_core.shell._plan",
    "Plan": "harness_core.shell._plan",
    "Redirect": "harness_core.shell._plan",
    "RedirectKind": "harness_core.shell._plan",
    "RunPlan": "harness_core.shell._plan",
    "Stage": "harness_core.shell._plan",
    "TIMEOUT_STATUS": "harness_core.shell._runner",
    "Capture": "harness_core.shell._runner",
    "Execution": "harness_core.shell._runner",
    "LineResult": "harness_core.shell._runner",
    "run_line": "harness_core.shell._runner",
    "ProcessTracker": "harness_core.shell._tree",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness_core.shell' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
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
