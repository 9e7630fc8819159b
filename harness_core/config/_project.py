"""Projection: the merged, validated io.toml onto the typed objects the library runs on.

The typed API is the authority. Every key lands in a type that exists without the
file (`Policy`, `SandboxConfig`, `Budget`, `TaskContract`, `ProviderConfig`,
`PriceTable`, `Toolchain`, `WebAccess`, `McpServerConfig`, `AgentDef`, `RunSettings`),
so a file can say nothing the typed API cannot. Keys that are required only together
(a provider's `model` unless it is scripted, a gate's `command`) are checked here,
after the scopes merged, naming the file that set the table. This module does no I/O
beyond resolving paths, and reads the environment only from the mapping it is given.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harness_core.agents import AgentDef, AgentLimits
from harness_core.config import _plain
from harness_core.config._config import Config, ContextSettings, RewindSettings, RunSettings
from harness_core.config._enforce import enforce
from harness_core.config._mcp import mcp_auth_dir, mcp_servers
from harness_core.config._requirements import Requirements
from harness_core.config._scopes import ConfigFile, user_templates_dir
from harness_core.config._show import ShownValue, flatten, redact
from harness_core.config._substitute import is_reference
from harness_core.config._telemetry import telemetry_config
from harness_core.config._tree import RULE_KEYS, Node, Sourced, dotted
from harness_core.contract import CriterionKind, TaskContract, VerifyCriterion
from harness_core.errors import ConfigError, PolicyError
from harness_core.hooks import HookConfig, HookEvent, hook_files
from harness_core.policy import PROTECTED_WRITE_PATTERNS, ActKind, Effect, Policy, Rule
from harness_core.policy._patterns import compile_path
from harness_core.policy._rules import compile_rule_pattern
from harness_core.prices import ModelPrice, PriceTable
from harness_core.providers import ProviderConfig, WebAccess
from harness_core.run._budget import Budget
from harness_core.sandbox import SandboxConfig, SandboxLimits
from harness_core.store import is_postgres_url
from harness_core.tool_servers import McpServerConfig
from harness_core.toolchain import Toolchain
from harness_core.tools._doc_limits import DocumentLimits
from harness_core.tools._git import GitSettings

if TYPE_CHECKING:  # the plain twins or the pydantic models: the same attributes
    from harness_core.config._model import (
        AgentsTable,
        AgentTable,
        BudgetTable,
        ContractTable,
        GitTable,
        IoToml,
        McpTable,
        PolicyTable,
        PricesTable,
        ProviderEntry,
        ProviderTable,
        RunTable,
        SandboxTable,
        VerifyTable,
        WebTable,
    )

__all__ = ["project", "store_path", "store_url"]

T = TypeVar("T")

def _ceil(value: int | bool) -> int | None:
    return None if value is False else int(value)


def _ceil_f(value: float | bool) -> float | None:
    return None if value is False else float(value)


def _node_at(tree: Mapping[str, Node], path: tuple[str | int, ...]) -> Node | None:
    node: Any = tree
    for part in path:
        if isinstance(node, Sourced) and isinstance(node.value, list) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node if isinstance(node, dict | Sourced) else None


def _origin(node: Node | None) -> ConfigFile | None:
    found: list[ConfigFile] = []
    _origins(node, found)
    return max(found, key=lambda cf: cf.scope.rank) if found else None


def _origins(node: Node | None, out: list[ConfigFile]) -> None:
    if isinstance(node, Sourced):
        out.append(node.origin)
    elif node is not None:
        for child in node.values():
            _origins(child, out)


class _Required:
    """Required keys are checked after the merge; the message names the table's file."""

    def __init__(self, tree: Mapping[str, Node]) -> None:
        self.tree = tree

    def __call__(self, value: T | None, path: tuple[str | int, ...], key: str, why: str = "") -> T:
        if value is not None:
            return value
        origin = _origin(_node_at(self.tree, path))
        where = f" (set in {origin.describe()})" if origin else ""
        raise ConfigError(f"missing key '{dotted((*path, key))}'{why}{where}")


