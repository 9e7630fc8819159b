"""What a run is started with (`RunSpec`) and what it ends with (`RunOutcome`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Literal

from harness_core._record import record
from harness_core.agents import AgentDef, AgentLimits
from harness_core.contract import TaskContract
from harness_core.hooks import HookConfig
from harness_core.messages import Message, Usage
from harness_core.policy import Policy
from harness_core.providers import WebAccess
from harness_core.run._budget import Budget
from harness_core.sandbox import SandboxConfig
from harness_core.store import Pause, RunStatus, VerificationRecord
from harness_core.templates import Skill
from harness_core.tool_servers import McpServerConfig
from harness_core.toolchain import Toolchain
from harness_core.tools import DEFAULT_OUTPUT_CAP
from harness_core.tools._doc_limits import DocumentLimits
from harness_core.tools._git import GitSettings
from harness_core.workspace import Workspace

__all__ = ["RunOutcome", "RunSpec"]


@record
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
        secrets: Every secret value the config loaded (`Config.secrets`; never
            recorded): with `provider_keys`, what the run keeps out of its records.
        git: The `[git]` settings of the git built-ins (author, timeout).
        documents: The `[documents]` limits: how far a document tool unpacks a file.
        agents: The named agent definitions `spawn_agent` may start (`[agents.NAME]`).
        agent_limits: Depth, children and parallelism limits of the run's tree.
        role: Role text for the system prompt (a child's agent definition), or None.
        skills: The skills catalogue (names and descriptions); shared by a whole tree.
        context_strategy: ``elide`` (old observations give way to markers past
            `context_max_tokens`) or ``compact`` (past `compact_threshold` of the
            context window, the model summarises the older turns; `_compact`).
        compact_threshold: The share of the context window that triggers a compaction.
        context_window: The model's context window in tokens (None: io's table of known
            models, `context_window_of`).
        compact_prompt: The instruction the summary is asked under (None: io's own).
        compact_keep_steps: The newest steps kept whole after a compaction.
        snapshot_dir: Where the workspace snapshots of `io rewind` / `io undo` go (one
            folder per store and run); None keeps none.
        snapshot_max_bytes: The blob bytes one run's snapshots may hold; past it io
            stops taking snapshots for the run (and says so).
        hooks: The `[[hooks]]` of every scope (a child runs under its parent's).
        answer_schema: A JSON Schema the root run's final answer must validate against
            (`io run --output-schema`): an answer that does not is sent back to the
            model with the reason, up to `ANSWER_RETRIES` times, then the run fails.
            Recorded with the run's settings: `Runner.resume` checks the answer against
            it when the spec it is given has none.
        run_overrides: What the command line set for this run only, over io.toml
            (`io run -c`, `-m`, `--max-steps`, `io batch`'s narrowing), recorded with the
            run's settings so that `io resume` applies it again: a run-only budget or
            narrowing is part of the run's boundary and does not lapse at a pause.
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
    secrets: frozenset[str] = field(default=frozenset(), repr=False)
    git: GitSettings = field(default_factory=GitSettings)
    documents: DocumentLimits = field(default_factory=DocumentLimits)
    agents: Mapping[str, AgentDef] = field(default_factory=lambda: {})
    agent_limits: AgentLimits = field(default_factory=AgentLimits)
    role: str | None = None
    skills: tuple[Skill, ...] = ()
    context_strategy: Literal["elide", "compact"] = "elide"
    compact_threshold: float = 0.8
    context_window: int | None = None
    compact_prompt: str | None = None
    compact_keep_steps: int = 2
    snapshot_dir: Path | None = None
    snapshot_max_bytes: int = 256 * 1024 * 1024
    hooks: tuple[HookConfig, ...] = ()
    answer_schema: Mapping[str, object] | None = None
    run_overrides: Mapping[str, object] | None = None

    def settings_json(self) -> dict[str, object]:
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
            "context_strategy": self.context_strategy,
            "output_cap": self.output_cap,
            "exec_timeout": self.exec_timeout,
            "stall_window": self.stall_window,
            "agents": {"limits": self.agent_limits.to_json(), "names": sorted(self.agents)},
            "role": self.role,
            **({"hooks": [h.to_json() for h in self.hooks]} if self.hooks else {}),
            **({"answer_schema": dict(self.answer_schema)}
               if self.answer_schema is not None else {}),
            **({"run_overrides": dict(self.run_overrides)} if self.run_overrides else {}),
        }


@record
class RunOutcome:
    """How a drive of a run ended.

    Attributes:
        run_id: The run.
        status: Where it stands now.
        reason: One line saying why it ended here.
        steps: Steps committed so far.
        pause: What it waits for, when paused (``kind``, and the act or question).
        verified: Whether the last round of gates passed: True every gate passed, False
            one failed, None no round ran (no gate is configured, or the run stopped
            before the model said it was done).
        gates: The last round of verification gates (the gates report): each gate's
            command, exit status, duration, sandbox and whether its inputs were untouched.
        answer: The model's final answer: its last completion when the run ended on
            it (finished, or a child that failed a gate), under an output schema the
            JSON document that completion validated as; "" for a run that did not end on
            a final answer (stopped, paused, interrupted, errored, answer refused).
    """

    run_id: str
    status: RunStatus
    reason: str
    steps: int
    pause: Pause | None = None
    verified: bool | None = None
    gates: tuple[VerificationRecord, ...] = ()
    answer: str = ""

    @property
    def exit_code(self) -> int:
        """The exit code `io` ends with for this outcome (docs/guide/exit-codes.md).

        0 finished with every configured gate passed (or none configured); 1 the last
        gate round failed, whatever stopped the run, or the run failed; 3 a budget or
        stall stop with no failed gate; 4 paused; 130 interrupted. A paused or
        interrupted run keeps its own code even after a failed round: it is not over.
        """
        return _exit_code_of(self.status, self.verified)

    @property
    def why(self) -> str:
        """One line saying why the exit code is what it is."""
        code = self.exit_code
        if code == 0:
            return "every gate passed" if self.verified else "no gates configured"
        if code == 1 and self.verified is False:
            failed = [g for g in self.gates if not g.passed]
            named = ", ".join(f"`{g.criterion}` (exit {_status(g.exit_status)})" for g in failed)
            return "the last gate round failed" + (f": {named}" if named else "")
        if code == 3:
            return f"stopped with no failed gate: {self.reason}"
        if code == 4 and self.pause is not None:
            waits = "an answer" if self.pause.kind == "question" else "an approval"
            return f"paused for {waits}"
        return f"{self.status.value}: {self.reason}"


def _status(exit_status: int | None) -> str:
    return "-" if exit_status is None else str(exit_status)


_CODE_OF_STATUS = {
    RunStatus.FINISHED: 0, RunStatus.FAILED: 1, RunStatus.ERRORED: 1, RunStatus.RUNNING: 1,
    RunStatus.STOPPED: 3, RunStatus.PAUSED: 4, RunStatus.INTERRUPTED: 130,
}


def _exit_code_of(status: RunStatus, verified: bool | None) -> int:
    """The exit code of a run that stands at `status` after a last gate round `verified`
    (see `RunOutcome.exit_code`)."""
    if status in (RunStatus.PAUSED, RunStatus.INTERRUPTED) or verified is not False:
        return _CODE_OF_STATUS[status]
    return 1
