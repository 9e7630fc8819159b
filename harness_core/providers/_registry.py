"""From a `ProviderConfig` to a `Provider`: a name → ``"module:attr"`` table, imported lazily.

Vendor modules (and therefore httpx) are imported only when a provider of that kind
is built, so `io --help` and the scripted provider never load httpx. Every HTTP provider
of one build (a fallback chain included) shares one `httpx.Client`. `validate_web` states which web
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
    from harness_core.providers._httpx import httpx

__all__ = ["PROVIDER_KINDS", "build_provider", "validate_web"]

PROVIDER_KINDS: dict[str, str] = {
    "anthropic": "harness_core.providers.anthropic:AnthropicProvider",
    "openai": "harness_core.providers.openai:OpenAIProvider",
    "openai-responses": "harness_core.providers.responses:OpenAIResponsesProvider",
    "openrouter": "harness_core.providers.openrouter:OpenRouterProvider",
    "scripted": "harness_core.providers.scripted:ScriptedProvider",
}
"""Provider kind → the ``module:attr`` of its class."""


def validate_web(kind: str, web: WebAccess | None) -> None:
    """Refuse a web declaration the vendor of `kind` cannot carry.

    A declaration is refused rather than narrowed: dropping a domain filter or a
    `max_uses` cap silently would widen what the operator wrote.

    Args:
        kind: The provider kind (a key of `PROVIDER_KINDS`).
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


def _responses_web(web: WebAccess) -> list[str]:
    problems: list[str] = []
    if web.fetch:
        problems.append("fetch (the Responses API's web_search tool only searches)")
    if web.blocked_domains:
        problems.append("blocked_domains (the web_search tool takes only an allow-list)")
    if web.max_uses is not None:
        problems.append("max_uses (the web_search tool has no per-request cap)")
    if len(web.allowed_domains) > _RESPONSES_MAX_DOMAINS:
        problems.append(f"more than {_RESPONSES_MAX_DOMAINS} allowed_domains")
    return problems


_RESPONSES_MAX_DOMAINS = 20
"""The web_search tool's allow-list holds at most 20 domains (OpenAI's documented cap)."""


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
    "openai-responses": _responses_web,
    "openrouter": _openrouter_web,
    # The scripted provider replays recorded answers and never searches.
    "scripted": lambda web: [],
}


def build_provider(
    config: ProviderConfig,
    *,
    env: Mapping[str, str],
    clock: Clock,
    client: httpx.Client | None = None,
) -> Provider:
    """Build the provider `config` names, wrapped in a `Fallback` when it lists fallbacks.

    Args:
        config: The `[provider]` table, typed.
        env: Where the vendor's usual key variable and the proxy settings
            (``HTTPS_PROXY``, ``NO_PROXY`` …) are looked up.
        clock: Time for backoff sleeps and latency.
        client: The `httpx.Client` to send with (the caller closes it). When None and
            some provider speaks HTTP, one client is made for the whole chain, trusting
            every `ca_bundle` the chain names, and closed with the returned provider.

    Returns:
        A `Provider`; the caller closes it.

    Raises:
        ConfigError: Unknown kind, missing key, a fallback with its own fallbacks, a
            `ca_bundle` that cannot be loaded, or a web declaration a vendor cannot carry.
    """
    chain_configs = (config, *config.fallback)
    if any(c.api_key_ref is not None for c in chain_configs):
        raise ConfigError(
            f"the {config.kind} provider's api_key is still a reference; resolve it first",
            hint="build from `Config.provider_for_run()`, not `Config.provider`")
    for backup in config.fallback:
        if backup.fallback:
            raise ConfigError(
                f"a [[provider.fallback]] ({backup.kind}) cannot list fallbacks of its own"
            )
    factories = [_load(c.kind) for c in chain_configs]
    owned = None
    if client is None and not config.fallback:
        shared = None  # a lone provider makes (and closes) its own client
    elif client is None and any(c.kind != "scripted" for c in chain_configs):
        from harness_core.providers._client import make_client

        bundles = [c.ca_bundle for c in chain_configs if c.ca_bundle is not None]
        urls = [
            c.base_url or str(getattr(f, "default_base_url", ""))
            for c, f in zip(chain_configs, factories, strict=True)
        ]
        owned = shared = make_client(
            env, ca_bundles=bundles, timeout_seconds=config.timeout_seconds, urls=urls
        )
    else:
        shared = client
    chain: list[Provider] = []
    try:
        for one, factory in zip(chain_configs, factories, strict=True):
            chain.append(_build_one(one, factory, env=env, clock=clock, client=shared))
    except BaseException:
        for built in chain:
            built.close()
        if owned is not None:
            owned.close()
        raise
    if not config.fallback:
        return chain[0]
    from harness_core.providers.fallback import Fallback

    models = [c.model for c in chain_configs]
    return Fallback(
        chain, models=models, clock=clock, on_close=owned.close if owned is not None else None
    )


def _build_one(
    config: ProviderConfig,
    factory: object,
    *,
    env: Mapping[str, str],
    clock: Clock,
    client: httpx.Client | None,
) -> Provider:
    if config.kind == "scripted":
        return cast(Callable[[ProviderConfig], Provider], factory)(config)
    build = cast(Callable[..., Provider], factory)
    return build(config, env=env, clock=clock, client=client)


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
