"""Trees of runs: what a run shares with its children, and the tree's one budget.

A spawned child is a run of its own (its own `runs` row, steps and ledger) placed under
its parent. Everything in this module is shared by every run of one tree: the root's
budget (`TreeBudget`, drawn by every run, so the tree never spends more than the root
may), the root's web declaration, the cancel flag and the lock that keeps events and
operator prompts from interleaving when children run in parallel. Nothing here writes
to the terminal.
"""

from __future__ import annotations

import threading
from dataclasses import field, replace

from harness_core._record import record
from harness_core.agents import AgentDef, roster_description
from harness_core.clock import Clock
from harness_core.messages import ToolSpec
from harness_core.policy import Act, ApprovalDecision, Approver, Decision, Policy
from harness_core.providers import WebAccess
from harness_core.run._budget import Budget
from harness_core.run._spec import RunOutcome, RunSpec
from harness_core.store import RunRecord, RunStatus, Store
from harness_core.tool_data import ChildRunData
from harness_core.tools import Toolbox, ToolContext, ToolOutcome
from harness_core.tools._plan_tools import Answer, Responder

__all__ = [
    "SpawnTool",
    "TreeBudget",
    "TreeContext",
    "child_observation",
    "child_spec",
    "root_tree",
    "with_spawn",
]


@record(frozen=False)
class TreeBudget:
    """What a whole tree has drawn from the root's budget (thread-safe).

    A step is taken (checked and counted at once) before its completion is requested,
    so parallel children cannot together overshoot `max_steps`; tokens and cost are
    added when a completion lands, so a tree may end one completion over those caps,
    exactly as a single run may.
    """

    steps: int = 0
    tokens: int = 0
    cost: float = 0.0
    deadline: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take_step(self, budget: Budget, now: float) -> str | None:
        """Count one step against the tree, or say which ceiling is spent."""
        with self.lock:
            if budget.max_cost_usd is not None and self.cost >= budget.max_cost_usd:
                return (f"budget: the tree's cost budget of ${budget.max_cost_usd:g} is spent"
                        f" (${self.cost:.4f} derived from [prices])")
            if budget.max_steps is not None and self.steps >= budget.max_steps:
                return f"budget: the tree's step budget of {budget.max_steps} is spent"
            if budget.max_tokens is not None and self.tokens >= budget.max_tokens:
                return (f"budget: the tree's token budget of {budget.max_tokens} is spent"
                        f" ({self.tokens} used)")
            if self.deadline is not None and now >= self.deadline:
                return f"budget: the tree's wall-clock budget of {budget.wall_seconds:g}s is spent"
            self.steps += 1
            return None

    def add(self, *, steps: int = 0, tokens: int = 0, cost: float = 0.0) -> None:
        """Add what a step drew (a replayed step's count, a completion's tokens and cost)."""
        with self.lock:
            self.steps += steps
            self.tokens += tokens
            self.cost += cost


@record
class TreeContext:
    """What one run of a tree knows about the tree.

    Attributes:
        root_run_id: The tree's root.
        depth: This run's depth (the root is 0).
        budget: The tree's shared draw on the root's budget.
        web: The root's web declaration, copied onto every child (never from arguments).
        stored_policy: Resume every run under the policy it recorded.
        lock: Serialises events and operator prompts across parallel children.
        cancel: Set to stop every run of the tree at its next step boundary.
    """

    root_run_id: str
    depth: int
    budget: TreeBudget
    web: WebAccess | None
    stored_policy: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock)
    cancel: threading.Event = field(default_factory=threading.Event)

    def below(self) -> TreeContext:
        """The context of this run's children."""
        return replace(self, depth=self.depth + 1)