def _policy(
    rule_sets: Sequence[tuple[ConfigFile, Mapping[str, Node]]],
    table: PolicyTable,
    protected: tuple[str, ...],
    secrets: frozenset[str],
) -> Policy:
    rules: list[Rule] = []
    for cf, found in rule_sets:
        for key in RULE_KEYS:
            node = found.get(key)
            if not isinstance(node, Sourced):
                continue
            effect, kind = key.split("_")
            for index, pattern in enumerate(node.value):
                try:
                    rules.append(Rule(Effect(effect), ActKind(kind), pattern, cf.scope.value))
                except PolicyError as exc:
                    message = redact(exc.message, secrets, min_length=1)
                    raise ConfigError(
                        f"'policy.{key}[{index}]' in {cf.describe()}: {message}", hint=exc.hint
                    ) from exc
    return Policy(tier=table.tier, rules=tuple(rules), approval=table.approval,
                  protected=protected)


def _sandbox(t: SandboxTable) -> SandboxConfig:
    return SandboxConfig(
        backend=t.backend,
        limits=SandboxLimits(
            memory_mb=_ceil(t.memory_mb),
            cpu_seconds=_ceil(t.cpu_seconds),
            wall_seconds=_ceil_f(t.wall_seconds),
            max_processes=_ceil(t.max_processes),
            open_files=_ceil(t.open_files),
        ),
        network=t.network,
        commands=t.commands,
        env_allow=tuple(t.env_allow),
        read_paths=tuple(t.read_paths),
    )


def _budget(t: BudgetTable) -> Budget:
    return Budget(
        max_steps=_ceil(t.max_steps),
        max_tokens=_ceil(t.max_tokens),
        max_cost_usd=_ceil_f(t.max_cost_usd),
        wall_seconds=_ceil_f(t.wall_seconds),
        cache_read_weight=float(t.cache_read_weight),
    )


def _document_gate(item: VerifyTable, path: tuple[str | int, ...], required: _Required
                   ) -> VerifyCriterion:
    document = required(item.path, path, "path",
                        ' (a gate of kind "document_contains" names a document)')
    if (item.text is None) == (item.regex is None):
        raise ConfigError('a gate of kind "document_contains" takes exactly one of `text` and'
                          f" `regex` ('{dotted(path)}')")
    if item.regex is not None:
        try:
            re.compile(item.regex)
        except re.error as exc:
            raise ConfigError(f"'{dotted((*path, 'regex'))}': invalid regex: {exc}") from exc
    criterion = VerifyCriterion(kind=CriterionKind.DOCUMENT_CONTAINS, path=document,
                                text=item.text, regex=item.regex, page=item.page,
                                sheet=item.sheet, timeout_seconds=float(item.timeout_seconds))
    from harness_core.verification import require_gate_extras  # only a document gate's

    require_gate_extras(criterion)
    return criterion


def _contract(t: ContractTable, required: _Required) -> TaskContract:
    gates: list[VerifyCriterion] = []
    for index, item in enumerate(t.verify):
        if item.kind is CriterionKind.DOCUMENT_CONTAINS:
            gates.append(_document_gate(item, ("contract", "verify", index), required))
            continue
        command = item.command or ""
        if item.kind is CriterionKind.COMMAND:
            command = required(item.command, ("contract", "verify", index), "command",
                               ' (a gate of kind "command" runs a command)')
        path = ("contract", "verify", index)
        inputs = None if item.inputs is None else _input_patterns(item.inputs, path, required)
        gates.append(VerifyCriterion(kind=item.kind, command=command,
                                     timeout_seconds=float(item.timeout_seconds),
                                     inputs=inputs, editable=item.editable))
    return TaskContract(goal=t.goal, constraints=tuple(t.constraints), verify=tuple(gates))


def _input_patterns(
    patterns: Sequence[str], path: tuple[str | int, ...], required: _Required
) -> tuple[str, ...]:
    """`inputs` of a gate, each checked as a path pattern (a mistake names the key)."""
    for pattern in patterns:
        try:
            compile_path(pattern)
        except PolicyError as exc:
            origin = _origin(_node_at(required.tree, path))
            where = f" (set in {origin.describe()})" if origin else ""
            raise ConfigError(f"'{dotted((*path, 'inputs'))}': {exc.message}{where}",
                              hint=exc.hint) from exc
    return tuple(patterns)


