"""Fallback: a primary provider, then each `[[provider.fallback]]` in order.

Each provider spends its own retries first; only a failure it gave up on moves the
request to the next one, with that provider's configured model. The attempts of every
provider tried are kept on the response (or, when all fail, on `last_attempts`), so the
store can record which provider served and what failed before it. Text a failed
provider already streamed is not withdrawn: a `Token` event is provisional. A
`ConfigError` is a mistake, not an outage, and is never fallen over. This module does
no I/O of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace

from harness_core.clock import Clock
from harness_core.errors import ConfigError, ProviderError
from harness_core.providers._base import (
    CarriedState,
    CompletionRequest,
    CompletionResponse,
    Provider,
    ProviderAttempt,
    RestoresState,
    TokenCallback,
)

__all__ = ["Fallback"]


class Fallback:
    """A `Provider` that tries several providers in order.

    Args:
        providers: The primary first, then the fallbacks, in the order to try them.
        models: The model string to ask each provider for (``""`` keeps the request's);
            the primary is always asked for the request's own model.
        clock: Time for the latency of the whole call, fallbacks included.
        on_close: Called once by `close` after the providers are closed (the
            registry closes the run's shared HTTP client with it).

    Raises:
        ConfigError: No providers, or `models` of another length.
    """

    name = "fallback"

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        models: Sequence[str] = (),
        clock: Clock,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        if not providers:
            raise ConfigError("a fallback chain needs at least one provider")
        if models and len(models) != len(providers):
            raise ConfigError("a fallback chain needs one model string per provider")
        self.providers = tuple(providers)
        self._models = tuple(models) if models else ("",) * len(providers)
        self._clock = clock
        self._on_close = on_close
        self.last_attempts: tuple[ProviderAttempt, ...] = ()

    def __repr__(self) -> str:
        return "Fallback(" + ", ".join(p.name for p in self.providers) + ")"

    def complete(
        self, request: CompletionRequest, *, step: int, on_token: TokenCallback | None = None
    ) -> CompletionResponse:
        """Answer from the first provider that succeeds.

        Returns:
            That provider's completion, its `attempts` preceded by every failed one.

        Raises:
            ConfigError: A provider cannot carry the request (not fallen over).
            ProviderError: Every provider failed; the last failure, with a message
                naming each.
        """
        start = self._clock.monotonic()
        attempts: list[ProviderAttempt] = []
        failures: list[ProviderError] = []
        self.last_attempts = ()
        for index, provider in enumerate(self.providers):
            asked = request
            if index and self._models[index]:
                asked = replace(request, model=self._models[index])
            try:
                response = provider.complete(asked, step=step, on_token=on_token)
            except ConfigError:
                raise
            except ProviderError as exc:
                attempts.extend(_attempts_of(provider, asked.model, exc))
                failures.append(exc)
                continue
            attempts.extend(
                response.attempts or (ProviderAttempt(provider.name, asked.model, True),)
            )
            self.last_attempts = tuple(attempts)
            carry = response.carry
            if carry is not None:  # tagged with who made it: `restore` hands it back there
                carry = json.dumps({"fallback": index, "carry": carry})
            return replace(
                response,
                attempts=tuple(attempts),
                latency_ms=(self._clock.monotonic() - start) * 1000.0,
                carry=carry,
            )
        self.last_attempts = tuple(attempts)
        last = failures[-1]
        summary = "; ".join(str(f) for f in failures)
        raise ProviderError(
            f"every provider failed: {summary}",
            retryable=last.retryable,
            status=last.status,
            retry_after=last.retry_after,
            hint="check the vendors' status, keys and quotas; `io trace` lists each attempt",
            attempts=self.last_attempts,
        ) from last

    def restore(self, states: Sequence[CarriedState]) -> None:
        """Hand each recorded state back to the provider of the chain that made it."""
        routed: list[list[CarriedState]] = [[] for _ in self.providers]
        for state in states:
            index, carry = _untagged(state.carry)
            if index is None:
                for share in routed:
                    share.append(state)
            elif index < len(routed):
                routed[index].append(replace(state, carry=carry))
        for provider, share in zip(self.providers, routed, strict=True):
            if share and isinstance(provider, RestoresState):
                provider.restore(share)

    def for_child(self, step: int, call_index: int) -> Fallback:
        """The chain for a child run of a tree: each HTTP provider's own `for_child`
        (state of its own, the same client); other providers are shared as they are.
        Closing it closes nothing the parent still uses."""
        from harness_core.providers.scripted import ScriptedProvider

        chain: list[Provider] = []
        for provider in self.providers:
            make = getattr(provider, "for_child", None)
            fresh = callable(make) and not isinstance(provider, ScriptedProvider)
            chain.append(make(step, call_index) if fresh else provider)  # type: ignore[misc]
        return Fallback(chain, models=self._models, clock=self._clock)

    def close(self) -> None:
        """Close every provider in the chain, then what `on_close` releases."""
        for provider in self.providers:
            provider.close()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


def _untagged(carry: str) -> tuple[int | None, str]:
    """The chain index a carried state was tagged with (None: untagged), and the state."""
    try:
        data = json.loads(carry)
    except ValueError:
        return None, carry
    if isinstance(data, dict) and set(data) == {"fallback", "carry"}:
        index, inner = data["fallback"], data["carry"]
        if isinstance(index, int) and index >= 0 and isinstance(inner, str):
            return index, inner
    return None, carry


def _attempts_of(provider: Provider, model: str, exc: ProviderError) -> tuple[ProviderAttempt, ...]:
    recorded = exc.attempts or getattr(provider, "last_attempts", None)
    if isinstance(recorded, tuple) and recorded:
        return tuple(a for a in recorded if isinstance(a, ProviderAttempt))
    return (ProviderAttempt(provider.name, model, False, str(exc), exc.status),)
