"""The `Tool` seam and what a tool receives: a `ToolContext`.

A tool never decides policy itself: every act goes through `ctx.gate.check(act)`, the
run's one gate, which consults the policy and the approver and records refusals. A
refusal or a failure is returned as a `ToolOutcome` (data for the model), never raised
out of the loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol

from harness_core._record import record
from harness_core.clock import Clock
from harness_core.messages import Media, ToolSpec
from harness_core.policy import Act, Decision
from harness_core.sandbox import ProcessLauncher
from harness_core.tool_data import OpenData, Refusal, ToolData
from harness_core.workspace import Workspace

if TYPE_CHECKING:
    from harness_core.shell import HandleRegistry
    from harness_core.tools._answers import PlanStore, Responder
    from harness_core.tools._doc_limits import DocumentLimits
    from harness_core.tools._git import GitSettings

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "PauseRequested",
    "ActGate",
    "Refusal",
    "Resumable",
    "RunServices",
    "Tool",
    "ToolContext",
    "ToolOutcome",
]

DEFAULT_OUTPUT_CAP = 16_384
"""Bytes of output a tool returns to the model before truncating (stated with a count)."""


class PauseRequested(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a tool (or the gate) when the run must pause for the operator.

    The loop catches it at the tool call, records the pause (the call's intent stays
    without an observation) and ends the drive with status ``paused`` (exit 4).

    Attributes:
        kind: ``approval`` or ``question``.
        payload: JSON details recorded with the pause (the act, the question …).
    """

    def __init__(self, kind: str, payload: dict[str, Any]) -> None:
        super().__init__(f"paused for {kind}")
        self.kind = kind
        self.payload = payload


@record
class ToolOutcome:
    """What a tool call produced.

    Attributes:
        output: The text the model sees.
        is_error: The call failed or was refused.
        data: The tool's typed record (`ShellData`, `FileWritten` …; None: none), for
            the ledger and `io tool --json`. A plain mapping given here (a caller's own
            tool) is kept as `OpenData`.
        refused: Set when the policy or the lexer refused the call.
        changed: Whether the call may have changed the workspace.
        media: Images for the model to see with `output` (`view_image`).
    """

    output: str
    is_error: bool = False
    data: ToolData | None = None
    refused: Refusal | None = None
    changed: bool = False
    media: tuple[Media, ...] = ()

    def __post_init__(self) -> None:
        data: object = self.data
        if isinstance(data, Mapping):
            object.__setattr__(self, "data", OpenData(dict(data)) if data else None)


class ActGate(Protocol):
    """The run's one policy guard (`harness_core.run.Guard`). Records every refusal and
    approver decision."""

    def check(self, act: Act) -> Decision:
        """Decide `act`: the policy, then the approver for an `ask`.

        Returns the final decision (allow or deny). May raise the loop's own
        control-flow signal to pause the run for an approval; tools must let it pass.
        """
        ...

    def refuse(self, act: Act, reason: str, *, rule: str = "workspace-boundary") -> Decision:
        """Record a built-in refusal and return the deny decision, named `rule` in layer
        `builtin`: by default the workspace resolver's (a path outside the root, through a
        symlink or otherwise)."""
        ...


@record(frozen=False)
class RunServices:
    """Run-scoped services the built-in tools reach by type, each None when the caller
    has none (`io tool` outside a run has no plan and no one to ask).

    Attributes:
        handles: The run's process handles (`shell_start`, `shell_poll`, `shell_kill`).
        todos: Where `todo_write` keeps the plan (the run's store).
        responder: Who answers `ask_question` (None: the run pauses for an answer).
        git: How the git built-ins run (None: their defaults).
        documents: How far the document tools inflate a file (None: their defaults).
    """

    handles: HandleRegistry | None = None
    todos: PlanStore | None = None
    responder: Responder | None = None
    git: GitSettings | None = None
    documents: DocumentLimits | None = None


@record(frozen=False)
class ToolContext:
    """What a tool call gets.

    Attributes:
        workspace: The one path resolver and file I/O.
        gate: The policy guard (`harness_core.run.Guard`); the field keeps its old name.
        launcher: Starts commands (sandboxed or not, as selected).
        clock: Time.
        run_id: The run this call belongs to ("" for `io tool`).
        output_cap: Bytes of output returned before truncation.
        exec_timeout: Seconds before a foreground command is killed.
        services: The run-scoped services the built-in tools use, by type.
        extras: Named services a caller's own tools need (`Runner(extras=...)`); the
            built-in tools never read it.
        call_ref: ``<run>/<step>/<call>`` of the call being run ("" outside a run): the
            durable name a tool can leave on its effect (git_commit's trailer).
    """

    workspace: Workspace
    gate: ActGate
    launcher: ProcessLauncher
    clock: Clock
    run_id: str = ""
    output_cap: int = DEFAULT_OUTPUT_CAP
    exec_timeout: float = 120.0
    services: RunServices = field(default_factory=RunServices)
    extras: dict[str, Any] = field(default_factory=lambda: {})
    call_ref: str = ""


class Resumable(Protocol):
    """A tool that can tell, after a crash, whether a call of its own took effect.

    The loop calls `resume` instead of `run` for a call whose intent was recorded but
    whose observation was not; a tool without it gets the "outcome unknown" observation.
    """

    def resume(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Report the effect if it happened (by a durable marker), else run the call."""
        ...


class Tool(Protocol):
    """A tool the model may call."""

    @property
    def spec(self) -> ToolSpec:
        """Name, description and JSON schema shown to the model."""
        ...

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Run one call. Raise `ToolError` only for malformed calls; refusals are outcomes."""
        ...
