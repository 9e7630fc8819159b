"""The `Provider` seam: a completion request in, a completion response out.

Providers translate `messages` types to a vendor's wire shape and back. They never touch
the store, the policy or the terminal; streamed text reaches the caller through the
`on_token` callback only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Literal, Protocol, runtime_checkable

from harness_core._record import record
from harness_core.messages import Message, ToolCall, ToolSpec, Usage
from harness_core.records import Citation, ProviderAttempt, ServerToolCall

__all__ = [
    "CarriedState",
    "Citation",
    "CompletionRequest",
    "CompletionResponse",
    "Provider",
    "ProviderAttempt",
    "RestoresState",
    "ServerToolCall",
    "TokenCallback",
    "WebAccess",
]

TokenCallback = Callable[[str], None]
"""Called with each provisional streamed text delta."""


@record
class WebAccess:
    """A provider-executed search/fetch declaration; the vendor enforces it, not `io`.

    Attributes:
        search: Ask the vendor to offer its web search tool.
        fetch: Ask the vendor to offer its web fetch tool.
        allowed_domains: Domains the vendor may reach (empty: no filter).
        blocked_domains: Domains the vendor must not reach.
        max_uses: Cap on provider-executed uses per completion, when set.
    """

    search: bool = False
    fetch: bool = False
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    max_uses: int | None = None


@record
class CompletionRequest:
    """What the loop asks a provider for.

    Attributes:
        model: The model string as the caller gave it (a request, not a fact).
        messages: The conversation the model sees, system message first.
        tools: The tools it may call.
        max_tokens: Ceiling on output tokens.
        web: Provider-executed web access, when declared.
        purpose: ``step`` (a step of the run) or ``compact`` (a summary of the history
            that replaces its older turns; `[context] strategy = "compact"`). Providers
            send both alike; the scripted one answers a ``compact`` request from the
            replay's `summary` lines.
        cache_key: A key stable for the whole run (every step of it sends the same;
            the run id, or the session id for a session's turns, which repeat one
            conversation), sent as OpenAI's ``prompt_cache_key`` so the vendor routes
            the requests to the machine that holds their cached prefix. None: not sent.
    """

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 4096
    web: WebAccess | None = None
    purpose: Literal["step", "compact"] = "step"
    cache_key: str | None = None


@record
class CompletionResponse:
    """What a provider answered.

    Attributes:
        text: The assistant's text.
        tool_calls: The tool calls it asked for; none means it considers itself done.
        usage: Token counts as reported.
        model: The model that actually served the call (from the response).
        provider: The name of the provider that served it.
        stop_reason: The vendor's stop reason, when given.
        latency_ms: Harness wall clock around the call (filled by the loop if 0).
        ttft_ms: Time to first token for a stream; None when nothing measured it.
        citations: Citations returned with the answer.
        server_tool_calls: Tools the provider executed itself.
        attempts: Every attempt made to get this answer, failures included.
        carry: Opaque state the provider needs again on later turns (JSON text: the
            Responses API's encrypted reasoning items and response id). The loop records
            it with the step, never shows it, and hands it back through
            `RestoresState.restore` when the run is resumed. None: nothing to carry.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    provider: str = ""
    stop_reason: str | None = None
    latency_ms: float = 0.0
    ttft_ms: float | None = None
    citations: tuple[Citation, ...] = ()
    server_tool_calls: tuple[ServerToolCall, ...] = ()
    attempts: tuple[ProviderAttempt, ...] = ()
    carry: str | None = field(default=None, repr=False)


@record
class CarriedState:
    """The `CompletionResponse.carry` of one recorded step, handed back on resume.

    Attributes:
        step: The step whose completion produced it.
        provider: The name of the provider that served that step.
        answer: The step's assistant message, as recorded.
        carry: The opaque text the provider returned.
    """

    step: int
    provider: str
    answer: Message
    carry: str = field(repr=False)


class Provider(Protocol):
    """A model provider.

    `complete` raises `ProviderError` on failure (with `.retryable` set truthfully).
    Streaming providers call `on_token` with each provisional text delta; others may
    call it once with the whole text or not at all.
    """

    name: str

    def complete(
        self, request: CompletionRequest, *, step: int, on_token: TokenCallback | None = None
    ) -> CompletionResponse:
        """Answer one request. `step` is the 0-based step index of the run."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


@runtime_checkable
class RestoresState(Protocol):
    """A provider that keeps state between turns (in `CompletionResponse.carry`).

    A resumed run calls `restore` once, before its first request, with the carried state
    of every recorded step in step order, so its requests are the ones an uninterrupted
    run would have sent. A provider takes what it produced and ignores the rest.
    """

    def restore(self, states: Sequence[CarriedState]) -> None:
        """Take back the state recorded with earlier steps of the run."""
        ...
