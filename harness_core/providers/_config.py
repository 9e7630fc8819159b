"""ProviderConfig: the `[provider]` table, typed. Holds the resolved key in memory only."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path

from harness_core._record import record
from harness_core.providers._base import WebAccess

__all__ = ["SYSTEM_ROLES", "ProviderConfig", "ProviderKind"]

ProviderKind = str
"""One of ``anthropic``, ``openai``, ``openai-responses``, ``openrouter``, ``scripted``."""

SYSTEM_ROLES = ("system", "developer")
"""What `system_role` may be: the role the system message is sent with (OpenAI kinds)."""


@record
class ProviderConfig:
    """How to reach one model provider.

    Attributes:
        kind: ``anthropic`` | ``openai`` | ``openai-responses`` | ``openrouter`` |
            ``scripted``.
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
        ca_bundle: A PEM file of CA certificates trusted in addition to the store
            (a corporate CA); absolute once loaded.
        system_role: The role the system message is sent with by the OpenAI kinds:
            ``system``, or ``developer`` for models that refuse ``system``.
        previous_response_id: ``openai-responses`` only: chain turns on the server
            (send the previous response's id and only the new items; the vendor
            stores responses) instead of resending the conversation statelessly.
        api_key_ref: The `api_key` as written (``${env:NAME}`` or ``${file:PATH}``),
            not yet resolved: io resolves a provider's key only when it builds the
            provider (`Config.provider_for_run`), so commands that call no model never
            need it. `build_provider` refuses a config that still holds one.
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
    ca_bundle: Path | None = None
    system_role: str = "system"
    previous_response_id: bool = False
    api_key_ref: str | None = field(default=None, repr=False)
