"""The run loop: steps, ledger, checkpoints, resume, budgets, context budget, stalls.

Names are re-exported lazily, so importing `harness_core.run._budget` (as config does)
does not load the whole loop.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {
    "INTERRUPTED_OBSERVATION": "harness_core.run._loop",
    "check_answer_schema": "harness_core.run._answer",
    "schema_instructions": "harness_core.run._answer",
    "ApprovalPending": "harness_core.run._guard",
    "Budget": "harness_core.run._budget",
    "ContextBudget": "harness_core.run._context",
    "Gate": "harness_core.run._guard",
    "Guard": "harness_core.run._guard",
    "GateInputs": "harness_core.run._inputs",
    "InputChange": "harness_core.run._inputs",
    "gate_inputs": "harness_core.run._inputs",
    "protect_gate_inputs": "harness_core.run._inputs",
    "Launchers": "harness_core.run._launchers",
    "Progress": "harness_core.run._progress",
    "RunOutcome": "harness_core.run._spec",
    "RunSpec": "harness_core.run._spec",
    "Runner": "harness_core.run._loop",
    "build_launchers": "harness_core.run._launchers",
    "TreeOptions": "harness_core.run._entry",
    "resume_tree": "harness_core.run._entry",
    "resume_tree_from_stored_policy": "harness_core.run._entry",
    "resume_tree_with_answer": "harness_core.run._entry",
    "run_tree": "harness_core.run._entry",
    "sweep_leftovers": "harness_core.run._sweep",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness_core.run' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:
    from harness_core.run._answer import check_answer_schema, schema_instructions
    from harness_core.run._budget import Budget
    from harness_core.run._context import ContextBudget
    from harness_core.run._entry import (
        TreeOptions,
        resume_tree,
        resume_tree_from_stored_policy,
        resume_tree_with_answer,
        run_tree,
    )
    from harness_core.run._guard import ApprovalPending, Gate, Guard
    from harness_core.run._inputs import GateInputs, InputChange, gate_inputs, protect_gate_inputs
    from harness_core.run._launchers import Launchers, build_launchers
    from harness_core.run._loop import INTERRUPTED_OBSERVATION, Runner
    from harness_core.run._progress import Progress
    from harness_core.run._spec import RunOutcome, RunSpec
    from harness_core.run._sweep import sweep_leftovers

    __all__ = [  # noqa: F811 - the same list, for type checkers
        "INTERRUPTED_OBSERVATION", "ApprovalPending", "Budget", "ContextBudget", "Gate",
        "GateInputs", "Guard", "InputChange", "Launchers", "Progress", "RunOutcome", "RunSpec", "Runner",
        "TreeOptions",
        "build_launchers", "check_answer_schema", "gate_inputs", "protect_gate_inputs",
        "resume_tree", "schema_instructions",
        "resume_tree_from_stored_policy", "resume_tree_with_answer", "run_tree",
        "sweep_leftovers",
    ]
