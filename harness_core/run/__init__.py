"""The run loop: steps, ledger, checkpoints, resume, budgets, context budget, stalls."""

from harness_core.run._budget import Budget
from harness_core.run._context import ContextBudget
from harness_core.run._gate import ApprovalPending, Gate
from harness_core.run._launchers import Launchers, build_launchers
from harness_core.run._loop import INTERRUPTED_OBSERVATION, Runner
from harness_core.run._progress import Progress
from harness_core.run._spec import RunOutcome, RunSpec

__all__ = [
    "INTERRUPTED_OBSERVATION",
    "ApprovalPending",
    "Budget",
    "ContextBudget",
    "Gate",
    "Launchers",
    "Progress",
    "RunOutcome",
    "RunSpec",
    "Runner",
    "build_launchers",
]
