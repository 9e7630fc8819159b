"""Projection: merged, annotated io.toml trees onto the typed objects the library runs on.

The typed API is the authority. Every key lands in a type that exists without the
file (`Policy`, `SandboxConfig`, `Budget`, `TaskContract`, `ProviderConfig`,
`PriceTable`, `Toolchain`, `WebAccess`, `McpServerConfig`, `AgentDef`, `RunSettings`),
so a file can say nothing the typed API cannot. This module does no I/O beyond
resolving paths, and reads the environment only from the mapping it is given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from harness_core.agents import AgentDef, AgentLimits
from harness_core.config._schema import RULE_KEYS, SCHEMA, Node, Sourced, dotted
from harness_core.config._scopes import ConfigFile, user_templates_dir
from harness_core.config._show import ShownValue, flatten, redact
from harness_core.config._telemetry import telemetry_config
from harness_core.errors import ConfigError, PolicyError
from harness_core.mcp._config import McpServerConfig
from harness_core.policy import (
    PROTECTED_WRITE_PATTERNS,
    ActKind,
    ApprovalMode,
    Effect,
    Policy,
    Rule,
    Tier,
)
from harness_core.policy._patterns import compile_path
from harness_core.providers import ProviderConfig, WebAccess
from harness_core.run._budget import Budget
from harness_core.sandbox import BackendChoice, SandboxConfig, SandboxLimits
from harness_core.spend import ModelPrice, PriceTable
from harness_core.store import is_postgres_url
from harness_core.telemetry import TelemetryConfig
from harness_core.toolchain import Toolchain
from harness_core.tools._git import GitSettings
from harness_core.verification import (
    CriterionKind,
    TaskContract,
    VerifyCriterion,
    require_gate_extras,
)

__all__ = ["Config", "RunSettings", "project"]

DEFAULT_CONTEXT_TOKENS = 120_000
"""What the model sees at most when `[context] max_tokens` is not set (a size most current
models take); the store keeps everything whatever this is."""


@dataclass(frozen=True)
class RunSettings:
    """The `[run]` table: loop mechanics that are not budgets.

    Attributes:
        output_cap_bytes: Bytes of a tool's output the model sees; the rest is cut
            and the cut is stated. 16 KiB is about 4k tokens, enough for a failing
            test's traceback without one `cat` flooding the context.
        exec_timeout_seconds: Default timeout of one `exec` call; the process group
            is killed when it passes.
        stall_window: The same tool call this many times in a row (or calls repeating
            while the workspace stays still for this many steps) stops the run.
    """

    output_cap_bytes: int = 16_384
    exec_timeout_seconds: float = 120.0
    stall_window: int = 4


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

    def show(self) -> list[ShownValue]:
        """Every value a file set, with its scope and file; secrets are ``***``.

        Policy rule lists appear once per scope that set them, because every
        scope's rules are kept.
        """
        return list(self._shown)

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by ``***``."""
        return redact(text, self.secrets)

    def __repr__(self) -> str:
        # Redacted: a substituted secret can sit inside any string (a base_url, a goal).
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return self.redact(f"Config({shown})")


class _Table:
    """Read access to one merged table, for projection."""

    def __init__(self, node: Mapping[str, Node], path: tuple[str | int, ...] = ()) -> None:
        self.node = node
        self.path = path

    def get(self, key: str, default: Any = None) -> Any:
        value = self.node.get(key)
        return value.value if isinstance(value, Sourced) else default

    def key(self, key: str) -> str:
        return dotted((*self.path, key))

    def sub(self, key: str) -> _Table | None:
        value = self.node.get(key)
        return _Table(value, (*self.path, key)) if isinstance(value, dict) else None

    def subs(self) -> list[tuple[str, _Table]]:
        return [
            (k, _Table(v, (*self.path, k))) for k, v in self.node.items() if isinstance(v, dict)
        ]

    def items(self, key: str) -> list[_Table]:
        value = self.node.get(key)
        if not isinstance(value, Sourced):
            return []
        return [_Table(item, (*self.path, key, i)) for i, item in enumerate(value.value)]

    def origin(self) -> ConfigFile | None:
        found: list[ConfigFile] = []
        _origins(self.node, found)
        return max(found, key=lambda cf: cf.scope.rank) if found else None

    def required(self, key: str, why: str = "") -> Any:
        value = self.get(key)
        if value is None:
            origin = self.origin()
            where = f" (set in {origin.describe()})" if origin else ""
            raise ConfigError(f"missing key '{self.key(key)}'{why}{where}")
        return value


