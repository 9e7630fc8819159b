"""What a run is started with (`RunSpec`) and what it ends with (`RunOutcome`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_core.agents import AgentDef, AgentLimits
from harness_core.mcp import McpServerConfig
from harness_core.messages import Message, Usage
from harness_core.policy import Policy
from harness_core.providers import WebAccess
from harness_core.run._budget import Budget
from harness_core.sandbox import SandboxConfig
from harness_core.store import Pause, RunStatus, VerificationRecord
from harness_core.templates import Skill
from harness_core.toolchain import Toolchain
from harness_core.tools import DEFAULT_OUTPUT_CAP
from harness_core.tools._git import GitSettings
from harness_core.verification import TaskContract
from harness_core.workspace import Workspace

__all__ = ["RunOutcome", "RunSpec"]


@dataclass(frozen=True)
class RunSpec:
    """Everything a run needs, already loaded and typed (the caller read the config).

    Attributes:
        workspace: The root the run works in.
        contract: The goal, constraints and verification gates.
        policy: The boundary.
        budget: The ceilings.
        model: The model string requested from the provider.
        max_tokens: Output ceiling per completion.
        sandbox: Which sandbox backend and limits.
        context_max_tokens: Ceiling on what the model sees (None: no elision).
        output_cap: Bytes of tool output returned before truncation.
        exec_timeout: Seconds before a foreground command is killed.
        stall_window: Calls the stall detector remembers.
        toolchain: Detected (or configured) project commands, shown to the model.
        env: The caller's environment, passed to sandboxed commands after the scrub.
        web: Provider-executed web access declared on every request.
        session_id: The session this run is a turn of, if any.
        parent_run_id: The previous turn (or parent run), if any.
        history: Messages of earlier turns shown before the goal (sessions).
        protected_paths: Extra absolute paths commands must not write (the store).
        command_read_only: Workspace paths (relative to the root) the agent's commands
            see read-only in the sandbox: the gates' inputs (`protect_gate_inputs`);
            the gates themselves may still write them.
        mcp: MCP servers (local and remote) to connect for the run (each checked by the
            policy).
        cost_of: Derives a completion's USD cost from the model that served it and its
            usage (None: unpriced); needed by `budget.max_cost_usd`. Never recorded.
        store_path: The store file; it and its siblings are hidden from commands.
        provider_keys: The provider credentials this process holds (values, never
            recorded): the sandbox must keep them from commands, and `auto` refuses
            to degrade to a backend that cannot.
        git: The `[git]` settings of the git built-ins (author, timeout).
        agents: The named agent definitions `spawn_agent` may start (`[agents.NAME]`).
        agent_limits: Depth, children and parallelism limits of the run's tree.
        role: Role text for the system prompt (a child's agent definition), or None.
        skills: The skills catalogue (names and descriptions); shared by a whole tree.
    """

    workspace: Workspace
    contract: TaskContract
    policy: Policy = field(default_factory=Policy)
    budget: Budget = field(default_factory=Budget)
    model: str = ""
    max_tokens: int = 4096
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    context_max_tokens: int | None = None
    output_cap: int = DEFAULT_OUTPUT_CAP
    exec_timeout: float = 120.0
    stall_window: int = 4
    toolchain: Toolchain = field(default_factory=Toolchain)
    env: Mapping[str, str] = field(default_factory=lambda: {})
    web: WebAccess | None = None
    session_id: str | None = None
    parent_run_id: str | None = None
    history: tuple[Message, ...] = ()
    protected_paths: tuple[str, ...] = ()
    command_read_only: tuple[str, ...] = ()
    mcp: tuple[McpServerConfig, ...] = ()
    cost_of: Callable[[str, Usage], float | None] | None = None
    store_path: Path | None = None
    provider_keys: tuple[str, ...] = field(default=(), repr=False)
    git: GitSettings = field(default_factory=GitSettings)
    agents: Mapping[str, AgentDef] = field(default_factory=lambda: {})
    agent_limits: AgentLimits = field(default_factory=AgentLimits)
    role: str | None = None
    skills: tuple[Skill, ...] = ()

    def settings_json(self) -> dict[str, Any]:
        """The recorded settings of the run (no secrets: the env is not recorded)."""
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "budget": vars(self.budget),
            "contract": {
                "goal": self.contract.goal,
                "constraints": list(self.contract.constraints),
                "verify": [{"kind": c.kind.value, "command": c.command,
                            "timeout_seconds": c.timeout_seconds,
                            "inputs": None if c.inputs is None else list(c.inputs),
                            "editable": c.editable} for c in self.contract.verify],
            },
            "context_max_tokens": self.context_max_tokens,
            "output_cap": self.output_cap,
            "exec_timeout": self.exec_timeout,
            "stall_window": self.stall_window,
            "agents": {"limits": self.agent_limits.to_json(), "names": sorted(self.agents)},
            "role": self.role,
        }


@dataclass(frozen=True)
class RunOutcome:
    """How a drive of a run ended.

    Attributes:
        run_id: The run.
        status: Where it stands now.
        reason: One line saying why it ended here.
        steps: Steps committed so far.
        pause: What it waits for, when paused (``kind``, and the act or question).
        verified: Whether the gates passed (None when they did not run).
        gates: The last round of verification gates (the gates report): each gate's
            command, exit status, duration, sandbox and whether its inputs were untouched.
    """

    run_id: str
    status: RunStatus
    reason: str
    steps: int
    pause: Pause | None = None
    verified: bool | None = None
    gates: tuple[VerificationRecord, ...] = ()
