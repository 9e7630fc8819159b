"""A recorded run as one read-only picture: `RunTrace` and the projections that build it.

`load_trace` and `load_tree` read the store and derive what a reader of the run needs
(steps with their calls, policy events, plan revisions, questions, gates, cost with its
provenance, the files the run changed). They never write to the store and never touch
the terminal: a renderer (the CLI's HTML page, a script) takes the result.
"""

from harness_core.trace._changes import FileChange, FileEdit
from harness_core.trace._model import (
    CallView,
    CostView,
    ModelCost,
    PlanRevision,
    RunTrace,
    StepView,
)
from harness_core.trace._project import OUTPUT_LIMIT, load_trace, load_tree

__all__ = [
    "OUTPUT_LIMIT",
    "CallView",
    "CostView",
    "FileChange",
    "FileEdit",
    "ModelCost",
    "PlanRevision",
    "RunTrace",
    "StepView",
    "load_trace",
    "load_tree",
]