def _origins(node: Mapping[str, Node] | Sourced, out: list[ConfigFile]) -> None:
    if isinstance(node, Sourced):
        out.append(node.origin)
    else:
        for child in node.values():
            _origins(child, out)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _policy(
    rule_sets: Sequence[tuple[ConfigFile, Mapping[str, Node]]],
    merged: _Table,
    protected: tuple[str, ...],
    secrets: frozenset[str],
) -> Policy:
    rules: list[Rule] = []
    for cf, table in rule_sets:
        for key in RULE_KEYS:
            node = table.get(key)
            if not isinstance(node, Sourced):
                continue
            effect, kind = key.split("_")
            for index, pattern in enumerate(node.value):
                try:
                    rules.append(Rule(Effect(effect), ActKind(kind), pattern, cf.scope.value))
                except PolicyError as exc:
                    message = redact(exc.message, secrets, min_length=1)
                    raise ConfigError(
                        f"'policy.{key}[{index}]' in {cf.describe()}: {message}"
                    ) from exc
    return Policy(
        tier=Tier(merged.get("tier", Tier.WORKSPACE_WRITE.value)),
        rules=tuple(rules),
        approval=ApprovalMode(merged.get("approval", ApprovalMode.ASK.value)),
        protected=protected,
    )


def _sandbox(t: _Table) -> SandboxConfig:
    base, limits = SandboxConfig(), SandboxLimits()
    return SandboxConfig(
        backend=BackendChoice(t.get("backend", base.backend.value)),
        limits=SandboxLimits(
            memory_mb=t.get("memory_mb", limits.memory_mb),
            cpu_seconds=t.get("cpu_seconds", limits.cpu_seconds),
            wall_seconds=_float(t.get("wall_seconds", limits.wall_seconds)),
            max_processes=t.get("max_processes", limits.max_processes),
            open_files=t.get("open_files", limits.open_files),
        ),
        network=t.get("network", base.network),
        commands=t.get("commands", base.commands),
        env_allow=t.get("env_allow", base.env_allow),
        read_paths=t.get("read_paths", base.read_paths),
    )


def _budget(t: _Table) -> Budget:
    base = Budget()
    return Budget(
        max_steps=t.get("max_steps", base.max_steps),
        max_tokens=t.get("max_tokens", base.max_tokens),
        max_cost_usd=_float(t.get("max_cost_usd", base.max_cost_usd)),
        wall_seconds=_float(t.get("wall_seconds", base.wall_seconds)),
    )


def _document_gate(item: _Table, timeout: float) -> VerifyCriterion:
    path = item.required("path", ' (a gate of kind "document_contains" names a document)')
    text, regex = item.get("text"), item.get("regex")
    if (text is None) == (regex is None):
        raise ConfigError('a gate of kind "document_contains" takes exactly one of `text` and'
                          " `regex`")
    if regex is not None:
        try:
            re.compile(regex)
        except re.error as exc:
            raise ConfigError(f"document_contains: invalid regex {regex!r}: {exc}") from exc
    criterion = VerifyCriterion(kind=CriterionKind.DOCUMENT_CONTAINS, path=path, text=text,
                                regex=regex, page=item.get("page"), sheet=item.get("sheet"),
                                timeout_seconds=timeout)
    require_gate_extras(criterion)
    return criterion


