"""What the three HTTP providers share: retries, SSE framing, redaction, the call skeleton.

`HttpProvider` owns one completion's life: it tries, classifies a failure as retryable
or not, sleeps through the injected `Clock` (never `time.sleep`), records every attempt,
and measures latency and time to first token. A vendor module supplies only its wire
format: the URL, headers, request body and the parsing of a JSON body or an SSE stream.

Secrets: a vendor's error text is passed through a `Redactor` before it reaches an
exception message or an attempt record, and the key is sent per request, never stored
on a shared `Transport`. This module never touches the store or the terminal.
"""

from __future__ import annotations

import base64
import json
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, NamedTuple

from harness_core.clock import Clock
from harness_core.errors import ConfigError, ProviderError
from harness_core.messages import Message
from harness_core.providers._base import (
    CompletionRequest,
    CompletionResponse,
    ProviderAttempt,
    TokenCallback,
)
from harness_core.providers._config import ProviderConfig
from harness_core.providers._transport import Timeouts, Transport, TransportError

__all__ = [
    "WIRE_JSON",
    "HttpProvider",
    "Redactor",
    "RetryPolicy",
    "SSEEvent",
    "StreamClock",
    "backoff_delay",
    "is_retryable_status",
    "iter_sse",
    "json_object",
    "one_line",
    "opt_int",
    "parse_retry_after",
    "tool_arguments",
]

