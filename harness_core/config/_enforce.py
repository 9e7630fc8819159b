"""The system scope's requirements applied to a projected `Config`.

Every file's values were judged as the file was read (`_requirements.check_tree`), so a
value beyond the floor here comes from io's own defaults: such a default is replaced by
the floor's value (``max_steps`` 50 under a floor of 20 becomes 20) and shown as set by
the system scope, held by its requirement. What no default can fill is refused: a
required hook no scope defines, span export the environment switched off, an io version
outside the range. This module reads no file; it reads the environment only from the
mapping it is given.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import replace
from typing import Any

from harness_core.config._config import Config
from harness_core.config._requirements import CEILINGS, Requirements, traces_url
from harness_core.config._requirements_table import specifier_set
from harness_core.config._scopes import Scope
from harness_core.config._show import ShownValue
from harness_core.config._telemetry import disabled
from harness_core.config._tree import Sourced
from harness_core.errors import RequirementError
from harness_core.otlp import TelemetryConfig
from harness_core.policy import ApprovalMode, Tier
from harness_core.sandbox import BackendChoice

__all__ = ["enforce", "running_version"]


def running_version() -> str:
    """The version of io that is running."""
    from harness_core import __version__  # defined by the package root alone

    return __version__


def enforce(cfg: Config, env: Mapping[str, str], tables: Collection[str] | None) -> Config:
    """`cfg` under its requirements: defaults beyond the floor filled with the floor's
    values (and listed by `Config.show` as the system scope's).

    Args:
        cfg: The projected configuration, with its `requirements`.
        env: The environment the configuration was loaded with.
        tables: The tables that were resolved (None: all); a table that was not is not
            judged (it projected as absent).

    Raises:
        RequirementError: io's version is outside the range, a required hook is not
            defined, span export is off or goes elsewhere, a provider's default model or
            host is not allowed, or a cost ceiling has no prices to derive costs from.
    """
    req = cfg.requirements
    if req.is_empty:
        return cfg
    _check_version(req)
    filled: list[ShownValue] = []
    cfg = _fill(cfg, req, filled)

    def resolved(table: str) -> bool:
        return tables is None or table in tables

    if req.max_cost_usd is not None and cfg.prices is None and resolved("prices"):
        # Fail closed: a cost ceiling with nothing to derive costs from checks nothing.
        raise RequirementError(
            f"requirements.max_cost_usd in {req.where()} caps a run's cost, and no scope"
            " sets a [prices] table to derive costs from",
            requirement="requirements.max_cost_usd", source=str(req.source),
            tried_by="the loaded configuration",
            hint="add [prices] (with as_of) for the models allowed, in the system scope's file")
    if resolved("provider"):
        _check_providers(cfg, req)
    if resolved("hooks"):
        _check_hooks(cfg, req)
    if resolved("telemetry"):
        cfg = _telemetry(cfg, req, env, filled)
    return replace(cfg, _shown=(*cfg._shown, *filled))  # pyright: ignore[reportPrivateUsage]


def _check_version(req: Requirements) -> None:
    if req.io_version is None:
        return
    version = running_version()
    if not specifier_set(req.io_version).contains(version, prereleases=True):
        raise req.refusal("requirements.io_version", f"io {version}",
                          f"only {req.io_version!r}", "the io program that is running")


def _fill(cfg: Config, req: Requirements, filled: list[ShownValue]) -> Config:
    def note(key: str, value: Any, requirement: str) -> None:
        assert req.source is not None
        shown = value.value if isinstance(value, Tier | ApprovalMode | BackendChoice) else value
        filled.append(ShownValue(key, shown, Scope.SYSTEM, req.source, held=requirement))

    policy, sandbox = cfg.policy, cfg.sandbox
    if req.loosens("tier", policy.tier) and req.max_tier is not None:
        policy = replace(policy, tier=req.max_tier)
        note("policy.tier", req.max_tier, "requirements.max_tier")
    if req.loosens("approval", policy.approval) and req.approval:
        policy = replace(policy, approval=req.approval[0])
        note("policy.approval", req.approval[0], "requirements.approval")
    if req.loosens("backend", sandbox.backend):
        backend = next(iter(_backends(req)), None)
        if backend is not None:
            sandbox = replace(sandbox, backend=backend)
            note("sandbox.backend", backend, "requirements.sandbox_backends")
    budget, limits = cfg.budget, cfg.agent_limits
    for name, table in CEILINGS.items():
        target = budget if table == "budget" else limits
        if req.loosens(name, getattr(target, name)):
            limit = getattr(req, name)
            if table == "budget":
                budget = replace(budget, **{name: limit})
            else:
                limits = replace(limits, **{name: limit})
            note(f"{table}.{name}", limit, f"requirements.{name}")
    return replace(cfg, policy=policy, sandbox=sandbox, budget=budget, agent_limits=limits)


def _backends(req: Requirements) -> Iterator[BackendChoice]:
    """The backends the floor allows, the strongest first; never `auto` without fallback."""
    for backend in (BackendChoice.NATIVE, BackendChoice.FLOOR, BackendChoice.AUTO,
                    BackendChoice.OFF):
        if not req.loosens("backend", backend):
            yield backend


def _where(cfg: Config, table: str) -> str:
    """How a message names the file that set `table` (its highest-scope leaf)."""
    node = cfg._merged.get(table)  # pyright: ignore[reportPrivateUsage]
    origins: list[Any] = []
    stack: list[Any] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Sourced):
            origins.append(item.origin)
            if isinstance(item.value, list):
                stack += item.value
        elif isinstance(item, dict):
            stack += item.values()
    if not origins:
        return f"[{table}]"
    origin = max(origins, key=lambda cf: cf.scope.rank)
    return f"[{table}] in {origin.describe()}"


def _check_providers(cfg: Config, req: Requirements) -> None:
    if cfg.provider is None:
        return
    where = _where(cfg, "provider")
    for index, p in enumerate((cfg.provider, *cfg.provider.fallback)):
        key = "provider" if index == 0 else f"provider.fallback[{index - 1}]"
        req.check("provider", p.kind, key=f"{key}.kind", tried_by=where)
        req.check("model", p.model, key=f"{key}.model", tried_by=where)
        req.check_host(p.kind, p.base_url, key=f"{key}.base_url", tried_by=where)


def _check_hooks(cfg: Config, req: Requirements) -> None:
    """Each required hook is defined, by the system scope: a hook a project defines runs
    in the sandbox under the project's control, so it cannot stand in for the floor's."""
    scopes = {hook.name: hook.scope for hook in cfg.hooks}
    for name in req.hooks:
        scope = scopes.get(name)
        if scope == "system":
            continue
        found = "no scope's [[hooks]] defines" if scope is None else \
            f"only the {scope} scope's [[hooks]] defines"
        raise RequirementError(
            f"requirements.hooks in {req.where()} requires hook {name!r}, which {found}",
            requirement="requirements.hooks", source=str(req.source),
            tried_by="the loaded configuration" if scope is None else f"the {scope} scope",
            hint=f"define [[hooks]] name = {name!r} in the system scope's file")


def _telemetry(cfg: Config, req: Requirements, env: Mapping[str, str],
               filled: list[ShownValue]) -> Config:
    if not (req.telemetry or req.telemetry_endpoint):
        return cfg
    variables = "the environment (OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER)"
    requirement = ("requirements.telemetry_endpoint" if req.telemetry_endpoint
                   else "requirements.telemetry")
    if cfg.telemetry is None:
        if disabled(env):
            raise req.refusal(requirement, "span export switched off", "export must be on",
                              variables)
        if req.telemetry_endpoint is None:
            raise RequirementError(
                f"requirements.telemetry in {req.where()} requires span export, and no"
                " scope sets [telemetry] otlp_endpoint",
                requirement=requirement, source=str(req.source),
                tried_by="the loaded configuration",
                hint="set requirements.telemetry_endpoint or [telemetry] otlp_endpoint in"
                     " the system scope's file")
        assert req.source is not None
        url = traces_url(req.telemetry_endpoint)
        filled.append(ShownValue("telemetry.otlp_endpoint", req.telemetry_endpoint,
                                 Scope.SYSTEM, req.source, held=requirement))
        return replace(cfg, telemetry=TelemetryConfig(endpoint=url))
    req.check("telemetry_endpoint", cfg.telemetry.endpoint, key="the OTLP endpoint",
              tried_by="the environment (OTEL_EXPORTER_OTLP_*ENDPOINT)")
    return cfg