def _one_provider(
    t: ProviderEntry,
    path: tuple[str | int, ...],
    required: _Required,
    web: WebAccess | None,
    fallback: tuple[ProviderConfig, ...],
) -> ProviderConfig:
    kind = required(t.kind, path, "kind")
    script: Path | None
    if kind == "scripted":
        script = required(t.script, path, "script", ' (kind "scripted" replays a script)')
        model = t.model or "scripted"
    else:
        script = t.script
        model = required(t.model, path, "model", f' (kind "{kind}" needs a model)')
    # A key that names a substitution is resolved when the provider is built
    # (`Config.provider_for_run`), never here: loading io.toml needs no key.
    deferred = t.api_key is not None and "$" in t.api_key
    return ProviderConfig(
        kind=kind,
        model=model,
        api_key=None if deferred else t.api_key,
        api_key_ref=t.api_key if deferred else None,
        base_url=t.base_url,
        max_tokens=t.max_tokens,
        script=script,
        stream=t.stream,
        timeout_seconds=float(t.timeout_seconds),
        max_retries=t.max_retries,
        fallback=fallback,
        web=web,
        ca_bundle=t.ca_bundle,
        system_role=t.system_role,
        previous_response_id=t.previous_response_id,
    )


def _provider(
    t: ProviderTable | None, required: _Required, web: WebAccess | None
) -> ProviderConfig | None:
    if t is None:
        return None
    fallback = tuple(
        _one_provider(item, ("provider", "fallback", i), required, web, ())
        for i, item in enumerate(t.fallback)
    )
    return _one_provider(t, ("provider",), required, web, fallback)


def _prices(t: PricesTable | None, required: _Required) -> PriceTable | None:
    if t is None:
        return None
    as_of = required(t.as_of, ("prices",), "as_of", " (prices go stale: say when they were true)")
    models: dict[str, ModelPrice] = {}
    for name, entry in t.models.items():
        path = ("prices", "models", name)
        models[name] = ModelPrice(
            input_per_mtok=float(required(entry.input_per_mtok, path, "input_per_mtok")),
            output_per_mtok=float(required(entry.output_per_mtok, path, "output_per_mtok")),
            cache_read_per_mtok=entry.cache_read_per_mtok,
            cache_write_per_mtok=entry.cache_write_per_mtok,
        )
    return PriceTable(as_of=as_of, models=models)


def _web(t: WebTable | None) -> WebAccess | None:
    if t is None:
        return None
    return WebAccess(
        search=t.search,
        fetch=t.fetch,
        allowed_domains=tuple(t.allowed_domains),
        blocked_domains=tuple(t.blocked_domains),
        max_uses=t.max_uses,
    )


def _mcp(items: Sequence[McpTable], tree: Mapping[str, Node], required: _Required,
         auth_dir: Callable[[], Path]) -> tuple[McpServerConfig, ...]:
    def where(path: tuple[str | int, ...]) -> str:
        origin = _origin(_node_at(tree, path))
        return f" in {origin.describe()}" if origin else ""

    return mcp_servers(items, where, required, auth_dir)


def _hooks(model: IoToml, tree: Mapping[str, Node], required: _Required
           ) -> tuple[HookConfig, ...]:
    """Every scope's `[[hooks]]`, lowest scope first, each tagged with its scope."""
    node = tree.get("hooks")
    items = node.value if isinstance(node, Sourced) else []
    out: list[HookConfig] = []
    seen: dict[str, str] = {}
    counts: dict[str, int] = {}
    for position, (item, table) in enumerate(zip(items, model.hooks, strict=True)):
        path = ("hooks", position)
        origin = _origin(item)
        scope = origin.scope.value if origin else "project"
        where = f" in {origin.describe()}" if origin else ""
        index, counts[scope] = counts.get(scope, 0), counts.get(scope, 0) + 1
        name = table.name if table.name is not None else f"{scope}.hooks[{index}]"
        if name in seen:
            raise ConfigError(f"two hooks are named {name!r} ({seen[name]} and{where})",
                              hint="give each [[hooks]] entry its own `name`")
        seen[name] = where.strip() or "?"
        event = required(table.event, path, "event")
        command = required(table.command, path, "command")
        try:
            out.append(HookConfig(event=HookEvent(event), command=tuple(command), name=name,
                                  scope=scope, matcher=table.matcher,
                                  timeout_s=float(table.timeout_s)))
        except ConfigError as exc:
            raise ConfigError(f"'{dotted(path)}'{where}: {exc.message}") from exc
    return tuple(out)


