"""ProviderConfig: the `[provider]` table, typed. Holds the resolved key in memory only."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness_core.providers._base import WebAccess

__all__ = ["ProviderConfig", "ProviderKind"]

ProviderKind = str
"""One of ``anthropic``, ``openai``, ``openrouter``, ``scripted``."""


@dataclass(frozen=True)
class ProviderConfig:
    """How to reach one model provider.

    Attributes:
        kind: ``anthropic`` | ``openai`` | ``openrouter`` | ``scripted``.
        model: The model string sent in requests.
        api_key: The resolved key (never recorded, never printed; `repr` hides it).
        base_url: Override of the vendor endpoint (proxies, local servers).
        max_tokens: Output ceiling per completion.
        script: For ``scripted``: the replay file (absolute once loaded).
        stream: Use the vendor's streaming API.
        timeout_seconds: Per-request read timeout.
        max_retries: Retries of a retryable failure before falling back.
        fallback: Providers tried in order when this one fails after its retries.
        web: Provider-executed web access declared for every request.
    """

    kind: str = "scripted"
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    max_tokens: int = 4096
    script: Path | None = None
    stream: bool = True
    timeout_seconds: float = 120.0
    max_retries: int = 3
    fallback: tuple[ProviderConfig, ...] = ()
    web: WebAccess | None = None