def _contract(t: _Table) -> TaskContract:
    gates: list[VerifyCriterion] = []
    default_timeout = VerifyCriterion().timeout_seconds
    for item in t.items("verify"):
        kind = CriterionKind(item.get("kind", CriterionKind.COMMAND.value))
        command = item.get("command", "")
        if kind is CriterionKind.COMMAND:
            command = item.required("command", ' (a gate of kind "command" runs a command)')
        timeout = float(item.get("timeout_seconds", default_timeout))
        if kind is CriterionKind.DOCUMENT_CONTAINS:
            gates.append(_document_gate(item, timeout))
            continue
        inputs = item.get("inputs")
        gates.append(VerifyCriterion(
            kind=kind, command=command, timeout_seconds=timeout,
            inputs=None if inputs is None else tuple(_input_patterns(item, inputs)),
            editable=bool(item.get("editable", False))))
    return TaskContract(
        goal=t.get("goal", ""), constraints=t.get("constraints", ()), verify=tuple(gates)
    )


def _input_patterns(item: _Table, patterns: Sequence[str]) -> list[str]:
    """`inputs` of a gate, each checked as a path pattern (a mistake names the key)."""
    for pattern in patterns:
        try:
            compile_path(pattern)
        except PolicyError as exc:
            origin = item.origin()
            where = f" (set in {origin.describe()})" if origin else ""
            raise ConfigError(f"'{item.key('inputs')}': {exc.message}{where}",
                              hint=exc.hint) from exc
    return list(patterns)


def _one_provider(
    t: _Table, web: WebAccess | None, fallback: tuple[ProviderConfig, ...]
) -> ProviderConfig:
    base = ProviderConfig()
    kind = t.required("kind")
    if kind == "scripted":
        script: Path | None = t.required("script", ' (kind "scripted" replays a script)')
        model = t.get("model", "scripted")
    else:
        script = t.get("script")
        model = t.required("model", f' (kind "{kind}" needs a model)')
    return ProviderConfig(
        kind=kind,
        model=model,
        api_key=t.get("api_key"),
        base_url=t.get("base_url"),
        max_tokens=t.get("max_tokens", base.max_tokens),
        script=script,
        stream=t.get("stream", base.stream),
        timeout_seconds=float(t.get("timeout_seconds", base.timeout_seconds)),
        max_retries=t.get("max_retries", base.max_retries),
        fallback=fallback,
        web=web,
        ca_bundle=t.get("ca_bundle"),
        system_role=t.get("system_role", base.system_role),
        previous_response_id=t.get("previous_response_id", base.previous_response_id),
    )


def _provider(t: _Table | None, web: WebAccess | None) -> ProviderConfig | None:
    if t is None:
        return None
    fallback = tuple(_one_provider(item, web, ()) for item in t.items("fallback"))
    return _one_provider(t, web, fallback)


def _prices(t: _Table | None) -> PriceTable | None:
    if t is None:
        return None
    as_of = t.required("as_of", " (prices go stale: say when they were true)")
    models: dict[str, ModelPrice] = {}
    for name, entry in (t.sub("models") or _Table({})).subs():
        models[name] = ModelPrice(
            input_per_mtok=float(entry.required("input_per_mtok")),
            output_per_mtok=float(entry.required("output_per_mtok")),
            cache_read_per_mtok=_float(entry.get("cache_read_per_mtok")),
            cache_write_per_mtok=_float(entry.get("cache_write_per_mtok")),
        )
    return PriceTable(as_of=as_of, models=models)


def _web(t: _Table | None) -> WebAccess | None:
    if t is None:
        return None
    return WebAccess(
        search=t.get("search", False),
        fetch=t.get("fetch", False),
        allowed_domains=t.get("allowed_domains", ()),
        blocked_domains=t.get("blocked_domains", ()),
        max_uses=t.get("max_uses"),
    )


def _mcp(root: _Table) -> tuple[McpServerConfig, ...]:
    servers: list[McpServerConfig] = []
    seen: set[str] = set()
    for item in root.items("mcp"):
        name = item.required("name")
        if name in seen:
            origin = item.origin()
            where = f" in {origin.describe()}" if origin else ""
            raise ConfigError(f"two [[mcp]] servers are named {name!r}{where}")
        seen.add(name)
        servers.append(
            McpServerConfig(
                name=name,
                command=item.required("command"),
                args=item.get("args", ()),
                env=dict(item.get("env", {})),
                cwd=item.get("cwd"),
            )
        )
    return tuple(servers)