def _template_dirs(
    workspace: Path, configured: Path | None, env: Mapping[str, str]
) -> tuple[Path, ...]:
    user = user_templates_dir(env)
    first = configured or workspace / ".io" / "templates"
    return (first,) if user is None or user == first else (first, user)


def _git(t: GitTable) -> GitSettings:
    name, email = t.author_name, t.author_email
    if t.author is not None:
        found = re.fullmatch(r"\s*([^<>]*?)\s*<([^<>]+)>\s*", t.author)
        if found is None or not found.group(1):
            raise ConfigError(f"'git.author' must read 'Name <email>', not {t.author!r}")
        name, email = name or found.group(1), email or found.group(2)
    return GitSettings(author_name=name, author_email=email,
                       timeout_seconds=float(t.timeout_seconds), history_depth=t.history_depth)


def _agent_limits(t: AgentsTable) -> AgentLimits:
    return AgentLimits(max_depth=t.max_depth, max_children=t.max_children, parallel=t.parallel)


def _agents(agents: Mapping[str, AgentTable], required: _Required) -> dict[str, AgentDef]:
    for name, entry in agents.items():
        for key, kind, patterns in (("deny_write", ActKind.WRITE, entry.deny_write),
                                    ("deny_net", ActKind.NET, entry.deny_net)):
            for index, pattern in enumerate(patterns):
                try:
                    compile_rule_pattern(kind, pattern)
                except PolicyError as exc:
                    path = ("agents", name, key)
                    origin = _origin(_node_at(required.tree, path))
                    where = f" in {origin.describe()}" if origin else ""
                    raise ConfigError(f"'{dotted((*path, index))}'{where}: {exc.message}",
                                      hint=exc.hint) from exc
    return {
        name: AgentDef(
            name=name,
            model=entry.model,
            role=entry.role,
            deny_write=tuple(entry.deny_write),
            deny_net=tuple(entry.deny_net),
        )
        for name, entry in agents.items()
    }


