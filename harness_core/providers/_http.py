"""The call skeleton every HTTP provider shares: one completion's tries over httpx.

`HttpProvider` owns one completion's life: it sends the request through the run's
`httpx.Client`, classifies a failure as retryable or not, sleeps through the injected
`Clock` (never `time.sleep`), records every attempt, and measures latency and time to
first token. A vendor module supplies only its wire format: the URL, headers, request
body and the parsing of a JSON body or an SSE stream. The pieces it is built from
live beside it, one concern each: `_retry` (when and how long), `_redact` (the key
out of every text), `_sse` (event framing), `_wire` (shared parsing), `_client` (the
httpx client: trust, proxies, timeouts) and `_tls` (the trust store).

Secrets: a vendor's error text is passed through a `Redactor` before it reaches an
exception message or an attempt record, and the key is sent per request, never set
on the shared client. A 200 answer of the wrong shape is not retried. This module
never touches the store or the terminal.
"""

from __future__ import annotations

import json
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from harness_core.clock import Clock
from harness_core.errors import MissingSecret, ProviderError
from harness_core.messages import Message
from harness_core.providers._base import (
    CompletionRequest,
    CompletionResponse,
    ProviderAttempt,
    TokenCallback,
)
from harness_core.providers._client import (
    describe_failure,
    direct_transport,
    make_client,
    timeouts,
)
from harness_core.providers._config import ProviderConfig
from harness_core.providers._httpx import httpx
from harness_core.providers._redact import Redactor, one_line
from harness_core.providers._retry import (
    RetryPolicy,
    backoff_delay,
    is_retryable_status,
    parse_retry_after,
)
from harness_core.providers._sse import SSEEvent, iter_sse, sse_lines
from harness_core.providers._tls import trust_store
from harness_core.providers._wire import WIRE_JSON, StreamClock, json_object

__all__ = ["USER_AGENT", "HttpProvider"]

USER_AGENT = "io-harness"
_DRAIN_LINES = 64
_DRAIN_SECONDS = 0.5


