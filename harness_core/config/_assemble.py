"""Run assembly: a loaded `Config` → the typed objects of a run → a `Runner`.

The one builder every front end calls: `io run`, `io resume` and `io session turn` go
through `assemble_run`, and `io config check` goes through `check_runnable`, which runs
the same preparation (spec, cost pricing, provider) and stops before the run. So a
configuration `io config check` accepts is one `io run` accepts, and the other way
round. Nothing here reads the environment except from the mapping passed in, and
nothing writes to the terminal.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness_core._record import record
from harness_core.clock import Clock, SystemClock
from harness_core.config._config import Config
from harness_core.config._restore import snapshot_root
from harness_core.config._substitute import is_reference
from harness_core.errors import ConfigError, MissingSecret
from harness_core.events import EventSink
from harness_core.hooks import hook_files
from harness_core.messages import Usage
from harness_core.policy import Approver, Policy
from harness_core.providers import Provider, build_provider
from harness_core.redaction import SecretRedactor
from harness_core.run import Runner, RunSpec
from harness_core.run._windows import context_window_of
from harness_core.store import Store
from harness_core.templates import Templates, discover_skills
from harness_core.toolchain import survey as survey_toolchain
from harness_core.tools._plan_tools import Responder
from harness_core.workspace import Workspace

__all__ = ["RunAssembly", "assemble_run", "build_run_spec", "check_runnable", "secret_redactor"]


@record(frozen=False)
class RunAssembly:
    """A run ready to drive: its spec and a runner that holds the built provider.

    Attributes:
        spec: What the run is started (or resumed) with.
        runner: The runner, over the caller's store and the built provider.
        provider: The provider the runner calls; `close` closes it.
    """

    spec: RunSpec
    runner: Runner
    provider: Provider

    def close(self) -> None:
        """Close the provider (the store stays the caller's)."""
        self.provider.close()

    def __enter__(self) -> RunAssembly:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cost_function(config: Config) -> Callable[[str, Usage], float | None] | None:
    prices = config.prices
    if config.budget.max_cost_usd is not None and prices is None:
        raise ConfigError(
            "[budget] max_cost_usd needs a [prices] table (with as_of) to derive costs from",
            hint="add [prices] with the models you use, or set max_cost_usd = false",
        )
    if prices is None:
        return None
    provider = config.provider
    # A scripted replay names its served models line by line: only those are priced,
    # when they are served (an unpriced one stops the run then).
    configured = tuple(p.model for p in (
        (provider, *provider.fallback) if provider is not None else ()
    ) if p.model and p.kind != "scripted")
    if config.budget.max_cost_usd is not None:
        missing = [m for m in configured if prices.price_for(m) is None]
        if missing:
            raise ConfigError(
                f"[budget] max_cost_usd cannot be enforced: [prices] has no price for"
                f" {', '.join(repr(m) for m in missing)}",
                hint=f'add [prices.models."{missing[0]}"] with input_per_mtok and'
                     " output_per_mtok, or set max_cost_usd = false",
            )

    def cost_of(model: str, usage: Usage) -> float | None:
        # The model that served, or the configured one it is a version of (a vendor
        # answers "gpt-5" with "gpt-5-2025-08-07").
        price = prices.price_for(model)
        if price is None:
            price = next((prices.price_for(m) for m in configured
                          if model.startswith(m) and prices.price_for(m) is not None), None)
        return price.cost_of(usage) if price is not None else None

    return cost_of


def _store_paths(config: Config, workspace: Path) -> tuple[str, ...]:
    store = str(config.store_path.resolve())
    if not store.startswith(str(workspace) + os.sep):
        return ()
    return tuple(store + suffix for suffix in ("", "-wal", "-shm"))


def _hook_paths(config: Config, workspace: Path) -> tuple[str, ...]:
    """The workspace files hooks name, absolute: read-only to sandboxed commands."""
    root = os.path.realpath(workspace)
    return tuple(os.path.join(root, rel) for rel in hook_files(workspace, config.hooks))


def build_run_spec(
    config: Config, workspace: Path, goal: str, *, env: Mapping[str, str]
) -> RunSpec:
    """Project a loaded config onto the `RunSpec` of a run of `goal` in `workspace`.

    Args:
        config: The loaded configuration.
        workspace: The workspace root (absolute).
        goal: The goal of the run (it replaces `[contract] goal`).
        env: The caller's environment, passed to sandboxed commands after the scrub.

    Returns:
        The spec; the detected toolchain is overridden by `[toolchain]`.

    Raises:
        ConfigError: `[budget] max_cost_usd` is set without `[prices]`, or `[prices]`
            has no price for the configured model (or a fallback's).
    """
    ws = Workspace(workspace)
    provider = config.provider
    settings = config.run
    return RunSpec(
        workspace=ws,
        contract=replace(config.contract, goal=goal),
        policy=config.policy,
        budget=config.budget,
        model=provider.model if provider is not None else "",
        max_tokens=provider.max_tokens if provider is not None else RunSpec.max_tokens,
        sandbox=config.sandbox,
        context_max_tokens=config.context_max_tokens,
        output_cap=settings.output_cap_bytes,
        exec_timeout=settings.exec_timeout_seconds,
        stall_window=settings.stall_window,
        toolchain=survey_toolchain(ws, config.toolchain).effective,
        env=dict(env),
        web=config.web,
        protected_paths=_store_paths(config, workspace) + _hook_paths(config, workspace),
        mcp=tuple(config.mcp),
        cost_of=_cost_function(config),
        store_path=config.store_path.resolve(),
        provider_keys=provider_keys(config, env),
        secrets=config.secrets,
        git=config.git,
        documents=config.documents,
        agents=config.agents,
        agent_limits=config.agent_limits,
        skills=discover_skills(workspace),
        **_long_task_settings(config, goal),
        hooks=config.hooks,
    )


def _long_task_settings(config: Config, goal: str) -> dict[str, Any]:
    """The `[context]` compaction keys and the `[rewind]` table, as `RunSpec` fields."""
    context = config.context
    model = config.provider.model if config.provider is not None else ""
    if context.strategy == "compact" and context.window is None and (
            context_window_of(model) is None):
        raise ConfigError(
            f'[context] strategy = "compact" needs the context window of model {model!r},'
            " which io does not know", hint="set [context] window = TOKENS")
    prompt = None
    if context.compact_template is not None:
        prompt = Templates(config.template_dirs).render(context.compact_template,
                                                        {"goal": goal})
    return {
        "context_strategy": context.strategy, "compact_threshold": context.threshold,
        "context_window": context.window, "compact_keep_steps": context.keep_steps,
        "compact_prompt": prompt,
        "snapshot_dir": snapshot_root(config),
        "snapshot_max_bytes": config.rewind.max_bytes,
    }


PROVIDER_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY")
"""Environment variables the providers read a key from when `api_key` is unset."""


def provider_keys(config: Config, env: Mapping[str, str]) -> tuple[str, ...]:
    """Every provider credential this process holds: configured keys and key variables
    (the sandbox keeps them from every command)."""
    keys: list[str] = [env[name] for name in PROVIDER_KEY_VARIABLES if env.get(name)]
    provider = config.provider
    if provider is not None:
        try:
            provider = config.provider_for_run()
        except ConfigError:
            pass  # a key that cannot be resolved is not held: nothing to keep out
        keys += [p.api_key for p in (provider, *provider.fallback)
                 if p.api_key and not is_reference(p.api_key)]
    return tuple(dict.fromkeys(keys))


def secret_redactor(config: Config, env: Mapping[str, str]) -> SecretRedactor:
    """What keeps every secret this process holds out of records and printed output:
    the config's secrets (`Config.secrets`) and every provider key (`provider_keys`)."""
    return SecretRedactor((*config.secrets, *provider_keys(config, env)))


def _prepare(
    config: Config, workspace: Path, goal: str, env: Mapping[str, str], clock: Clock
) -> tuple[RunSpec, Provider]:
    spec = build_run_spec(config, workspace, goal, env=env)
    return spec, build_provider(config.provider_for_run(), env=env, clock=clock)


_STAND_IN_KEY = "io-config-check-stand-in"  # noqa: S105 - sent nowhere: the check sends nothing


def check_runnable(
    config: Config,
    workspace: Path,
    *,
    env: Mapping[str, str],
    for_run: bool = True,
    warn: Callable[[str], None] | None = None,
) -> RunSpec:
    """Everything `assemble_run` checks, without running: what `io config check` runs.

    Builds the spec and the provider (no request is sent) and closes the provider.

    Args:
        config: The loaded configuration.
        workspace: The workspace root.
        env: The caller's environment.
        for_run: True: what `io run` needs must be there (a `[provider]` and its key).
            False: a missing `[provider]` or an unset key is reported to `warn` and the
            rest is still checked (the provider is built with a stand-in key).
        warn: Receives each warning (with `for_run` False).

    Returns:
        The spec a run of `[contract] goal` would start with (for reports such as the
        inputs each gate protects).

    Raises:
        ConfigError: A provider that cannot be built (unknown kind, a web declaration
            its vendor cannot carry), `max_cost_usd` without `[prices]`, and with
            `for_run` no `[provider]`.
        MissingSecret: With `for_run`: a provider key that is not set.
    """
    if for_run:
        spec, provider = _prepare(config, workspace, config.contract.goal, env, SystemClock())
        provider.close()
        return spec
    say = warn or (lambda _text: None)
    spec = build_run_spec(config, workspace, config.contract.goal, env=env)
    if config.provider is None:
        say("no [provider] is configured: `io run` needs one (commands that call no model"
            " do not)")
        return spec

    def stand_in(missing: MissingSecret) -> str:
        say(f"{missing.message}: `io run` will stop on it until it is set")
        return _STAND_IN_KEY

    chain = config.provider_for_run(stand_in=stand_in)
    try:
        build_provider(chain, env=env, clock=SystemClock()).close()
    except MissingSecret as missing:  # no key configured and the vendor's variable unset
        stand_in(missing)
        chain = replace(chain, api_key=chain.api_key or _STAND_IN_KEY, fallback=tuple(
            replace(f, api_key=f.api_key or _STAND_IN_KEY) for f in chain.fallback))
        build_provider(chain, env=env, clock=SystemClock()).close()
    return spec


def assemble_run(
    config: Config,
    workspace: Path,
    goal: str,
    *,
    store: Store,
    env: Mapping[str, str],
    clock: Clock | None = None,
    on_event: EventSink | None = None,
    approver: Approver | None = None,
    responder: Responder | None = None,
    policy: Policy | None = None,
    new_id: Callable[[], str] | None = None,
) -> RunAssembly:
    """Build what a run needs from a loaded config: spec, provider and runner.

    Args:
        config: The loaded configuration.
        workspace: The workspace root (absolute).
        goal: The goal (a turn's message, a resumed run's recorded goal).
        store: The store the run is recorded in (the caller opens and closes it).
        env: The caller's environment (provider key fallback, sandboxed commands).
        clock: Time; the system clock when None.
        on_event: Where the run's events go.
        approver: Decides acts that need approval (None: the run pauses).
        responder: Answers the agent's questions (None: the run pauses).
        policy: Replaces the configured policy (`io resume --stored-policy`).
        new_id: Makes the new run's id (`io batch` fixes it in advance); a random id
            when None.

    Returns:
        The assembly; close it (or use it as a context manager) to close the provider.

    Raises:
        ConfigError: Whatever `check_runnable` raises.
    """
    clock = clock or SystemClock()
    spec, provider = _prepare(config, workspace, goal, env, clock)
    if policy is not None:
        spec = replace(spec, policy=policy)
    runner = Runner(store, provider, clock=clock, on_event=on_event, approver=approver,
                    responder=responder, new_id=new_id)
    return RunAssembly(spec=spec, runner=runner, provider=provider)