def _template_dirs(
    workspace: Path, configured: Path | None, env: Mapping[str, str]
) -> tuple[Path, ...]:
    user = user_templates_dir(env)
    first = configured or workspace / ".io" / "templates"
    return (first,) if user is None or user == first else (first, user)


def _agent_limits(t: _Table | None) -> AgentLimits:
    if t is None:
        return AgentLimits()
    default = AgentLimits()
    return AgentLimits(max_depth=t.get("max_depth", default.max_depth),
                       max_children=t.get("max_children", default.max_children),
                       parallel=t.get("parallel", default.parallel))


def _agents(t: _Table | None) -> dict[str, AgentDef]:
    if t is None:
        return {}
    agents: dict[str, AgentDef] = {}
    for name, entry in t.subs():
        agents[name] = AgentDef(
            name=name,
            model=entry.get("model"),
            role=entry.get("role"),
            deny_write=entry.get("deny_write", ()),
            deny_net=entry.get("deny_net", ()),
        )
    return agents


def _run(t: _Table) -> RunSettings:
    base = RunSettings()
    return RunSettings(
        output_cap_bytes=t.get("output_cap_bytes", base.output_cap_bytes),
        exec_timeout_seconds=float(t.get("exec_timeout_seconds", base.exec_timeout_seconds)),
        stall_window=t.get("stall_window", base.stall_window),
    )


def _absolute_dir(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name)
    # XDG base directories must be absolute; a relative one is ignored, per the spec.
    return Path(value) if value and Path(value).is_absolute() else None


def store_url(configured: str | None, env: Mapping[str, str]) -> str | None:
    """A PostgreSQL store's URL: `IO_STORE=postgresql://…`, else `[store] url`, else None.

    Raises:
        ConfigError: `[store] url` is not a ``postgresql://`` URL.
    """
    from_env = env.get("IO_STORE")
    if from_env:
        return from_env if is_postgres_url(from_env) else None
    if configured is None:
        return None
    if not is_postgres_url(configured):
        raise ConfigError(
            "[store] url must be a postgresql:// URL",
            hint="for a SQLite file use [store] path",
        )
    return configured


def store_path(configured: Path | None, env: Mapping[str, str]) -> Path:
    """Where the store lives: `IO_STORE`, else `[store] path`, else the XDG state dir.

    The environment wins over the file so one CI job or test can point every command
    at its own store without editing a committed io.toml.

    Raises:
        ConfigError: Nothing names a place (no `IO_STORE`, no `[store] path`, no
            `XDG_STATE_HOME`, no `HOME`).
    """
    from_env = env.get("IO_STORE")
    if from_env and not is_postgres_url(from_env):
        return Path(from_env).absolute()
    if configured is not None:
        return configured
    state = _absolute_dir(env, "XDG_STATE_HOME")
    if state is not None:
        return state / "io" / "state.db"
    home = env.get("HOME")
    if home:
        return Path(home) / ".local" / "state" / "io" / "state.db"
    raise ConfigError(
        "cannot place the store: none of IO_STORE, [store] path, XDG_STATE_HOME or HOME is set",
        hint="set IO_STORE=/path/to/state.db",
    )


def _protected(workspace: Path, store: Path, files: Sequence[ConfigFile]) -> tuple[str, ...]:
    root = workspace.resolve()
    out: list[str] = []
    inside = store.resolve()
    if inside.is_relative_to(root):
        rel = inside.relative_to(root).as_posix()
        out += [rel, f"{rel}-wal", f"{rel}-shm", f"{rel}-journal"]
    for cf in files:
        # A `--config` file inside the workspace guards the next run like io.toml does.
        path = cf.path.resolve()
        if path.is_relative_to(root):
            rel = path.relative_to(root).as_posix()
            if rel not in PROTECTED_WRITE_PATTERNS:
                out.append(rel)
    return tuple(dict.fromkeys(out))


