"""Typed rows the store hands back. Frozen: a record is a fact, not a handle."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from harness_core.messages import ToolCall, Usage

__all__ = [
    "CheckpointRecord",
    "LedgerEntry",
    "PolicyEventRecord",
    "RunRecord",
    "RunStatus",
    "StepRecord",
    "VerificationRecord",
]


class RunStatus(Enum):
    """Where a run stands. May grow."""

    RUNNING = "running"
    """A driver is (or was, until it crashed) taking steps."""
    PAUSED = "paused"
    """Waiting for an answer or an approval; `io resume` continues it."""
    FINISHED = "finished"
    """The model finished and every verification gate passed."""
    FAILED = "failed"
    """Finished with a failed gate, or the run failed."""
    STOPPED = "stopped"
    """A budget or the stall detector stopped it."""
    INTERRUPTED = "interrupted"
    """Ctrl-C or `io interrupt`; checkpointed first, resumable."""
    ERRORED = "errored"
    """Stopped by an error (a provider outage, an exhausted replay); resumable."""

    @property
    def is_terminal(self) -> bool:
        """Whether resuming it makes no provider call."""
        return self in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.STOPPED)


@dataclass(frozen=True)
class RunRecord:
    """One row of `runs`."""

    run_id: str
    created_at: str
    updated_at: str
    status: RunStatus
    goal: str
    workspace: str
    model: str | None
    session_id: str | None
    parent_run_id: str | None
    settings: dict[str, Any]
    policy: dict[str, Any]
    sandbox: dict[str, Any] | None
    exit_code: int | None
    reason: str | None
    pause: dict[str, Any] | None
    owner_pid: int | None
    steps_used: int
    tokens_used: int
    wall_used: float
    depth: int = 0
    root_run_id: str = ""
    agent: str | None = None


@dataclass(frozen=True)
class StepRecord:
    """A committed completion: the assistant's text and the calls it asked for.

    Attributes:
        step_index: The step.
        created_at: When it was committed (ISO 8601, UTC).
        text: The assistant's text.
        tool_calls: The calls it asked for, in order.
        provider: Which provider answered (None before one was recorded).
        model_served: The model that served it, as the vendor reported it.
        usage: The token counts as reported (a field the vendor left out is None).
        latency_ms: The harness's wall clock around the call.
        ttft_ms: Time to the first streamed token (None when nothing streamed).
    """

    step_index: int
    created_at: str
    text: str
    tool_calls: tuple[ToolCall, ...]
    provider: str | None
    model_served: str | None
    usage: Usage
    latency_ms: float | None
    ttft_ms: float | None


@dataclass(frozen=True)
class LedgerEntry:
    """A tool call's intent and, once it ran, its observation."""

    step_index: int
    call_index: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    observation: str | None
    is_error: bool
    data: dict[str, Any] | None

    @property
    def has_observation(self) -> bool:
        return self.observation is not None


@dataclass(frozen=True)
class CheckpointRecord:
    """The state committed with a step."""

    step_index: int
    format: int
    state: dict[str, Any]


@dataclass(frozen=True)
class PolicyEventRecord:
    """A refusal or an approver decision, with the rule and layer that decided."""

    step_index: int | None
    created_at: str
    act: str
    target: str
    verdict: str
    reason: str
    rule: str | None
    layer: str | None
    decided_by: str


@dataclass(frozen=True)
class VerificationRecord:
    """One run of one verification gate.

    Attributes:
        step_index: The step after which it ran.
        criterion: The command line (or the gate's kind).
        passed: Whether it reported success.
        exit_status: The command's exit status (None when killed or not a command).
        output: Its output, bounded.
        duration_seconds: How long it ran (None on rows recorded before 0006).
        sandbox: The backend it ran in (``linux``, ``floor``, ``off`` …).
        inputs: Its inputs' fate: ``inputs`` (patterns), ``editable``, ``untouched``
            (None: nothing recorded to compare with) and ``modified`` (files).
    """

    step_index: int
    criterion: str
    passed: bool
    exit_status: int | None
    output: str
    duration_seconds: float | None = None
    sandbox: str | None = None
    inputs: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The gates report entry (`run_finished`, `io trace --json`)."""
        inputs = self.inputs or {}
        return {
            "step": self.step_index, "command": self.criterion, "passed": self.passed,
            "exit_status": self.exit_status,
            "duration_seconds": None if self.duration_seconds is None
            else round(self.duration_seconds, 3),
            "sandbox": self.sandbox, "inputs": inputs.get("inputs"),
            "editable": inputs.get("editable"), "inputs_untouched": inputs.get("untouched"),
            "modified_inputs": inputs.get("modified", []),
        }
