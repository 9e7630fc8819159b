"""What one drive of a run carries between the loop's phases: the drive's state, a
step's pending checkpoint, and the control-flow stop that ends a drive."""

from __future__ import annotations

from dataclasses import field

from harness_core._record import record
from harness_core.hooks import HookRunner
from harness_core.run._compact import Compactor
from harness_core.run._context import ContextBudget
from harness_core.run._guard import Guard
from harness_core.run._launchers import Launchers
from harness_core.run._progress import Progress
from harness_core.run._snapshots import SnapshotKeeper
from harness_core.run._spec import RunSpec
from harness_core.run._tree import TreeContext
from harness_core.store import Pause, RunStatus
from harness_core.tools import Toolbox, ToolContext

__all__ = ["_Drive", "_StepEnd", "_Stop"]


class _Stop(Exception):  # noqa: N818 - internal control flow
    def __init__(self, status: RunStatus, reason: str, pause: Pause | None = None, *,
                 answered: bool = False):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.pause = pause
        # True only when the model gave its final answer and the checks accepted it: a
        # stopped, paused, interrupted or errored run has no answer (its last text was
        # an in-between message), nor has one whose answer the schema refused.
        self.answered = answered


@record(frozen=False)
class _StepEnd:
    """A step's checkpoint, written with its last call's observation when it can be."""

    step: int
    tokens: int
    armed: bool = False
    """The step's last call is next, on the sequential path (not a spawn)."""
    at: float | None = None
    """When the checkpoint was written with the observation (None: not yet)."""


@record(frozen=False)
class _Drive:
    run_id: str
    spec: RunSpec
    guard: Guard
    ctx: ToolContext
    launchers: Launchers
    context: ContextBudget
    progress: Progress
    started: float
    wall_before: float
    tokens_used: int
    tree: TreeContext
    changed: set[str] = field(default_factory=lambda: set())
    verified: bool | None = None
    toolbox: Toolbox = field(default_factory=Toolbox)
    cost_used: float = 0.0
    unpriced_warned: bool = False
    unpriced_model: str | None = None
    """A model whose call the cost budget could not price: the run stops at the next step."""
    recorded_upto: int = -1
    """The highest step that may already be recorded (a fresh drive: none; a resumed one:
    any). Steps past it were never recorded, so the loop does not ask the store."""
    step_end: _StepEnd | None = None
    compactor: Compactor | None = None
    snapshots: SnapshotKeeper | None = None
    hooks: HookRunner = field(init=False)
    answer_retries: int = 0
    pending_pause: Pause | None = None
    """The pause this drive resumed, until its call takes the operator's decision: a
    drive that stops before then leaves the run paused, never "outcome unknown"."""
