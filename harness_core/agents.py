"""Agent definitions (`[agents.NAME]`): a named role that can only narrow.

A definition may pick a model and a role text and add deny rules for writes and
network; it has no way to allow anything, so a run under an agent is never wider than
the run without it. This module only transforms values; it starts nothing and reads
no file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness_core.policy import Policy
from harness_core.providers import ProviderConfig

__all__ = ["AgentDef"]


@dataclass(frozen=True)
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
