"""What one drive of a run carries between the loop's phases: the drive's state, the
operator's reply a resumed drive brings, and the control-flow stop that ends a drive."""

from __future__ import annotations

from dataclasses import field

from harness_core._record import record
from harness_core.hooks import HookRunner
from harness_core.run._compact import Compactor
from harness_core.run._context import ContextBudget
from harness_core.run._guard import Guard
from harness_core.run._launchers import Launchers
from harness_core.run._ledger import StepWrites
from harness_core.run._progress import Progress
from harness_core.run._snapshots import SnapshotKeeper
from harness_core.run._spec import RunSpec
from harness_core.run._tree import TreeContext
from harness_core.store import Pause, RunStatus
from harness_core.tools import Toolbox, ToolContext

__all__ = ["OperatorReply", "Resumption", "_Drive", "_Stop"]


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


@record
class OperatorReply:
    """The operator's decision on the pause a resume answers (`io resume --approve`,
    `--deny`, `--answer`), carried as one value from `Runner.resume` to the paused call
    (or to the child that waits)."""

    pause: Pause | None = None
    """What the run waited for (None: it was not paused)."""
    approve: bool | None = None
    answer: str | None = None

    def at(self, step: int, index: int) -> bool:
        """Whether the run paused at call `index` of `step` (where this reply applies)."""
        return (self.pause is not None and self.pause.step == step
                and self.pause.call_index == index)

    def for_call(self, step: int, index: int) -> OperatorReply | None:
        """This reply when it applies to call `index` of `step`, else None."""
        return self if self.at(step, index) else None


@record
class Resumption:
    """Where a resumed drive starts: what the run recorded of its wall time and tokens,
    and the operator's reply to its pause."""

    reply: OperatorReply
    wall_before: float = 0.0
    tokens_before: int = 0


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
    writes: StepWrites | None = None
    """The ledger writes of the step in progress (None: between steps)."""
    compactor: Compactor | None = None
    snapshots: SnapshotKeeper | None = None
    hooks: HookRunner = field(init=False)
    answer_retries: int = 0
    pending_pause: Pause | None = None
    """The pause this drive resumed, until its call takes the operator's decision: a
    drive that stops before then leaves the run paused, never "outcome unknown"."""
