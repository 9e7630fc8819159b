"""OpenAI's Responses API (``POST {base_url}/responses``), JSON and semantic SSE events.

This module holds only that wire format. The conversation becomes ``input`` items: a
message per system/user/assistant text, a ``function_call`` per tool call and a
``function_call_output`` per tool result. Reasoning items the model returned (with
their ``encrypted_content``, asked for through ``include``) are carried back in front
of the turn they belong to, so a reasoning model keeps its chain of thought across tool
calls without the vendor storing anything (``store: false``). With
`previous_response_id` on, the vendor stores responses and a request whose history is
the previous request plus that answer sends only the new items and the previous id;
any other request (an elided context, a resumed run) sends everything.

The state kept between calls (reasoning items by assistant turn, the last response's
id) lives in memory and goes out with each answer as its `CompletionResponse.carry`
(the reasoning items exactly as the vendor sent them; with chaining on, the response id
and a digest of the conversation the request carried). The loop records it with the
step; a resumed run hands it back (`restore`), so the request after a resume is the one
an uninterrupted run would have sent. It never touches the store or the terminal.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harness_core._record import record
from harness_core.clock import Clock
from harness_core.errors import ProviderError
from harness_core.messages import Message, Role
from harness_core.providers._base import (
    CarriedState,
    CompletionRequest,
    CompletionResponse,
    ProviderAttempt,
    TokenCallback,
    WebAccess,
)
from harness_core.providers._config import ProviderConfig
from harness_core.providers._http import HttpProvider
from harness_core.providers._registry import validate_web
from harness_core.providers._responses_stream import (
    RETRYABLE_CODES,
    ResponseState,
    TurnKey,
    turn_key,
)
from harness_core.providers._sse import SSEEvent
from harness_core.providers._wire import WIRE_JSON, StreamClock, data_url, media_text

if TYPE_CHECKING:
    from harness_core.providers._httpx import httpx

__all__ = ["OpenAIResponsesProvider"]


@record
class _Chain:
    """The last answer a request can chain on: the messages its request carried (live),
    or their count and digest (restored from the store), its id and its turn key."""

    sent: tuple[Message, ...] | None
    count: int
    digest: str
    response_id: str
    key: TurnKey


class OpenAIResponsesProvider(HttpProvider):
    """The `openai-responses` provider: the Responses API, or a compatible server.

    Args:
        config: The provider table; `base_url` defaults to ``https://api.openai.com/v1``.
            `system_role` names the role of system messages (``developer`` for models
            that refuse ``system``); `previous_response_id` chains turns on the server.
        env: Looked up for ``OPENAI_API_KEY`` when `config.api_key` is unset.
        clock: Time for backoff and latency.
        client: The run's shared `httpx.Client`; one is made (and closed by `close`)
            when None.
        jitter: A ``random.random``-like source for backoff jitter.

    Raises:
        ConfigError: No key, or a `[web]` declaration the web_search tool cannot carry.
    """

    name = "openai-responses"
    env_var = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"
    messages_field = "input"

    def __init__(
        self,
        config: ProviderConfig,
        *,
        env: Mapping[str, str],
        clock: Clock,
        client: httpx.Client | None = None,
        jitter: Callable[[], float] | None = None,
    ) -> None:
        validate_web(self.name, config.web)
        super().__init__(config, env=env, clock=clock, client=client, jitter=jitter)
        self._url_text = self._base_url + "/responses"
        self._reasoning: dict[TurnKey, tuple[bytes, ...]] = {}
        self._last: _Chain | None = None
        self._start = 0
        self._previous: str | None = None
        self._extras: tuple[tuple[bytes, ...], str] = ((), "")

    def _check_web(self, request: CompletionRequest) -> None:
        validate_web(self.name, request.web)

    def _url(self) -> str:
        return self._url_text

    def _headers(self, request: CompletionRequest) -> dict[str, str]:
        return {"authorization": f"Bearer {self._key}"}

    # --- request -----------------------------------------------------------------------

    def complete(
        self, request: CompletionRequest, *, step: int, on_token: TokenCallback | None = None
    ) -> CompletionResponse:
        """Answer `request` (see `HttpProvider.complete`).

        A chained request the vendor refuses because it no longer holds the previous
        response (it expired, or was stored elsewhere) is sent once more, whole.
        """
        try:
            answer = super().complete(request, step=step, on_token=on_token)
        except ProviderError as exc:
            if self._previous is None or not _lost_previous(exc):
                raise
            self._last = None
            failed = tuple(a for a in exc.attempts if isinstance(a, ProviderAttempt))
            answer = super().complete(request, step=step, on_token=on_token)
            self.last_attempts = failed + answer.attempts
            answer = replace(answer, attempts=self.last_attempts)
        return replace(answer, carry=self._carry(request, answer))

    def _carry(self, request: CompletionRequest, answer: CompletionResponse) -> str | None:
        """What `restore` needs of this answer: its reasoning items and, with chaining
        on, its id and the digest of the conversation its request carried."""
        reasoning = self._reasoning.get(turn_key_of(answer), ())
        carried: dict[str, Any] = {}
        if reasoning:
            carried["reasoning"] = [item.decode() for item in reasoning]
        last = self._last
        if self.config.previous_response_id:
            carried["response_id"] = last.response_id if last is not None else None
            if last is not None:
                carried["count"], carried["digest"] = last.count, last.digest
        return WIRE_JSON.encode(carried) if carried else None

    def restore(self, states: Sequence[CarriedState]) -> None:
        """Take back the reasoning items and the response chain recorded with earlier
        steps (those this kind of provider produced; any other state is ignored)."""
        for state in states:
            if state.provider != self.name:
                continue
            try:
                carried = json.loads(state.carry)
            except ValueError:
                continue  # not ours: state recorded by something else under this name
            if not isinstance(carried, dict):
                continue
            key = turn_key(state.answer)
            items = carried.get("reasoning")
            if isinstance(items, list) and all(isinstance(i, str) for i in items):
                self._reasoning[key] = tuple(i.encode() for i in items)
            if "response_id" in carried:
                self._last = _restored_chain(carried, key)

    def payload(self, request: CompletionRequest, *, stream: bool) -> bytes:
        """The body; with chaining on, only the items after the previous answer."""
        self._start, self._previous = self._chain_point(request.messages)
        return super().payload(request, stream=stream)

    def _chain_point(self, messages: tuple[Message, ...]) -> tuple[int, str | None]:
        last = self._last
        if not self.config.previous_response_id or last is None:
            return 0, None
        n = last.count
        if len(messages) <= n + 1:
            return 0, None
        if last.sent is not None:
            if any(a is not b for a, b in zip(last.sent, messages, strict=False)):
                return 0, None
        elif self._digest(messages[:n]) != last.digest:
            return 0, None
        answer = messages[n]
        if answer.role is not Role.ASSISTANT or turn_key(answer) != last.key:
            return 0, None
        return n + 1, last.response_id

    def _digest(self, messages: tuple[Message, ...]) -> str:
        """A digest of `messages` as this provider encodes them (reasoning included)."""
        digest = hashlib.sha256()
        for message in messages:
            for fragment in self._fragments_of(message):
                digest.update(fragment)
                digest.update(b"\n")
        return digest.hexdigest()

    def _body(self, request: CompletionRequest, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model, "max_output_tokens": request.max_tokens}
        tools: list[dict[str, Any]] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in request.tools
        ]
        if request.web is not None and request.web.search:
            tools.append(web_search_tool(request.web))
        if tools:
            body["tools"] = tools
        body["store"] = self.config.previous_response_id
        body["include"] = ["reasoning.encrypted_content"]
        if self._previous is not None:
            body["previous_response_id"] = self._previous
        if request.cache_key:
            body["prompt_cache_key"] = request.cache_key
        if stream:
            body["stream"] = True
        return body

    def _messages_json(self, messages: tuple[Message, ...]) -> bytes:
        return b"".join((b"[", self.joined(messages[self._start :], self._fragments_of), b"]"))

    def _fragments_of(self, message: Message) -> tuple[bytes, ...]:
        fragments: tuple[bytes, ...] = self.encoded(message, self._encode)
        return fragments

    def _encode(self, message: Message) -> tuple[bytes, ...]:
        items = wire_items(message, self.config.system_role)
        carried: tuple[bytes, ...] = ()
        if message.role is Role.ASSISTANT:
            carried = self._reasoning.get(turn_key(message), ())
        return carried + tuple(WIRE_JSON.encode(item).encode() for item in items)

    # --- response ----------------------------------------------------------------------

    def _error_detail(self, data: dict[str, Any]) -> tuple[str, bool]:
        error = data.get("error")
        if isinstance(error, dict):
            code = error.get("code") or error.get("type") or "error"
            return f"{code}: {error.get('message') or ''}", str(code) in RETRYABLE_CODES
        if isinstance(error, str):
            return error, False
        return json.dumps(data), False

    def _parse_body(self, data: dict[str, Any]) -> CompletionResponse:
        if data.get("error") and data.get("status") in (None, "failed"):
            detail, retryable = self._error_detail(data)
            raise self.stream_error(f"response failed: {detail}", retryable=retryable)
        output = data.get("output")
        if not isinstance(output, list):
            raise self.shape_error("no output list")
        state = ResponseState()
        for item in output:
            if not isinstance(item, dict):
                raise self.shape_error("an output item that is not an object")
            state.item_done(item)
        state.finish(data)
        return self._done(state, None)

    def _parse_stream(
        self, events: Iterator[SSEEvent], on_token: TokenCallback | None, ttft: StreamClock
    ) -> CompletionResponse:
        state = ResponseState()
        for event in events:
            try:
                data = json.loads(event.data)
            except ValueError as exc:
                raise self.shape_error(f"malformed {event.event} event") from exc
            if not isinstance(data, dict):
                raise self.shape_error(f"{event.event} event that is not an object")
            kind = data.get("type") or event.event
            if kind in ("response.completed", "response.incomplete"):
                state.finish(data.get("response"))
                return self._done(state, ttft.first)
            if kind in ("response.failed", "error"):
                raise self._stream_failure(data)
            state.apply(str(kind), data, on_token, ttft)
        raise self.stream_error("stream ended before response.completed")

    def _done(self, state: ResponseState, ttft: float | None) -> CompletionResponse:
        self._extras = (tuple(item.encode() for item in state.reasoning), state.response_id)
        return state.response(ttft)

    def _stream_failure(self, data: dict[str, Any]) -> Exception:
        error: object = data
        if data.get("type") == "response.failed":
            error = (data.get("response") or {}).get("error") or {}
        code, message = "error", ""
        if isinstance(error, dict):
            code = str(error.get("code") or error.get("type") or "error")
            message = str(error.get("message") or "")
        return self.stream_error(
            f"error event in stream: {code}: {message}", retryable=code in RETRYABLE_CODES
        )

    def _answered(self, request: CompletionRequest, response: CompletionResponse) -> None:
        reasoning, response_id = self._extras
        key = turn_key_of(response)
        if reasoning:
            self._reasoning[key] = reasoning
        self._last = None
        if response_id:
            sent = request.messages
            digest = self._digest(sent) if self.config.previous_response_id else ""
            self._last = _Chain(sent, len(sent), digest, response_id, key)


def turn_key_of(response: CompletionResponse) -> TurnKey:
    """The turn key of the assistant message the loop makes of `response`."""
    return response.text, tuple(call.id for call in response.tool_calls)


def _restored_chain(carried: dict[str, Any], key: TurnKey) -> _Chain | None:
    response_id, count, digest = (carried.get(k) for k in ("response_id", "count", "digest"))
    if not (isinstance(response_id, str) and response_id and isinstance(count, int)
            and isinstance(digest, str)):
        return None
    return _Chain(None, count, digest, response_id, key)


def _lost_previous(exc: ProviderError) -> bool:
    return exc.status in (400, 404) and "previous_response" in str(exc)


def web_search_tool(web: WebAccess) -> dict[str, Any]:
    """The provider-executed ``web_search`` tool for a `[web]` declaration."""
    tool: dict[str, Any] = {"type": "web_search"}
    if web.allowed_domains:
        tool["filters"] = {"allowed_domains": list(web.allowed_domains)}
    return tool


def wire_items(message: Message, system_role: str = "system") -> list[dict[str, Any]]:
    """The Responses ``input`` items of one message (reasoning items not included)."""
    if message.role is Role.TOOL:
        text, images = media_text(message)
        output: list[dict[str, Any]] = [
            {"type": "function_call_output", "call_id": message.tool_call_id, "output": text}
        ]
        if images:
            # The images follow the output as a user message of input_image parts.
            parts: list[dict[str, Any]] = [{"type": "input_text", "text": "Image(s) from"
                                            f" view_image: {', '.join(m.path for m in images)}"}]
            parts.extend({"type": "input_image", "image_url": data_url(m)} for m in images)
            output.append({"type": "message", "role": "user", "content": parts})
        return output
    if message.role is Role.SYSTEM:
        return [{"type": "message", "role": system_role, "content": message.content}]
    if message.role is Role.USER:
        return [{"type": "message", "role": "user", "content": message.content}]
    items: list[dict[str, Any]] = []
    if message.content or not message.tool_calls:
        items.append({"type": "message", "role": "assistant", "content": message.content})
    for call in message.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.raw_arguments
                if call.raw_arguments is not None
                else json.dumps(call.arguments),
            }
        )
    return items
