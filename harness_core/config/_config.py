"""`Config`: a loaded io.toml projected onto the library's typed objects.

This module holds the result only; it imports no pydantic (loading does), so naming
the type costs nothing. It never reads a file or the environment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field, fields, replace
from pathlib import Path
from typing import Any, Literal

from harness_core._record import record
from harness_core.agents import AgentDef, AgentLimits
from harness_core.config._requirements import Requirements
from harness_core.config._scopes import ConfigFile
from harness_core.config._show import ShownValue, redact
from harness_core.config._tree import Node
from harness_core.contract import TaskContract
from harness_core.errors import ConfigError, MissingSecret
from harness_core.hooks import HookConfig
from harness_core.otlp import TelemetryConfig
from harness_core.policy import Policy
from harness_core.prices import PriceTable
from harness_core.providers import ProviderConfig, WebAccess
from harness_core.run import RunSpec
from harness_core.run._budget import Budget
from harness_core.sandbox import SandboxConfig
from harness_core.tool_servers import McpServerConfig
from harness_core.toolchain import Toolchain
from harness_core.tools._doc_limits import DocumentLimits
from harness_core.tools._git import GitSettings

__all__ = ["Config", "ContextSettings", "RewindSettings", "RunSettings"]

_RUN_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(RunSpec)}
"""`RunSpec`'s own defaults: the `[run]` table declares none of its own."""


@record
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


@record
class ContextSettings:
    """The `[context]` table beyond `max_tokens` (see `RunSpec` for each meaning).

    Attributes:
        strategy: ``elide`` or ``compact``.
        threshold: The share of the context window that triggers a compaction.
        window: The model's context window (None: io's table of known models).
        keep_steps: The newest steps kept whole after a compaction.
        compact_template: A template name replacing io's summary instruction.
    """

    strategy: Literal["elide", "compact"] = _RUN_DEFAULTS["context_strategy"]
    threshold: float = _RUN_DEFAULTS["compact_threshold"]
    window: int | None = None
    keep_steps: int = _RUN_DEFAULTS["compact_keep_steps"]
    compact_template: str | None = None


@record
class RewindSettings:
    """The `[rewind]` table.

    Attributes:
        enabled: Keep workspace snapshots for `io rewind` / `io undo`.
        max_bytes: Blob bytes one run's snapshots may hold.
    """

    enabled: bool = True
    max_bytes: int = _RUN_DEFAULTS["snapshot_max_bytes"]


@record
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
        documents: The `[documents]` table: how far the document tools unpack a file.
        context: The rest of the `[context]` table (strategy, threshold, window,
            keep_steps, compact_template).
        rewind: The `[rewind]` table.
        requirements: The system scope's `[requirements]`: what no lower scope, flag or
            agent definition may loosen (empty when it sets none).
        secrets: Every value a substitution produced and every credential value
            (`api_key`, `[[mcp]] env`): what `redact` removes (with the provider keys
            `provider_for_run` resolved since).
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
    documents: DocumentLimits = field(default_factory=DocumentLimits)
    context: ContextSettings = field(default_factory=lambda: ContextSettings())
    rewind: RewindSettings = field(default_factory=lambda: RewindSettings())
    requirements: Requirements = field(default_factory=lambda: Requirements())
    secrets: frozenset[str] = field(default=frozenset(), repr=False)
    _shown: tuple[ShownValue, ...] = field(default=(), repr=False, compare=False)
    _merged: Mapping[str, Node] = field(default_factory=lambda: {}, repr=False, compare=False)
    _rules: tuple[tuple[ConfigFile, Mapping[str, Node]], ...] = field(
        default=(), repr=False, compare=False
    )
    _env: Mapping[str, str] = field(default_factory=lambda: {}, repr=False, compare=False)
    _key_files: Mapping[int, ConfigFile] = field(
        default_factory=lambda: {}, repr=False, compare=False)
    """The scope file that wrote each deferred key (0: [provider], i + 1: fallback i)."""
    _resolved: set[str] = field(default_factory=lambda: set[str](), repr=False, compare=False)

    def provider_for_run(
        self, *, stand_in: Callable[[MissingSecret], str] | None = None
    ) -> ProviderConfig:
        """The `[provider]` table (and its fallbacks) with each key resolved now.

        A provider's `${env:…}`/`${file:…}` key is resolved here, when a provider is
        about to be built, not when io.toml is loaded: a command that calls no model
        (`io toolchain`, `io tool`, `io trace`…) never needs it.

        Args:
            stand_in: For a check that sends nothing (`io config check`): told of each
                key that cannot be resolved, it returns a value to use in its place.
                None: a key that cannot be resolved raises.

        Raises:
            ConfigError: No `[provider]` is configured.
            MissingSecret: A key's variable is unset or empty, or its file unreadable.
        """
        from harness_core.config._substitute import Substituter

        if self.provider is None:
            raise ConfigError(
                "no [provider] is configured",
                hint='`io config init` writes an io.toml with one (or add a [provider] table:'
                     ' kind = "scripted" works offline)',
            )
        subst = Substituter(self._env)

        def resolve(p: ProviderConfig, index: int, path: str) -> ProviderConfig:
            if p.api_key_ref is None:
                return p
            origin = self._key_files.get(index)
            where = f"'{path}'" + (f" in {origin.describe()}" if origin else "")
            base = origin.path.parent if origin is not None else Path(".")
            try:
                key = subst.resolve(p.api_key_ref, where=where, base_dir=base)
            except MissingSecret as missing:
                if stand_in is None:
                    raise
                return replace(p, api_key=stand_in(missing), api_key_ref=None)
            self._resolved.add(key)
            return replace(p, api_key=key, api_key_ref=None)

        primary = resolve(self.provider, 0, "provider.api_key")
        fallback = tuple(resolve(f, i + 1, f"provider.fallback[{i}].api_key")
                         for i, f in enumerate(self.provider.fallback))
        return replace(primary, fallback=fallback)

    def show(self) -> list[ShownValue]:
        """Every value a file set, with its scope and file; secrets are ``***``.

        Policy rule lists appear once per scope that set them, because every
        scope's rules are kept. Each value a system-scope requirement holds names it
        (`ShownValue.held`); a default the floor replaced is listed as the system
        scope's.
        """
        if self.requirements.is_empty:
            return list(self._shown)
        hooks = tuple(hook.name for hook in self.hooks)
        return [replace(v, held=self.requirements.holds(v.key, hooks)) for v in self._shown]

    def to_toml(self) -> str:
        """The merged configuration as TOML, secrets as ``***`` (`io config show --toml`).

        `io config check` accepts the result; each scope's policy rules are kept, one
        after the other.
        """
        from harness_core.config._toml import merged_toml

        return merged_toml(self._merged, self._rules, self.files, self.secrets)

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by ``***``."""
        if not self._resolved and self.provider is not None:
            # Keys not resolved yet are still secrets: resolve what can be, quietly.
            self.provider_for_run(stand_in=lambda _missing: "")
        return redact(text, self.secrets | self._resolved)

    def __repr__(self) -> str:
        # Redacted: a substituted secret can sit inside any string (a base_url, a goal).
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return self.redact(f"Config({shown})")


