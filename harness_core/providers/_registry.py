"""From a `ProviderConfig` to a `Provider`: a name → ``"module:attr"`` table, imported lazily.

Vendor modules (and therefore `http.client`) are imported only when a provider of that
kind is built, so `io --help` and config checks stay cheap. `validate_web` states which web
declarations each vendor can carry; it is called by every vendor constructor and is
exported so `io config check` can refuse a bad `[web]` table without building anything.
This module never opens a connection.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, cast

from harness_core.clock import Clock
from harness_core.errors import ConfigError
from harness_core.providers._base import Provider, WebAccess
from harness_core.providers._config import ProviderConfig

if TYPE_CHECKING:
    from harness_core.providers._transport import Transport

__all__ = ["PROVIDER_KINDS", "build_provider", "validate_web"]

PROVIDER_KINDS: dict[str, str] = {
    "anthropic": "harness_core.providers.anthropic:AnthropicProvider",
    "openai": "harness_core.providers.openai:OpenAIProvider",
    "openrouter": "harness_core.providers.openrouter:OpenRouterProvider",
    "scripted": "harness_core.providers.scripted:ScriptedProvider",
}
"""Provider kind → the ``module:attr`` of its class."""


def validate_web(kind: str, web: WebAccess | None) -> None:
    """Refuse a web declaration the vendor of `kind` cannot carry.

    A declaration is refused rather than narrowed: dropping a domain filter or a
    `max_uses` cap silently would widen what the operator wrote.

    Args:
        kind: The provider kind (``anthropic``, ``openai``, ``openrouter``, ``scripted``).
        web: The declaration, or None.

    Raises:
        ConfigError: The vendor has no way to express part of the declaration.
    """
    if web is None or not (web.search or web.fetch):
        return
    if web.max_uses is not None and web.max_uses < 1:
        raise ConfigError(f"[web] max_uses must be at least 1, got {web.max_uses}")
    check = _WEB_LIMITS.get(kind)
    if check is None:
        raise ConfigError(f"unknown provider kind {kind!r}", hint=_kinds_hint())
    problems = check(web)
    if problems:
        raise ConfigError(
            f"[web] cannot be carried by the {kind} provider: " + "; ".join(problems),
            hint="remove those keys, or use a provider whose vendor can enforce them",
        )


def _anthropic_web(web: WebAccess) -> list[str]:
    if web.allowed_domains and web.blocked_domains:
        return ["allowed_domains and blocked_domains together (Anthropic takes one)"]
    return []


def _openai_web(web: WebAccess) -> list[str]:
    problems: list[str] = []
    if web.fetch:
        problems.append("fetch (Chat Completions has no fetch tool)")
    if web.blocked_domains:
        problems.append("blocked_domains (Chat Completions takes only an allow-list)")
    if web.max_uses is not None:
        problems.append("max_uses (Chat Completions has no per-request search cap)")
    return problems


def _openrouter_web(web: WebAccess) -> list[str]:
    problems: list[str] = []
    if web.fetch:
        problems.append("fetch (OpenRouter's web plugin only searches)")
    if web.allowed_domains or web.blocked_domains:
        problems.append("a domain filter (OpenRouter's web plugin takes none)")
    return problems


_WEB_LIMITS: dict[str, Callable[[WebAccess], list[str]]] = {
    "anthropic": _anthropic_web,
    "openai": _openai_web,
    "openrouter": _openrouter_web,
    # The scripted provider replays recorded answers and never searches.
    "scripted": lambda web: [],
}


def build_provider(
    config: ProviderConfig,
    *,
    env: Mapping[str, str],
    clock: Clock,
    transport: Transport | None = None,
) -> Provider:
    """Build the provider `config` names, wrapped in a `Fallback` when it lists fallbacks.

    Args:
        config: The `[provider]` table, typed.
        env: Where the vendor's usual key variable is looked up when `api_key` is unset.
        clock: Time for backoff sleeps and latency.
        transport: Shared connections (several providers, one pool); each provider
            makes its own when None.

    Returns:
        A `Provider`; the caller closes it.

    Raises:
        ConfigError: Unknown kind, missing key, a fallback with its own fallbacks, or a
            web declaration a vendor cannot carry.
    """
    primary = _build_one(config, env=env, clock=clock, transport=transport)
    if not config.fallback:
        return primary
    from harness_core.providers.fallback import Fallback

    chain: list[Provider] = [primary]
    try:
        for backup in config.fallback:
            if backup.fallback:
                raise ConfigError(
                    f"a [[provider.fallback]] ({backup.kind}) cannot list fallbacks of its own"
                )
            chain.append(_build_one(backup, env=env, clock=clock, transport=transport))
    except BaseException:
        for built in chain:
            built.close()
        raise
    models = [config.model] + [backup.model for backup in config.fallback]
    return Fallback(chain, models=models, clock=clock)


def _build_one(
    config: ProviderConfig,
    *,
    env: Mapping[str, str],
    clock: Clock,
    transport: Transport | None,
) -> Provider:
    factory = _load(config.kind)
    if config.kind == "scripted":
        return cast(Callable[[ProviderConfig], Provider], factory)(config)
    build = cast(Callable[..., Provider], factory)
    return build(config, env=env, clock=clock, transport=transport)


def _load(kind: str) -> object:
    target = PROVIDER_KINDS.get(kind)
    if target is None:
        raise ConfigError(f"unknown provider kind {kind!r}", hint=_kinds_hint())
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"provider kind {kind!r} is not available: {exc}") from exc
    return cast(object, getattr(module, attr))


def _kinds_hint() -> str:
    return "kind is one of: " + ", ".join(sorted(PROVIDER_KINDS))
