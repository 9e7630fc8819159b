"""The shapes of a recorded run as a reader sees it. Frozen: a trace is a set of facts.

Every number keeps the provenance the store gives it: a token count is the provider's
report (None when it reported nothing, which is not zero), a latency is the harness's
own clock, a TTFT is None where nothing measured it, and a cost is derived here from
the operator's price table, never read back from the store.
"""

from __future__ import annotations

from dataclasses import field
from datetime import date
from typing import Any

from harness_core._record import record
from harness_core.store import (
    CompactionRecord,
    DriveRecord,
    OperatorInputRecord,
    PolicyEventRecord,
    RunRecord,
    VerificationRecord,
)
from harness_core.store._questions import QuestionRecord
from harness_core.trace._changes import FileChange

__all__ = ["CallView", "CostView", "ModelCost", "PlanRevision", "RunTrace", "StepView"]


@record
class CallView:
    """One tool call: what the model asked for and what it observed.

    Attributes:
        step: The step that asked for it.
        index: Its place in the step.
        call_id: The provider's id for the call.
        name: The tool.
        arguments: The arguments as recorded (``{"__raw__": text}`` when they were not JSON).
        output: The observation, cut to the projection's limit; None when only the intent
            was recorded (the harness stopped while it ran).
        output_chars: The observation's full length in characters.
        is_error: The observation is an error (a failed command, a refusal, bad arguments).
        exit_status: A command's exit status, when the tool ran one.
        sandbox: The sandbox backend that ran the command, when the tool ran one.
        refused: The policy refusal (act or construct, reason, rule, layer), if refused.
        child_run_id: The run a `spawn_agent` call started.
    """

    step: int
    index: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    output: str | None
    output_chars: int
    is_error: bool
    exit_status: int | None = None
    sandbox: str | None = None
    refused: dict[str, Any] | None = None
    child_run_id: str | None = None

    @property
    def is_truncated(self) -> bool:
        """Whether `output` is shorter than what the store holds."""
        return self.output is not None and len(self.output) < self.output_chars

    @property
    def has_observation(self) -> bool:
        return self.output is not None


@record
class StepView:
    """One committed completion and the calls it asked for.

    Attributes:
        step: Its index (0-based).
        created_at: When the completion was recorded (ISO UTC).
        text: What the model said (hostile input: a renderer must escape it).
        provider: The provider that served it.
        model: The model that served it (not the one asked for).
        usage: Token counts as reported (None where not reported).
        latency_ms: The harness's wall clock around the provider call.
        ttft_ms: Time to the first token; None where nothing measured it.
        cost_usd: Derived from the price table; None when unpriced.
        calls: Its tool calls, in order.
    """

    step: int
    created_at: str
    text: str
    provider: str | None
    model: str | None
    usage: dict[str, int | None]
    latency_ms: float | None
    ttft_ms: float | None
    cost_usd: float | None
    calls: tuple[CallView, ...] = ()


@record
class PlanRevision:
    """The agent's whole plan as one `todo_write` left it.

    Attributes:
        step: The step of the call that wrote it.
        revision: The plan's revision number (1 for the first write).
        items: Each item's ``content`` and ``status`` (the agent's claim, never checked).
    """

    step: int
    revision: int | None
    items: tuple[dict[str, str], ...]


@record
class ModelCost:
    """The calls one model served in the run and what they cost.

    Attributes:
        model: The model that served the calls.
        calls: Completions it served.
        prompt_tokens: Sum of reported prompt tokens (None when none reported).
        completion_tokens: Sum of reported completion tokens (None when none reported).
        cost_usd: Derived cost of its priced calls; None when none could be priced.
        unpriced_calls: Calls no cost could be derived for.
    """

    model: str
    calls: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    unpriced_calls: int


@record
class CostView:
    """What the run cost, and how far to trust it.

    Attributes:
        as_of: The price table's date; None when no `[prices]` table was given.
        total_usd: Derived cost of the priced calls; None when no call was priced.
        priced_calls: Calls a cost was derived for.
        unpriced_calls: Calls without a price or without reported counts; when any,
            `total_usd` is a floor, not a total.
        by_model: One entry per served model.
    """

    as_of: date | None
    total_usd: float | None
    priced_calls: int
    unpriced_calls: int
    by_model: tuple[ModelCost, ...] = ()

    @property
    def is_floor(self) -> bool:
        return self.unpriced_calls > 0


@record
class RunTrace:
    """One recorded run, projected for reading.

    Attributes:
        run: The run's record (status, goal, budgets drawn, sandbox, parent).
        depth: 0 for the run asked for; a child of a tree is one deeper than its parent.
        steps: Committed steps with their calls.
        orphan_calls: Calls whose step has no committed completion (rare: a crash).
        policy_events: Every refusal and approver decision, with rule and layer.
        plan: The plan after each successful `todo_write`, oldest first.
        questions: What the agent asked, the answer, and who answered.
        gates: Every verification gate result.
        cost: Cost with its provenance.
        changes: The files the run's file tools changed, with what is known of each diff.
        commands_ran: How many `exec`/`shell` calls ran; the files they changed are
            not recorded, so `changes` cannot include them.
        drives: Each drive of the run (start, resumes): when and which process.
        children: Run ids of the runs this run spawned.
        compactions: Each compaction (`[context] strategy = "compact"`): before which
            step, the history's size against the threshold, the summary and its usage.
        operator_inputs: What the operator told the run (steer, interrupt, resume,
            approve, deny, answer), when, and where each landed.
    """

    run: RunRecord
    depth: int
    steps: tuple[StepView, ...]
    policy_events: tuple[PolicyEventRecord, ...]
    plan: tuple[PlanRevision, ...]
    questions: tuple[QuestionRecord, ...]
    gates: tuple[VerificationRecord, ...]
    cost: CostView
    changes: tuple[FileChange, ...]
    commands_ran: int = 0
    orphan_calls: tuple[CallView, ...] = ()
    drives: tuple[DriveRecord, ...] = ()
    children: tuple[str, ...] = field(default=())
    compactions: tuple[CompactionRecord, ...] = ()
    operator_inputs: tuple[OperatorInputRecord, ...] = ()

    @property
    def refusals(self) -> tuple[PolicyEventRecord, ...]:
        """The policy events that refused an act."""
        return tuple(e for e in self.policy_events if e.verdict == "deny")

    @property
    def calls(self) -> tuple[CallView, ...]:
        """Every call of the run, in order."""
        return tuple(c for s in self.steps for c in s.calls) + self.orphan_calls