class HttpProvider(ABC):
    """Base of the HTTP providers: retries, attempts, timing, transport errors.

    Subclasses set `name`, `env_var` and `default_base_url` and implement the wire
    methods. After every `complete` call, successful or not, `last_attempts` holds the
    attempts it made (a `Fallback` reads it to keep the record of a provider that
    failed).

    Args:
        config: The provider table.
        env: Looked up for the vendor's key variable when `config.api_key` is unset,
            and for proxy settings when this provider makes its own client.
        clock: Time for backoff and latency.
        client: The run's shared `httpx.Client` (not closed by `close`); one is made,
            and closed by `close`, when None.
        jitter: A ``random.random``-like source for backoff jitter.
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
        client: httpx.Client | None = None,
        jitter: Callable[[], float] | None = None,
    ) -> None:
        key = config.api_key or env.get(self.env_var) or ""
        if not key:
            raise MissingSecret(
                f"{self.name}: no API key: set {self.env_var} or `api_key` in [provider]",
                name=self.env_var, hint=f'api_key = "${{env:{self.env_var}}}"',
            )
        self._key = key
        self._redact = Redactor(key)
        self.config = config
        self._clock = clock
        self._jitter = jitter if jitter is not None else random.random
        self._policy = RetryPolicy(max_retries=max(0, config.max_retries))
        self._base_url = (config.base_url or self.default_base_url).rstrip("/")
        self._timeouts = timeouts(config.timeout_seconds)
        bundles = (config.ca_bundle,) if config.ca_bundle is not None else ()
        self._owns_client = client is None
        self.client = client if client is not None else make_client(
            env,
            ca_bundles=bundles,
            timeout_seconds=config.timeout_seconds,
            urls=(self._base_url,),
        )
        self._direct = direct_transport(self.client)
        self._fragments: dict[int, tuple[Message, Any]] = {}
        self._joined: tuple[tuple[Message, ...], bytes] | None = None
        self._tools_cache: tuple[object, bytes] | None = None
        self._target_cache: tuple[str, httpx.URL] | None = None
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
        """The request body without its messages (`_messages_json` encodes those)."""
        ...

    @abstractmethod
    def _messages_json(self, messages: tuple[Message, ...]) -> bytes:
        """The body's conversation array as UTF-8 JSON.

        Bytes, not text: a long run's conversation is copied into each request, and
        one non-ASCII character anywhere (a dash in the system prompt) makes a `str`
        two or four bytes a character and its `.encode()` a transcoding of the whole
        conversation on every step; bytes are only ever copied.
        """
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

    messages_field = "messages"
    """The body field `_messages_json` fills (``input`` for the Responses API)."""

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
            ProviderError: Every try failed, or a failure that is not worth retrying
                (a 4xx other than 429, an untrusted certificate, a 200 answer of the
                wrong shape).
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
            self._answered(request, response)
            return replace(
                response,
                model=response.model or request.model,
                provider=self.name,
                latency_ms=(self._clock.monotonic() - start) * 1000.0,
                attempts=tuple(attempts),
            )

    def _answered(self, request: CompletionRequest, response: CompletionResponse) -> None:  # noqa: B027
        """Hook: a vendor that keeps state between turns records the answer here."""

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
            reply = self._send(payload, headers)
            try:
                if reply.status_code >= 400:
                    reply.read()
                    self._raise_for_status(reply.status_code, reply.headers, reply.text)
                content_type = _content_type(reply)
                if not stream or content_type == "application/json":
                    # A server that ignores ``stream`` answers one JSON body: read it as one.
                    return self._parse_body(json_object(reply.read(), self.name))
                if content_type not in ("", "text/event-stream"):
                    raise self.shape_error(f"{content_type} where an event stream was asked for")
                # UTF-8 whatever the header's charset says, lines cut at CR and LF only
                # (the WHATWG rules; `sse_lines` says why not httpx's `iter_lines`).
                lines = sse_lines(reply.iter_bytes())
                response = self._parse_stream(iter_sse(lines), on_token, ttft)
                _drain(reply, lines)
                return response
            finally:
                reply.close()
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from exc

    def _send(self, payload: bytes, headers: dict[str, str]) -> httpx.Response:
        """POST `payload` and return the reply with its body still to be read.

        On the run's own client with no proxy configured (`direct_transport`), the
        request goes straight to the client's transport: the client's `send` only adds,
        per request, an auth flow with no auth, a redirect loop that follows none,
        event hooks there are none of, a timer and a log line, about 0.05 ms of a
        step. The cookie jar is kept: a reply that sets a cookie is handed to it, and
        `build_request` adds the jar's cookies to every request either way.
        """
        client = self.client
        request = client.build_request("POST", self._target(), content=payload,
                                       headers=headers, timeout=self._timeouts)
        direct = self._direct
        if direct is None or client.is_closed:  # a closed client's `send` says so
            return client.send(request, stream=True)
        try:
            reply = direct.handle_request(request)
        except httpx.RequestError as exc:
            exc.request = request  # as `send` does: the failure's words name the host
            raise
        reply.request = request
        if "set-cookie" in reply.headers:
            client.cookies.extract_cookies(reply)
        return reply

    def _target(self) -> httpx.URL:
        """`_url()` parsed once (httpx parsed the text again for every request)."""
        text = self._url()
        cached = self._target_cache
        if cached is None or cached[0] != text:
            cached = self._target_cache = (text, httpx.URL(text))
        return cached[1]

    def payload(self, request: CompletionRequest, *, stream: bool) -> bytes:
        """The encoded request body: `_body`'s fields and the conversation array."""
        body = self._body(request, stream=stream)
        tools = body.pop("tools", None)
        rest = WIRE_JSON.encode(body).encode()
        messages = self._messages_json(request.messages)
        self._prune(request.messages)
        parts = [b'{"', self.messages_field.encode(), b'":', messages]
        if tools is not None:
            parts += (b',"tools":', self._tools_json(request, tools))
        parts += (b",", rest[1:]) if len(rest) > 2 else (b"}",)
        return b"".join(parts)

    def _tools_json(self, request: CompletionRequest, tools: object) -> bytes:
        """The encoded `tools` of the body, encoded again only when the request's tools
        or web access differ from the previous request's (every step offers the same
        few dozen schemas: encoding them was a tenth of a step's own work). What a
        vendor puts in `tools` depends on nothing else."""
        key = (request.tools, request.web)
        cached = self._tools_cache
        if cached is not None and cached[0] == key:  # identical specs: compared by identity
            return cached[1]
        encoded = WIRE_JSON.encode(tools).encode()
        self._tools_cache = (key, encoded)
        return encoded

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

    def joined(
        self, messages: tuple[Message, ...], fragments: Callable[[Message], Iterable[bytes]]
    ) -> bytes:
        """The comma-joined UTF-8 JSON fragments of `messages` (without the brackets).

        When the messages extend those of the previous call (the usual step: two or three
        new messages at the end), the previous text is reused and only the new messages
        are joined on, so a step's cost stays flat however long the run grows; the
        prefix is compared by identity in C (`tuple ==`), not message by message.
        """
        head, rest = b"", messages
        previous = self._joined
        if previous is not None:
            done, text = previous
            if len(messages) >= len(done) and messages[: len(done)] == done:
                head, rest = text, messages[len(done) :]
        parts = [fragment for message in rest for fragment in fragments(message)]
        if parts:
            head = b",".join((head, *parts)) if head else b",".join(parts)
        self._joined = (messages, head)
        return head

    def _prune(self, messages: tuple[Message, ...]) -> None:
        """Forget fragments of messages the latest request no longer holds."""
        if len(self._fragments) > 2 * len(messages) + 16:
            keep = {id(m) for m in messages}
            self._fragments = {k: v for k, v in self._fragments.items() if k in keep}

    def _raise_for_status(self, status: int, headers: Mapping[str, str], text: str) -> None:
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

    def _transport_error(self, exc: httpx.HTTPError) -> ProviderError:
        text, retryable, untrusted = describe_failure(exc)
        hint = None
        if untrusted:
            bundles = (self.config.ca_bundle,) if self.config.ca_bundle is not None else ()
            hint = (
                f"the server's certificate is not signed by a CA in the trust store "
                f"({trust_store(bundles).describe()}); for a corporate CA set "
                '[provider] ca_bundle = "/path/to/ca.pem"'
            )
        return ProviderError(
            f"{self.name}: {one_line(text, self._redact)}", retryable=retryable, hint=hint
        )

    def stream_error(self, detail: str, *, retryable: bool = True) -> ProviderError:
        """A failure found inside a stream (an error event, a cut), redacted."""
        return ProviderError(f"{self.name}: {one_line(detail, self._redact)}", retryable=retryable)

    def shape_error(self, detail: str) -> ProviderError:
        """A 200 answer of the wrong shape: not retried (it would come back the same)."""
        return self.stream_error(f"a 200 answer of the wrong shape: {detail}", retryable=False)

    def for_child(self, step: int, call_index: int) -> HttpProvider:
        """The provider of a child run of a tree (`spawn_agent` at `step`, `call_index`).

        The same configuration, key and client, with state of its own: parallel children
        call their providers from their own threads, and what a provider keeps between
        calls (encoded history, a Responses chain) belongs to one conversation. Closing
        it leaves the shared client open.
        """
        return type(self)(
            self.config,
            env={self.env_var: self._key},
            clock=self._clock,
            client=self.client,
            jitter=self._jitter,
        )

    def close(self) -> None:
        """Close the client's connections if this provider made it."""
        if self._owns_client:
            self.client.close()


def _drain(reply: httpx.Response, lines: Iterator[str]) -> None:
    """Read what follows a stream's last event (a chunked body's terminator, usually),
    so the connection goes back to the pool instead of being closed; a server that
    keeps talking past `_DRAIN_LINES` lines, or stalls `_DRAIN_SECONDS`, loses it."""
    timeout = reply.request.extensions.get("timeout")
    if isinstance(timeout, dict):
        timeout["read"] = _DRAIN_SECONDS  # httpcore reads it before every socket read
    try:
        for count, _ in enumerate(lines):
            if count >= _DRAIN_LINES:
                return
    except httpx.HTTPError:
        return


def _content_type(reply: httpx.Response) -> str:
    value: str = reply.headers.get("content-type", "")
    return value.partition(";")[0].strip().lower()
