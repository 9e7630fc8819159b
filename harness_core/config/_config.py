"""`Config`: a loaded io.toml projected onto the library's typed objects.

This module holds the result only; it imports no pydantic (loading does), so naming
the type costs nothing. It never reads a file or the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from harness_core.agents import AgentDef, AgentLimits
from harness_core.config._scopes import ConfigFile
from harness_core.config._show import ShownValue, redact
from harness_core.config._tree import Node
from harness_core.hooks import HookConfig
from harness_core.mcp._config import McpServerConfig
from harness_core.policy import Policy
from harness_core.providers import ProviderConfig, WebAccess
from harness_core.run import RunSpec
from harness_core.run._budget import Budget
from harness_core.sandbox import SandboxConfig
from harness_core.spend import PriceTable
from harness_core.telemetry import TelemetryConfig
from harness_core.toolchain import Toolchain
from harness_core.tools._git import GitSettings
from harness_core.verification import TaskContract

__all__ = ["Config", "RunSettings"]

_RUN_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(RunSpec)}
"""`RunSpec`'s own defaults: the `[run]` table declares none of its own."""


@dataclass(frozen=True)
class RunSettings:
    """The `[run]` table: loop mechanics that are not budgets.

    Attributes:
        output_cap_bytes: Bytes of a tool's output the model sees; the rest is cut
            and the cut is stated (default: `RunSpec`'s, 16 KiB, about 4k tokens:
            enough for a failing test's traceback without one `cat` flooding the
            context).
        exec_timeout_seconds: Default timeout of one `exec` call; the process group
            is killed when it passes.
        stall_window: The same tool call this many times in a row (or calls repeating
            while the workspace stays still for this many steps) stops the run.
    """

    output_cap_bytes: int = _RUN_DEFAULTS["output_cap"]
    exec_timeout_seconds: float = _RUN_DEFAULTS["exec_timeout"]
    stall_window: int = _RUN_DEFAULTS["stall_window"]


@dataclass(frozen=True)
class Config:
    """A loaded, validated io.toml (four scopes merged), projected onto typed objects.

    Read once, by the caller, before a run: nothing re-reads it, so a file the agent
    writes during a run cannot widen that run's boundary.

    Attributes:
        files: The scope files that were read, lowest precedence first.
        policy: Rules of every scope (each tagged with its scope as layer), the tier and
            approval of the highest scope that set them, the store as a protected path.
        sandbox: The `[sandbox]` table.
        budget: The `[budget]` table.
        contract: The `[contract]` table with its `[[contract.verify]]` gates.
        provider: The `[provider]` table with fallbacks and `[web]`; None when absent.
        prices: The `[prices]` table; None when absent.
        toolchain: The `[toolchain]` overrides (None fields: not overridden).
        context_max_tokens: `[context] max_tokens`: what the model sees at most.
        web: The `[web]` table; None when absent.
        mcp: The `[[mcp]]` servers, in file order.
        hooks: The `[[hooks]]` of every scope, lowest scope first, each with its scope.
        agents: The `[agents.NAME]` definitions by name.
        agent_limits: `[agents] max_depth`, `max_children` and `parallel`.
        templates_dir: `[templates] dir`, or None for `.io/templates/` in the workspace.
        template_dirs: Where `io run --template` looks, in order: `templates_dir` (or the
            workspace's `.io/templates/`), then the user scope's `templates/`.
        store_path: Where the store lives: env `IO_STORE`, else `[store] path`, else
            `$XDG_STATE_HOME/io/state.db`, else `$HOME/.local/state/io/state.db`.
        store_url: A PostgreSQL store (`IO_STORE=postgresql://…` or `[store] url`); when
            set it is the store and `store_path` is unused.
        run: The `[run]` table.
        telemetry: Where spans are exported (`[telemetry]` or the `OTEL_EXPORTER_OTLP_*`
            variables); None when export is off.
        git: The `[git]` table: who the git built-ins commit as, how long git may take.
        secrets: Every value a substitution produced and every credential value
            (`api_key`, `[[mcp]] env`): what `redact` removes.
    """

    files: tuple[ConfigFile, ...] = ()
    policy: Policy = field(default_factory=Policy)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    budget: Budget = field(default_factory=Budget)
    contract: TaskContract = field(default_factory=TaskContract)
    provider: ProviderConfig | None = None
    prices: PriceTable | None = None
    toolchain: Toolchain = field(default_factory=Toolchain)
    context_max_tokens: int | None = None  # set to DEFAULT_CONTEXT_TOKENS when loaded
    web: WebAccess | None = None
    mcp: tuple[McpServerConfig, ...] = ()
    hooks: tuple[HookConfig, ...] = ()
    agents: Mapping[str, AgentDef] = field(default_factory=lambda: {})
    agent_limits: AgentLimits = field(default_factory=AgentLimits)
    templates_dir: Path | None = None
    template_dirs: tuple[Path, ...] = ()
    store_path: Path = Path("state.db")
    store_url: str | None = None
    run: RunSettings = field(default_factory=RunSettings)
    telemetry: TelemetryConfig | None = None
    git: GitSettings = field(default_factory=GitSettings)
    secrets: frozenset[str] = field(default=frozenset(), repr=False)
    _shown: tuple[ShownValue, ...] = field(default=(), repr=False, compare=False)
    _merged: Mapping[str, Node] = field(default_factory=lambda: {}, repr=False, compare=False)
    _rules: tuple[tuple[ConfigFile, Mapping[str, Node]], ...] = field(
        default=(), repr=False, compare=False
    )

    def show(self) -> list[ShownValue]:
        """Every value a file set, with its scope and file; secrets are ``***``.

        Policy rule lists appear once per scope that set them, because every
        scope's rules are kept.
        """
        return list(self._shown)

    def to_toml(self) -> str:
        """The merged configuration as TOML, secrets as ``***`` (`io config show --toml`).

        `io config check` accepts the result; each scope's policy rules are kept, one
        after the other.
        """
        from harness_core.config._toml import merged_toml

        return merged_toml(self._merged, self._rules, self.files, self.secrets)

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by ``***``."""
        return redact(text, self.secrets)

    def __repr__(self) -> str:
        # Redacted: a substituted secret can sit inside any string (a base_url, a goal).
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return self.redact(f"Config({shown})")