def _credentials(node: Mapping[str, Node] | Sourced, out: set[str]) -> None:
    if isinstance(node, Sourced):
        if isinstance(node.value, list):
            for item in node.value:
                _credentials(item, out)
        elif node.secret:
            values = node.value.values() if isinstance(node.value, Mapping) else [node.value]
            out.update(v for v in values if isinstance(v, str) and v)
    else:
        for child in node.values():
            _credentials(child, out)


def _shown(
    merged: Mapping[str, Node],
    rule_sets: Sequence[tuple[ConfigFile, Mapping[str, Node]]],
    secrets: frozenset[str],
) -> tuple[ShownValue, ...]:
    values = list(flatten(merged, secrets))
    for _cf, rules in rule_sets:
        values += flatten({"policy": dict(rules)}, secrets)
    order = {name: index for index, name in enumerate(SCHEMA.fields)}
    values.sort(key=lambda v: order.get(v.key.split(".", 1)[0].split("[", 1)[0], len(order)))
    return tuple(values)


def project(
    workspace: Path,
    files: tuple[ConfigFile, ...],
    merged: Mapping[str, Node],
    rule_sets: Sequence[tuple[ConfigFile, Mapping[str, Node]]],
    substituted: frozenset[str],
    env: Mapping[str, str],
) -> Config:
    """Build the typed `Config` from the merged tree and each scope's policy rules.

    Args:
        workspace: The workspace root (the store inside it becomes protected).
        files: The scope files read, lowest precedence first.
        merged: The merged annotated tree, policy rule lists removed.
        rule_sets: Each scope file with its own `[policy]` rule lists.
        substituted: Every value a substitution produced.
        env: The environment (`IO_STORE`, `XDG_STATE_HOME`, `HOME`).

    Raises:
        ConfigError: A required key is missing, a rule is malformed, or the store
            cannot be placed.
    """
    credentials: set[str] = set()
    _credentials(merged, credentials)
    root = _Table(merged)
    sub = {name: root.sub(name) for name in SCHEMA.fields}
    telemetry_table = sub["telemetry"]
    telemetry, header_values = telemetry_config(
        {k: telemetry_table.get(k) for k in ("otlp_endpoint", "include_content", "headers",
                                            "service_name", "timeout_seconds")
         if telemetry_table is not None and telemetry_table.get(k) is not None}, env)
    secrets = frozenset(substituted | credentials | header_values)

    def table(name: str) -> _Table:
        return sub[name] or _Table({}, (name,))

    web = _web(sub["web"])
    store_table = sub["store"]
    store = store_path(store_table.get("path") if store_table else None, env)
    url = store_url(store_table.get("url") if store_table else None, env)
    protected = _protected(workspace, store, files)
    return Config(
        files=files,
        policy=_policy(rule_sets, table("policy"), protected, secrets),
        sandbox=_sandbox(table("sandbox")),
        budget=_budget(table("budget")),
        contract=_contract(table("contract")),
        provider=_provider(sub["provider"], web),
        prices=_prices(sub["prices"]),
        toolchain=_toolchain(table("toolchain")),
        context_max_tokens=table("context").get("max_tokens", DEFAULT_CONTEXT_TOKENS),
        web=web,
        mcp=_mcp(root),
        agents=_agents(sub["agents"]),
        agent_limits=_agent_limits(sub["agents"]),
        templates_dir=table("templates").get("dir"),
        template_dirs=_template_dirs(workspace, table("templates").get("dir"), env),
        store_path=store,
        store_url=url,
        run=_run(table("run")),
        telemetry=telemetry,
        git=_git(table("git")),
        secrets=secrets,
        _shown=_shown(merged, rule_sets, secrets),
    )


def _git(t: _Table) -> GitSettings:
    base = GitSettings()
    return GitSettings(
        author_name=t.get("author_name"), author_email=t.get("author_email"),
        timeout_seconds=float(t.get("timeout_seconds", base.timeout_seconds)),
        history_depth=int(t.get("history_depth", base.history_depth)),
    )


def _toolchain(t: _Table) -> Toolchain:
    return Toolchain(test=t.get("test"), build=t.get("build"), lint=t.get("lint"))
