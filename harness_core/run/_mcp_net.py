"""How a run decides the hosts its remote MCP servers' HTTP client dials: the egress
proxy's own check (`harness_core.run._egress.admit`), by name and then by every address
the name resolves to, through the run's guard, each refusal recorded. The admission
carries the checked addresses, and the client dials those and nothing else, as the
proxy does. Nobody can be asked
(a server starts before the run's first step, and a token refresh happens inside a
call), so an `ask` is a refusal, as it is for the proxy.
"""

from __future__ import annotations

from collections.abc import Callable

from harness_core.policy import Act, Decision
from harness_core.run._egress import SystemNetView, admit
from harness_core.run._guard import Guard
from harness_core.sandbox import Admission

__all__ = ["mcp_net_decider"]

_BY = "MCP client"
"""Who the recorded refusals name as deciding."""


def mcp_net_decider(guard: Guard) -> Callable[[str, int], Admission]:
    """(host, port) → the admission, for `McpSession.start(net=...)` (the run's thread)."""
    view = SystemNetView()

    def decide(act: Act) -> Decision:
        return guard.decide_unattended(act, by=_BY)

    def refuse(act: Act, decision: Decision) -> None:
        guard.record_unattended(act, decision, by=_BY)

    def net(host: str, port: int) -> Admission:
        return admit(guard.policy, host, port, decide=decide, refuse=refuse, view=view)

    return net
