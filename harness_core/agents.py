"""Agent definitions (`[agents.NAME]`): a named role that can only narrow.

A definition may pick a model and a role text and add deny rules for writes and
network; it has no way to allow anything, so a run under an agent is never wider than
the run without it. This module only transforms values; it starts nothing and reads
no file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from harness_core._record import record
from harness_core.policy import Policy
from harness_core.providers import ProviderConfig

__all__ = ["AgentDef", "AgentLimits", "roster_description", "spawn_refusal"]


@record
class AgentDef:
    """One named agent definition.

    Attributes:
        name: The name it is defined under (``reviewer`` for `[agents.reviewer]`).
        model: The model it runs on, or None to keep the caller's.
        role: Text given to the model as its role, or None.
        deny_write: Path patterns it may not write, on top of the policy.
        deny_net: Host patterns it may not dial, on top of the policy.
    """

    name: str
    model: str | None = None
    role: str | None = None
    deny_write: tuple[str, ...] = ()
    deny_net: tuple[str, ...] = ()

    def narrow(self, policy: Policy) -> Policy:
        """`policy` with this agent's denies added, in layer ``agent:<name>``.

        Raises:
            PolicyError: A pattern is empty or malformed.
        """
        return policy.narrowed(
            deny_write=self.deny_write, deny_net=self.deny_net, layer=f"agent:{self.name}"
        )

    def provider(self, base: ProviderConfig) -> ProviderConfig:
        """`base` with this agent's model, when it names one (fallbacks unchanged)."""
        return base if self.model is None else replace(base, model=self.model)


@record
class AgentLimits:
    """The `[agents]` limits on a tree of runs.

    Attributes:
        max_depth: The deepest a child may sit (the root is depth 0, its children 1).
        max_children: Children one run may spawn over its whole life.
        parallel: Children of one completion that run at the same time.
    """

    max_depth: int = 3
    max_children: int = 16
    parallel: int = 4

    def to_json(self) -> dict[str, int]:
        """The limits as recorded in a run's settings."""
        return {"max_depth": self.max_depth, "max_children": self.max_children,
                "parallel": self.parallel}


def spawn_refusal(
    arguments: object,
    *,
    roster: Mapping[str, AgentDef],
    limits: AgentLimits,
    depth: int,
    spawned: int,
) -> str | None:
    """Why a `spawn_agent` call cannot start a child, or None when it can.

    Args:
        arguments: The call's arguments as the model sent them.
        roster: The named agent definitions.
        limits: The tree's limits.
        depth: The depth the child would have.
        spawned: Children the calling run has already spawned.

    Returns:
        One line for the model naming what is wrong (and what exists), or None.
    """
    if not isinstance(arguments, dict):
        return "spawn_agent: arguments must be a JSON object with `goal` (and optional `agent`)"
    args: dict[str, object] = {str(k): v for k, v in arguments.items()}  # pyright: ignore[reportUnknownVariableType]
    extra = sorted(set(args) - {"agent", "goal"})
    if extra:
        return f"spawn_agent: unknown argument(s) {', '.join(extra)} (expected: agent, goal)"
    goal = args.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        return "spawn_agent: `goal` must be a non-empty string"
    agent = args.get("agent")
    if agent is not None and (not isinstance(agent, str) or agent not in roster):
        known = ", ".join(sorted(roster)) or "none are defined (omit `agent`)"
        return f"spawn_agent: no agent named {agent!r}; available: {known}"
    if depth > limits.max_depth:
        return (f"spawn_agent: refused: a child here would sit at depth {depth}, deeper than"
                f" [agents] max_depth = {limits.max_depth}")
    if spawned >= limits.max_children:
        return (f"spawn_agent: refused: this run has spawned {spawned} children, the"
                f" [agents] max_children limit")
    return None


def roster_description(roster: Mapping[str, AgentDef]) -> str:
    """The `spawn_agent` tool description, naming every definition (not a schema enum)."""
    text = ("Start a child agent on a sub-task; its final answer is this call's result. It"
            " works in your workspace and can never do more than you may. spawn_agent calls"
            " in one reply run at the same time.")
    if not roster:
        return text + " No named agents: omit `agent`."
    lines = [f"- {d.name}: {d.role or 'no role text'}" + (f" (model {d.model})" if d.model else "")
             for d in (roster[n] for n in sorted(roster))]
    return text + " Named agents (`agent`), or omit it for a general child:\n" + "\n".join(lines)