class SpawnTool:
    """`spawn_agent`: offered to the model; the loop runs its calls (several at once)."""

    def __init__(self, roster_text: str) -> None:
        self._spec = ToolSpec(
            "spawn_agent", roster_text,
            {"type": "object",
             "properties": {
                 "agent": {"type": "string", "description": "A named agent (optional)."},
                 "goal": {"type": "string", "description": "The child's whole task."},
             },
             "required": ["goal"], "additionalProperties": False})

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def run(self, args: dict[str, object], ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome("error: spawn_agent starts a child run and only works inside a run"
                           " (io run), not as a single tool call", is_error=True)


def child_spec(
    parent: RunSpec,
    tree: TreeContext,
    *,
    goal: str,
    agent: AgentDef | None,
    record: RunRecord | None = None,
) -> RunSpec:
    """The spec a child runs under: `parent.policy.contain(agent.narrow(parent.policy))`.

    Allows intersect and denies union, so nothing a definition says (or fails to say)
    can widen the parent's boundary. The child keeps the tree's constraints and
    verification gates (it runs them once when it says it is done). On a resume under
    the stored policy, `record`'s
    policy is used as recorded; a resumed child whose definition is gone is held to its
    recorded policy inside the parent's.
    """
    if tree.stored_policy and record is not None:
        policy = Policy.from_json(record.policy)
    elif agent is not None:
        policy = parent.policy.contain(agent.narrow(parent.policy))
    elif record is not None and record.agent is not None:
        policy = parent.policy.contain(Policy.from_json(record.policy))
    else:
        policy = parent.policy
    return replace(
        parent,
        contract=replace(parent.contract, goal=goal),
        policy=policy,
        model=agent.model if agent is not None and agent.model else parent.model,
        web=tree.web,
        session_id=None,
        history=(),
        role=agent.role if agent is not None else None,
    )


def child_observation(outcome: RunOutcome, agent: str | None, final: str) -> ToolOutcome:
    """What the parent sees of a child that ended: its final answer and its status."""
    who = f"child run {outcome.run_id}" + (f" (agent {agent})" if agent else "")
    gates = {True: "passed", False: "failed", None: "none ran"}[outcome.verified]
    data = ChildRunData(outcome.run_id, agent, outcome.status.value, outcome.steps,
                        outcome.verified, final)
    if outcome.status is RunStatus.FINISHED:
        text = f"{who} finished in {outcome.steps} step(s); gates: {gates}.\n\n{final}"
        return ToolOutcome(text, data=data)
    text = (f"{who} ended {outcome.status.value}: {outcome.reason}; gates: {gates}."
            + (f"\n\nIts last words:\n{final}" if final else ""))
    return ToolOutcome(text, is_error=True, data=data)


class SerialApprover:
    """An approver that parallel children share: one prompt at a time."""

    def __init__(self, inner: Approver, lock: threading.RLock) -> None:
        self._inner = inner
        self._lock = lock

    def decide(self, act: Act, decision: Decision) -> ApprovalDecision | None:
        with self._lock:
            return self._inner.decide(act, decision)


class SerialResponder:
    """A responder that parallel children share: one question at a time."""

    def __init__(self, inner: Responder, lock: threading.RLock) -> None:
        self._inner = inner
        self._lock = lock

    def answer(self, question: str) -> Answer | None:
        with self._lock:
            return self._inner.answer(question)


def root_tree(
    store: Store, clock: Clock, run_id: str, spec: RunSpec, *, resumed: bool,
    wall_before: float, stored_policy: bool, cancel: threading.Event,
) -> TreeContext:
    """The tree a root run starts (or, resumed, what its tree has drawn so far)."""
    budget = TreeBudget()
    if resumed:
        budget.steps, budget.tokens = store.tree_usage(run_id)
        if spec.cost_of is not None and spec.budget.max_cost_usd is not None:
            for record in store.tree_runs(run_id):
                for step in store.steps(record.run_id):
                    cost = spec.cost_of(step.model_served or spec.model,
                                        step.usage)
                    budget.cost += cost or 0.0
    if spec.budget.wall_seconds is not None:
        budget.deadline = clock.monotonic() + spec.budget.wall_seconds - wall_before
    return TreeContext(root_run_id=run_id, depth=0, budget=budget, web=spec.web,
                       stored_policy=stored_policy, cancel=cancel)


def with_spawn(toolbox: Toolbox, spec: RunSpec) -> Toolbox:
    """`toolbox` with `spawn_agent`, its description naming the roster."""
    combined = toolbox.with_tools(())
    if "spawn_agent" not in combined.names():
        combined.add(SpawnTool(roster_description(spec.agents)), builtin=True)
    return combined