def _run(t: RunTable) -> RunSettings:
    return RunSettings(
        output_cap_bytes=t.output_cap_bytes,
        exec_timeout_seconds=float(t.exec_timeout_seconds),
        stall_window=t.stall_window,
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


def _default_store(env: Mapping[str, str]) -> Path | None:
    try:
        return store_path(None, {k: v for k, v in env.items() if k != "IO_STORE"})
    except ConfigError:
        return None


def _protected(workspace: Path, store: Path, files: Sequence[ConfigFile],
               hooks: Sequence[HookConfig] = ()) -> tuple[str, ...]:
    root = workspace.resolve()
    # A hook's own files: the agent must not rewrite what a hook runs (or reads).
    out: list[str] = list(hook_files(workspace, hooks))
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
            # A key still written as `${env:NAME}` could not be resolved: no secret.
            out.update(v for v in values if isinstance(v, str) and v and not is_reference(v))
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
    order = {name: index for index, name in enumerate(_plain.IoToml.model_fields)}
    values.sort(key=lambda v: order.get(v.key.split(".", 1)[0].split("[", 1)[0], len(order)))
    return tuple(values)


def project(
    workspace: Path,
    files: tuple[ConfigFile, ...],
    model: IoToml,
    merged: Mapping[str, Node],
    rule_sets: Sequence[tuple[ConfigFile, Mapping[str, Node]]],
    substituted: frozenset[str],
    env: Mapping[str, str],
    requirements: Requirements | None = None,
    tables: Collection[str] | None = None,
) -> Config:
    """Build the typed `Config` from the merged tree and each scope's policy rules.

    Args:
        workspace: The workspace root (the store inside it becomes protected).
        files: The scope files read, lowest precedence first.
        model: The merged tree validated as one model (defaults filled in).
        merged: The merged annotated tree, policy rule lists removed.
        rule_sets: Each scope file with its own `[policy]` rule lists.
        substituted: Every value a substitution produced.
        env: The environment (`IO_STORE`, `XDG_STATE_HOME`, `HOME`).
        requirements: The system scope's `[requirements]` (None: none).
        tables: The tables that were resolved (None: all), for the requirements.

    Raises:
        ConfigError: A required key is missing, a rule is malformed, or the store
            cannot be placed.
        RequirementError: The result breaks a requirement no default can fill.
    """
    credentials: set[str] = set()
    _credentials(merged, credentials)
    set_keys = model.telemetry.model_fields_set
    telemetry, header_values = telemetry_config(
        {key: getattr(model.telemetry, key) for key in set_keys}, env
    )
    secrets = frozenset(substituted | credentials | header_values)
    required = _Required(merged)
    budget, prices = _budget(model.budget), _prices(model.prices, required)
    if budget.max_cost_usd is not None and prices is None:
        # Checked at load, so every command that loads [budget] refuses it (#10).
        raise ConfigError(
            "[budget] max_cost_usd needs a [prices] table (with as_of) to derive costs from",
            hint="add [prices] with the models you use, or set max_cost_usd = false",
        )
    web = _web(model.web)
    store = store_path(model.store.path, env)
    url = store_url(model.store.url, env)
    hooks = _hooks(model, merged, required)
    protected = _protected(workspace, store, files, hooks)
    toolchain = model.toolchain
    return enforce(Config(
        files=files,
        policy=_policy(rule_sets, model.policy, protected, secrets),
        sandbox=_sandbox(model.sandbox),
        budget=budget,
        contract=_contract(model.contract, required),
        provider=_provider(model.provider, required, web),
        prices=prices,
        toolchain=Toolchain(test=toolchain.test, build=toolchain.build, lint=toolchain.lint),
        context_max_tokens=model.context.max_tokens,
        web=web,
        mcp=_mcp(model.mcp, merged, required, lambda: mcp_auth_dir(
            workspace, store, _default_store(env))),
        hooks=hooks,
        agents=_agents(model.agents.__pydantic_extra__ or {}, required),
        agent_limits=_agent_limits(model.agents),
        templates_dir=model.templates.dir,
        template_dirs=_template_dirs(workspace, model.templates.dir, env),
        store_path=store,
        store_url=url,
        run=_run(model.run),
        telemetry=telemetry,
        git=_git(model.git),
        documents=DocumentLimits(
            max_member_bytes=model.documents.max_member_bytes,
            max_total_bytes=model.documents.max_total_bytes,
            max_ratio=float(model.documents.max_ratio),
            max_members=model.documents.max_members),
        context=ContextSettings(model.context.strategy, model.context.threshold,
                                model.context.window, model.context.keep_steps,
                                model.context.compact_template),
        rewind=RewindSettings(model.rewind.enabled, model.rewind.max_bytes),
        secrets=secrets,
        _shown=_shown(merged, rule_sets, secrets),
        _merged=merged,
        _rules=tuple(rule_sets),
        _env=env,
        _key_files=_key_files(merged),
        requirements=requirements or Requirements(),
    ), env, tables)


def _key_files(merged: Mapping[str, Node]) -> dict[int, ConfigFile]:
    """The scope file that set each provider key (0: [provider]; i + 1: fallback i)."""
    out: dict[int, ConfigFile] = {}
    origin = _origin(_node_at(merged, ("provider", "api_key")))
    if origin is not None:
        out[0] = origin
    index = 0
    while _node_at(merged, ("provider", "fallback", index)) is not None:
        origin = _origin(_node_at(merged, ("provider", "fallback", index, "api_key")))
        if origin is not None:
            out[index + 1] = origin
        index += 1
    return out
