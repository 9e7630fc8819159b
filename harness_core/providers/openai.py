"""OpenAI's Chat Completions (``POST {base_url}/chat/completions``), JSON and SSE.

Also any OpenAI-compatible server reached through `base_url` (vLLM, llama.cpp server,
Ollama). This module holds only that wire format: the request body, and the parsing of
a response body or of ``data:`` chunks, with tool-call arguments assembled from the
pieces a stream splits them into. OpenRouter reuses it with its own headers and web
plugin. OpenAI caches a repeated prefix by itself; the run's `cache_key` goes out as
``prompt_cache_key`` so every step of a run lands where its prefix is cached
(compatible servers ignore the field). It never touches the store or the terminal.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from harness_core._record import record
from harness_core.clock import Clock
from harness_core.messages import Media, Message, Role, ToolCall, Usage
from harness_core.providers._base import (
    Citation,
    CompletionRequest,
    CompletionResponse,
    TokenCallback,
    WebAccess,
)
from harness_core.providers._config import ProviderConfig
from harness_core.providers._http import HttpProvider
from harness_core.providers._registry import validate_web
from harness_core.providers._retry import is_retryable_status
from harness_core.providers._sse import SSEEvent
from harness_core.providers._wire import (
    WIRE_JSON,
    StreamClock,
    data_url,
    media_text,
    opt_int,
    tool_arguments,
)

if TYPE_CHECKING:
    from harness_core.providers._httpx import httpx

__all__ = ["OpenAIProvider"]

_OPENAI_HOST = "api.openai.com"


class OpenAIProvider(HttpProvider):
    """The `openai` provider: Chat Completions, or a compatible server at `base_url`.

    Against OpenAI itself the output ceiling is sent as ``max_completion_tokens`` (its
    reasoning models refuse ``max_tokens``); against any other `base_url` as
    ``max_tokens``, which every compatible server reads.

    Args:
        config: The provider table; `base_url` defaults to ``https://api.openai.com/v1``.
        env: Looked up for the vendor's key variable when `config.api_key` is unset.
        clock: Time for backoff and latency.
        client: The run's shared `httpx.Client`; one is made (and closed by `close`)
            when None.
        jitter: A ``random.random``-like source for backoff jitter.

    Raises:
        ConfigError: No key, or a `[web]` declaration the vendor cannot carry.
    """

    name = "openai"
    env_var = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"

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
        self._url_text = self._base_url + "/chat/completions"
        self._encoded_prefix: tuple[tuple[Message, ...], bytes, tuple[Media, ...]] | None = None
        self._tokens_field = (
            "max_completion_tokens" if _OPENAI_HOST in self._base_url else "max_tokens"
        )

    def _check_web(self, request: CompletionRequest) -> None:
        validate_web(self.name, request.web)

    def _url(self) -> str:
        return self._url_text

    def _headers(self, request: CompletionRequest) -> dict[str, str]:
        return {"authorization": f"Bearer {self._key}"}

    def _body(self, request: CompletionRequest, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            self._tokens_field: request.max_tokens,
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
        if request.cache_key:
            body["prompt_cache_key"] = request.cache_key
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if request.web is not None and (request.web.search or request.web.fetch):
            self._declare_web(body, request.web)
        return body

    def _declare_web(self, body: dict[str, Any], web: WebAccess) -> None:
        options: dict[str, Any] = {}
        if web.allowed_domains:
            options["filters"] = {"allowed_domains": list(web.allowed_domains)}
        body["web_search_options"] = options

    def _messages_json(self, messages: tuple[Message, ...]) -> bytes:
        # A tool message carries only text, so the images of a run of tool results go
        # in one user message after it (`image_turn`). The text of the previous
        # request is kept (without an image turn it still owed) and extended when this
        # request extends that one, so a step's cost stays flat as the run grows.
        head, rest = b"", messages
        pending: tuple[Media, ...] = ()
        previous = self._encoded_prefix
        if previous is not None:
            done, done_head, done_pending = previous
            if len(messages) >= len(done) and messages[: len(done)] == done:
                head, pending, rest = done_head, done_pending, messages[len(done) :]
        encode = self._encode_message
        parts: list[bytes] = [head] if head else []
        waiting: list[Media] = list(pending)
        for message in rest:
            if waiting and message.role is not Role.TOOL:
                parts.append(WIRE_JSON.encode(image_turn(waiting)).encode())
                waiting = []
            parts.append(self.encoded(message, encode))
            if message.media:
                waiting.extend(media_text(message)[1])
        head = b",".join(parts)
        self._encoded_prefix = (messages, head, tuple(waiting))
        if waiting:
            turn = WIRE_JSON.encode(image_turn(waiting)).encode()
            return b"".join((b"[", head, b"," if head else b"", turn, b"]"))
        return b"".join((b"[", head, b"]"))

    def _encode_message(self, message: Message) -> bytes:
        return WIRE_JSON.encode(wire_message(message, self.config.system_role)).encode()

    def _error_detail(self, data: dict[str, Any]) -> tuple[str, bool]:
        error = data.get("error")
        if isinstance(error, dict):
            kind = error.get("type") or error.get("code") or "error"
            return f"{kind}: {error.get('message') or ''}", False
        if isinstance(error, str):
            return error, False
        return json.dumps(data), False

    def _error_in_body(self, data: dict[str, Any]) -> None:
        """A 200 response or chunk may still carry an error (compatible servers do)."""
        error = data.get("error")
        if not error:
            return
        detail, _ = self._error_detail(data)
        code = error.get("code") if isinstance(error, dict) else None
        retryable = not isinstance(code, int) or is_retryable_status(code)
        raise self.stream_error(f"error in response: {detail}", retryable=retryable)

    def _parse_body(self, data: dict[str, Any]) -> CompletionResponse:
        self._error_in_body(data)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self.shape_error("no choices")
        choice = choices[0]
        message = choice.get("message") or {}
        calls = []
        for raw in message.get("tool_calls") or ():
            function = raw.get("function") or {}
            arguments, text = tool_arguments(str(function.get("arguments") or ""))
            calls.append(
                ToolCall(
                    str(raw.get("id") or _call_id()),
                    str(function.get("name") or ""),
                    arguments,
                    text,
                )
            )
        content = message.get("content")
        return CompletionResponse(
            text=content if isinstance(content, str) else "",
            tool_calls=tuple(calls),
            usage=wire_usage(data.get("usage")),
            model=str(data.get("model") or ""),
            stop_reason=choice.get("finish_reason"),
            citations=tuple(_citations(message.get("annotations"))),
        )

    def _parse_stream(
        self, events: Iterator[SSEEvent], on_token: TokenCallback | None, ttft: StreamClock
    ) -> CompletionResponse:
        state = _StreamState()
        for event in events:
            if event.data == "[DONE]":
                break
            try:
                chunk = json.loads(event.data)
            except ValueError as exc:
                raise self.shape_error("malformed chunk in stream") from exc
            if not isinstance(chunk, dict):
                continue
            if "error" in chunk:
                self._error_in_body(chunk)
            if not state.model:
                state.model = str(chunk.get("model") or "")
            usage = chunk.get("usage")
            if usage:
                state.usage = usage
            for choice in chunk.get("choices") or ():
                if choice.get("index", 0) == 0:
                    state.apply(choice, on_token, ttft)
        if state.finish_reason is None:
            raise self.stream_error("stream ended before a finish_reason")
        return state.response(ttft.first)


# --- request -------------------------------------------------------------------------


def wire_messages(
    messages: tuple[Message, ...], system_role: str = "system"
) -> list[dict[str, Any]]:
    """The Chat Completions ``messages`` list for a conversation.

    A tool message can carry only text, so the images of a run of tool results follow
    it as one user message of ``image_url`` parts (data URLs).
    """
    out: list[dict[str, Any]] = []
    pending: list[Media] = []
    for message in messages:
        if pending and message.role is not Role.TOOL:
            out.append(image_turn(pending))
            pending = []
        out.append(wire_message(message, system_role))
        if message.media:
            pending.extend(media_text(message)[1])
    if pending:
        out.append(image_turn(pending))
    return out


def image_turn(images: list[Media]) -> dict[str, Any]:
    """The user message that shows the model the images of the tool results before it."""
    names = ", ".join(m.path for m in images)
    parts: list[dict[str, Any]] = [{"type": "text", "text": f"Image(s) from view_image: {names}"}]
    parts.extend({"type": "image_url", "image_url": {"url": data_url(m)}} for m in images)
    return {"role": "user", "content": parts}


def wire_message(message: Message, system_role: str = "system") -> dict[str, Any]:
    """One message in Chat Completions' shape; a system message takes `system_role`
    (``developer`` for models that refuse ``system``)."""
    if message.role is Role.TOOL:
        return {"role": "tool", "tool_call_id": message.tool_call_id,
                "content": media_text(message)[0]}
    if message.role is Role.SYSTEM:
        return {"role": system_role, "content": message.content}
    if message.role is not Role.ASSISTANT:
        return {"role": message.role.value, "content": message.content}
    # Always a string: OpenAI's reference allows null (or no content) beside tool calls,
    # but llama-cpp-python's server refuses both, and every server takes "".
    entry: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        entry["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.raw_arguments
                    if call.raw_arguments is not None
                    else json.dumps(call.arguments),
                },
            }
            for call in message.tool_calls
        ]
    return entry


# --- response ------------------------------------------------------------------------


def _call_id() -> str:
    # A compatible server that sends no call id still needs one unique in the run.
    return "call_" + uuid.uuid4().hex[:24]


@record(frozen=False)
class _PartialCall:
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=lambda: [])


@record(frozen=False)
class _StreamState:
    model: str = ""
    text: list[str] = field(default_factory=lambda: [])
    calls: dict[int, _PartialCall] = field(default_factory=lambda: {})
    usage: Any = None
    finish_reason: str | None = None
    annotations: list[Any] = field(default_factory=lambda: [])

    def apply(
        self, choice: dict[str, Any], on_token: TokenCallback | None, ttft: StreamClock
    ) -> None:
        delta = choice.get("delta")
        if delta:
            content = delta.get("content")
            if content:
                self.text.append(content)
                if ttft.first is None:
                    ttft.mark()
                if on_token is not None:
                    on_token(content)
            pieces = delta.get("tool_calls")
            if pieces:
                for piece in pieces:
                    self._add_call_piece(piece)
                if ttft.first is None:
                    ttft.mark()
            notes = delta.get("annotations")
            if notes:
                self.annotations.extend(notes)
        finish = choice.get("finish_reason")
        if finish:
            self.finish_reason = finish

    def _add_call_piece(self, piece: dict[str, Any]) -> None:
        index = piece.get("index")
        if not isinstance(index, int):
            # Some servers send whole calls without an index: key them by id.
            ids = [i for i, c in self.calls.items() if c.id and c.id == piece.get("id")]
            index = ids[0] if ids else len(self.calls)
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = _PartialCall()
        if piece.get("id") and not call.id:
            call.id = str(piece["id"])
        function = piece.get("function") or {}
        if function.get("name") and not call.name:
            call.name = str(function["name"])
        arguments = function.get("arguments")
        if arguments:
            call.parts.append(arguments)

    def response(self, ttft: float | None) -> CompletionResponse:
        calls: list[ToolCall] = []
        for index in sorted(self.calls):
            partial = self.calls[index]
            arguments, raw = tool_arguments("".join(partial.parts))
            calls.append(ToolCall(partial.id or _call_id(), partial.name, arguments, raw))
        return CompletionResponse(
            text="".join(self.text),
            tool_calls=tuple(calls),
            usage=wire_usage(self.usage),
            model=self.model,
            stop_reason=self.finish_reason,
            ttft_ms=ttft,
            citations=tuple(_citations(self.annotations)),
        )


def wire_usage(raw: object) -> Usage:
    """Chat Completions usage; cached and reasoning counts are breakdowns of the parts."""
    if not isinstance(raw, dict):
        return Usage()
    prompt_details = raw.get("prompt_tokens_details")
    completion_details = raw.get("completion_tokens_details")
    cached = (
        opt_int(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else None
    )
    written = (
        opt_int(prompt_details.get("cache_write_tokens"))
        if isinstance(prompt_details, dict)
        else None
    )
    reasoning = (
        opt_int(completion_details.get("reasoning_tokens"))
        if isinstance(completion_details, dict)
        else None
    )
    return Usage(
        prompt_tokens=opt_int(raw.get("prompt_tokens")),
        completion_tokens=opt_int(raw.get("completion_tokens")),
        total_tokens=opt_int(raw.get("total_tokens")),
        cache_read_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=reasoning,
    )


def _citations(raw: object) -> list[Citation]:
    found: list[Citation] = []
    if not isinstance(raw, list):
        return found
    for note in raw:
        if not isinstance(note, dict) or note.get("type") != "url_citation":
            continue
        body = note.get("url_citation")
        if not isinstance(body, dict):
            body = note  # some compatible servers flatten the fields
        url = body.get("url")
        if isinstance(url, str):
            title = body.get("title")
            content = body.get("content")
            found.append(
                Citation(
                    url=url,
                    title=title if isinstance(title, str) else None,
                    cited_text=content if isinstance(content, str) else None,
                )
            )
    return found