REDACTED = "[REDACTED]"
_KEY_PREFIX_LEN = 12
"""Vendors echo a key's head in 401 bodies (``sk-proj-abc1…``); twelve characters is
enough to identify most keys, so that prefix is treated as the secret itself."""
_MAX_ERROR_CHARS = 300
USER_AGENT = "io-harness"
WIRE_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""How request bodies are encoded: compact UTF-8 JSON."""


# --- retry policy --------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """How a provider retries a retryable failure.

    Attributes:
        max_retries: Retries after the first try (so ``max_retries + 1`` tries in all).
        base_delay: Seconds before the first retry, before jitter.
        max_delay: Ceiling on one computed backoff, before jitter.
        max_retry_after: A ``retry-after`` longer than this ends the retries at once
            (the fallback, if any, is better than an hour's wait inside a step).
    """

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 60.0


def is_retryable_status(status: int) -> bool:
    """429 and every 5xx (529 included) are worth another try; other 4xx are not."""
    return status == 429 or status >= 500


def backoff_delay(
    retry: int, policy: RetryPolicy, jitter: Callable[[], float], retry_after: float | None
) -> float:
    """Seconds to wait before retry number `retry` (0-based).

    A vendor's ``retry-after`` is honoured exactly. Otherwise the delay doubles from
    `policy.base_delay` up to `policy.max_delay` and is scaled by a jitter factor in
    [0.5, 1.0] drawn from `jitter` (a ``random.random``-like callable), so clients that
    failed together do not retry together.
    """
    if retry_after is not None:
        return max(0.0, retry_after)
    ceiling = min(policy.max_delay, policy.base_delay * float(2**retry))
    return ceiling * (0.5 + 0.5 * jitter())


def parse_retry_after(headers: Mapping[str, str], now: datetime) -> float | None:
    """Seconds a response asks us to wait, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` may be delta-seconds or an HTTP date; an unparseable value is
    ignored (None) rather than guessed at.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, float((when - now).total_seconds()))


# --- redaction -----------------------------------------------------------------------


class Redactor:
    """Removes a secret, its leading characters and its base64 forms from text.

    An echoed prefix is removed as far as it goes: if a vendor echoes the first 20
    characters, all 20 go, not only the first 12.
    """

    __slots__ = ("_secret", "_head", "_encoded")

    def __init__(self, secret: str) -> None:
        self._secret = secret
        self._head = secret[:_KEY_PREFIX_LEN]
        encoded: set[str] = set()
        if secret:
            raw = secret.encode()
            for enc in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
                text = enc.decode().rstrip("=")
                if text:
                    encoded.add(text)
        # Longest first, so a longer form is never left half-replaced by a shorter one.
        self._encoded = sorted(encoded, key=len, reverse=True)

    def __repr__(self) -> str:
        return "Redactor(<secret>)"

    def __call__(self, text: str) -> str:
        if not self._secret or not text:
            return text
        for enc in self._encoded:
            text = text.replace(enc, REDACTED)
        text = text.replace(self._secret, REDACTED)
        return self._strip_prefixes(text)

    def _strip_prefixes(self, text: str) -> str:
        head = self._head
        start = text.find(head)
        while start != -1:
            end = start + len(head)
            # Extend the match while the text keeps following the secret.
            while (
                end < len(text)
                and end - start < len(self._secret)
                and text[end] == self._secret[end - start]
            ):
                end += 1
            text = text[:start] + REDACTED + text[end:]
            start = text.find(head, start + len(REDACTED))
        return text


def one_line(text: str, redact: Redactor) -> str:
    """Redact, flatten to one line and truncate a piece of vendor text."""
    flat = " ".join(redact(text).split())
    if len(flat) > _MAX_ERROR_CHARS:
        flat = flat[: _MAX_ERROR_CHARS - 1] + "…"
    return flat


# --- SSE -----------------------------------------------------------------------------


class SSEEvent(NamedTuple):
    """One server-sent event: its ``event:`` name (``message`` by default) and data."""

    event: str
    data: str


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Frame SSE lines into events, per the WHATWG event-stream rules.

    Comment lines (``:`` keep-alives) and ``id:``/``retry:`` fields are skipped; several
    ``data:`` lines join with newlines; a blank line dispatches. An event that the
    stream never terminated with a blank line is dropped, never half-delivered.
    """
    event = ""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield SSEEvent(event or "message", "\n".join(data))
            event = ""
            data = []
            continue
        if line[0] == ":":
            continue
        # The common line shapes first: ``data: {...}`` and ``event: name``.
        if line.startswith("data: "):
            data.append(line[6:])
            continue
        if line.startswith("event: "):
            event = line[7:]
            continue
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value


# --- timing --------------------------------------------------------------------------


class StreamClock:
    """Marks the first token of a stream against the attempt's start."""

    __slots__ = ("_clock", "_start", "first")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._start = clock.monotonic()
        self.first: float | None = None

    def mark(self) -> None:
        """Record now as the first token, unless one was already recorded."""
        if self.first is None:
            self.first = (self._clock.monotonic() - self._start) * 1000.0


# --- parsing helpers shared by the vendors --------------------------------------------


def opt_int(value: object) -> int | None:
    """A reported count, or None when the vendor did not report one (never 0 for absent)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def tool_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Parse a tool call's argument text: (object, None), or ({}, text) when it is not one.

    The loop turns a call with raw arguments into an observation telling the model its
    arguments were not a JSON object, so a malformed call never aborts the run.
    """
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    if not isinstance(value, dict):
        return {}, text
    return value, None


def json_object(text: str | bytes, what: str) -> dict[str, Any]:
    """Parse a JSON object from a vendor, or raise a retryable `ProviderError`."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ProviderError(f"{what}: response is not JSON", retryable=True) from exc
    if not isinstance(data, dict):
        raise ProviderError(f"{what}: response is not a JSON object", retryable=True)
    return data


# --- the call skeleton ---------------------------------------------------------------


class HttpProvider(ABC):
    """Base of the HTTP providers: retries, attempts, timing, transport errors.

    Subclasses set `name`, `env_var` and `default_base_url` and implement the wire
    methods. After every `complete` call, successful or not, `last_attempts` holds the
    attempts it made (a `Fallback` reads it to keep the record of a provider that
    failed).
    """

    name: str = "http"
    env_var: str = ""
    default_base_url: str = ""

    def __init__(
        self,
        config: ProviderConfig,
        *,
        env: Mapping[str, str],
        clock: Clock,
        transport: Transport | None = None,
        jitter: Callable[[], float] | None = None,
    ) -> None:
        key = config.api_key or env.get(self.env_var) or ""
        if not key:
            raise ConfigError(
                f"{self.name}: no API key: set {self.env_var} or `api_key` in [provider]",
                hint=f'api_key = "${{env:{self.env_var}}}"',
            )
        self._key = key
        self._redact = Redactor(key)
        self.config = config
        self._clock = clock
        self._jitter = jitter if jitter is not None else random.random
        self._policy = RetryPolicy(max_retries=max(0, config.max_retries))
        self._base_url = (config.base_url or self.default_base_url).rstrip("/")
        self._timeouts = Timeouts(
            connect=min(10.0, config.timeout_seconds), read=config.timeout_seconds
        )
        self._owns_transport = transport is None
        self._transport = transport if transport is not None else Transport(env)
        self._fragments: dict[int, tuple[Message, Any]] = {}
        self.last_attempts: tuple[ProviderAttempt, ...] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.config.model!r}, base_url={self._base_url!r})"

    # Wire methods a vendor implements.

    @abstractmethod
    def _url(self) -> str:
        ...

    @abstractmethod
    def _headers(self, request: CompletionRequest) -> dict[str, str]:
        ...

    @abstractmethod
    def _body(self, request: CompletionRequest, *, stream: bool) -> dict[str, Any]:
        """The request body without its ``messages`` (`_messages_json` encodes those)."""
        ...

    @abstractmethod
    def _messages_json(self, messages: tuple[Message, ...]) -> str:
        """The JSON text of the body's ``messages`` array."""
        ...

    @abstractmethod
    def _parse_body(self, data: dict[str, Any]) -> CompletionResponse:
        ...

    @abstractmethod
    def _parse_stream(
        self, events: Iterator[SSEEvent], on_token: TokenCallback | None, ttft: StreamClock
    ) -> CompletionResponse:
        ...

    @abstractmethod
    def _error_detail(self, data: dict[str, Any]) -> tuple[str, bool]:
        """The vendor's error text from an error body, and whether it says to retry."""
        ...

    def _check_web(self, request: CompletionRequest) -> None:  # noqa: B027 - optional hook
        """Raise `ConfigError` when the request declares web access this vendor lacks.

        The default accepts every declaration; a vendor that lacks one overrides it."""

    # The skeleton.

    def complete(
        self, request: CompletionRequest, *, step: int, on_token: TokenCallback | None = None
    ) -> CompletionResponse:
        """Answer `request`, retrying retryable failures with backoff.

        Args:
            request: What to ask; an empty `model` falls back to the configured one, and
                a request with no `web` gets the configured declaration.
            step: The run's 0-based step index (not sent to the vendor).
            on_token: Receives each streamed text delta (streaming only).

        Returns:
            The completion, with the served model, every attempt, latency and TTFT.

        Raises:
            ConfigError: The request declares web access this vendor cannot carry.
            ProviderError: Every try failed, or a failure that is not worth retrying.
        """
        if not request.model:
            request = replace(request, model=self.config.model)
        if request.web is None and self.config.web is not None:
            request = replace(request, web=self.config.web)
        self._check_web(request)
        start = self._clock.monotonic()
        attempts: list[ProviderAttempt] = []
        self.last_attempts = ()
        retry = 0
        while True:
            try:
                response = self._attempt(request, on_token)
            except ProviderError as exc:
                attempts.append(
                    ProviderAttempt(self.name, request.model, False, str(exc), exc.status)
                )
                self.last_attempts = tuple(attempts)
                exc.attempts = self.last_attempts
                self._pause_or_raise(exc, retry)
                retry += 1
                continue
            attempts.append(ProviderAttempt(self.name, request.model, True))
            self.last_attempts = tuple(attempts)
            return replace(
                response,
                model=response.model or request.model,
                provider=self.name,
                latency_ms=(self._clock.monotonic() - start) * 1000.0,
                attempts=tuple(attempts),
            )

    def _pause_or_raise(self, exc: ProviderError, retry: int) -> None:
        if not exc.retryable or retry >= self._policy.max_retries:
            raise exc
        if exc.retry_after is not None and exc.retry_after > self._policy.max_retry_after:
            raise exc
        self._clock.sleep(backoff_delay(retry, self._policy, self._jitter, exc.retry_after))

    def _attempt(
        self, request: CompletionRequest, on_token: TokenCallback | None
    ) -> CompletionResponse:
        stream = self.config.stream
        payload = self.payload(request, stream=stream)
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
            "user-agent": USER_AGENT,
            **self._headers(request),
        }
        ttft = StreamClock(self._clock)  # from the request, not from the headers
        try:
            with self._transport.post(self._url(), payload, headers, self._timeouts) as reply:
                if reply.status >= 400:
                    self._raise_for_status(reply.status, reply.headers, reply.text())
                if not stream:
                    return self._parse_body(json_object(reply.read(), self.name))
                return self._parse_stream(iter_sse(reply.iter_lines()), on_token, ttft)
        except TransportError as exc:
            raise self._transport_error(exc) from exc

    def payload(self, request: CompletionRequest, *, stream: bool) -> bytes:
        """The encoded request body: `_body`'s fields and the ``messages`` array."""
        rest = WIRE_JSON.encode(self._body(request, stream=stream))
        messages = self._messages_json(request.messages)
        self._prune(request.messages)
        return ('{"messages":' + messages + ("," + rest[1:] if len(rest) > 2 else "}")).encode()

    def encoded(self, message: Message, encode: Callable[[Message], Any]) -> Any:
        """`encode(message)`, computed once per message object.

        A conversation only grows between steps, so re-encoding every earlier message
        for every request made a step's cost grow with the step number; with this
        cache a request costs a join over the earlier messages' encoded fragments.
        Messages are frozen, so one object always encodes the same.
        """
        entry = self._fragments.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        value = encode(message)
        self._fragments[id(message)] = (message, value)
        return value

    def _prune(self, messages: tuple[Message, ...]) -> None:
        """Forget fragments of messages the latest request no longer holds."""
        if len(self._fragments) > 2 * len(messages) + 16:
            keep = {id(m) for m in messages}
            self._fragments = {k: v for k, v in self._fragments.items() if k in keep}

    def _raise_for_status(self, status: int, headers: Mapping[str, str], text: str) -> None:
        if status < 400:
            return
        retryable = is_retryable_status(status)
        detail = text
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            detail, says_retry = self._error_detail(data)
            retryable = retryable or says_retry
        raise ProviderError(
            f"{self.name}: HTTP {status}: {one_line(detail, self._redact) or '(no body)'}",
            retryable=retryable,
            status=status,
            retry_after=parse_retry_after(headers, self._clock.now()),
            hint=f"check the key ({self.env_var} or `api_key`)" if status in (401, 403) else None,
        )

    def _transport_error(self, exc: TransportError) -> ProviderError:
        text = one_line(str(exc), self._redact)
        return ProviderError(f"{self.name}: {text}", retryable=exc.retryable)

    def stream_error(self, detail: str, *, retryable: bool = True) -> ProviderError:
        """A failure found inside a stream (an error event, a cut), redacted."""
        return ProviderError(f"{self.name}: {one_line(detail, self._redact)}", retryable=retryable)

    def close(self) -> None:
        """Close the transport's connections if this provider created it."""
        if self._owns_transport:
            self._transport.close()
