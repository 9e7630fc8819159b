"""Anthropic's Messages API (``POST /v1/messages``), JSON and SSE, over httpx.

This module holds only Anthropic's wire format: how `messages` types become a request
body, and how a response body or an event stream becomes a `CompletionResponse`. Cache
counts, which Anthropic reports beside an input count that excludes them, are folded
into `prompt_tokens` here so a recorded row means the same for every vendor.

Prompt caching: Anthropic caches only what a request marks with ``cache_control`` (at
most 4 breakpoints). io sets up to four: on the last tool (the tool specs), on the
system prompt, on the last block of the conversation (a mark that moves to the end with
every step, so the next request can read what this one wrote), and on the block the
previous request ended with (so this one reads it, however many blocks the step added:
the vendor looks back only 20 blocks from a mark for a cached prefix). Retries,
timing and redaction live in `_http`. It never touches the store or the terminal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from harness_core._record import record
from harness_core.clock import Clock
from harness_core.messages import Message, Role, ToolCall, Usage
from harness_core.providers._base import (
    Citation,
    CompletionRequest,
    CompletionResponse,
    ServerToolCall,
    TokenCallback,
    WebAccess,
)
from harness_core.providers._config import ProviderConfig
from harness_core.providers._http import HttpProvider
from harness_core.providers._registry import validate_web
from harness_core.providers._sse import SSEEvent
from harness_core.providers._wire import (
    WIRE_JSON,
    StreamClock,
    base64_text,
    media_text,
    opt_int,
    tool_arguments,
)

if TYPE_CHECKING:
    from harness_core.providers._httpx import httpx

__all__ = ["AnthropicProvider"]

API_VERSION = "2023-06-01"
WEB_SEARCH_TOOL = "web_search_20250305"
WEB_FETCH_TOOL = "web_fetch_20250910"
WEB_FETCH_BETA = "web-fetch-2025-09-10"
_RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "rate_limit_error", "api_error"})
CACHE_MARK: dict[str, str] = {"type": "ephemeral"}
"""Anthropic's ``cache_control`` value: cache the prefix up to here (5 minutes)."""
_MARK_FIELD = b',"cache_control":' + WIRE_JSON.encode(CACHE_MARK).encode()


class AnthropicProvider(HttpProvider):
    """The `anthropic` provider: Claude through the Messages API.

    Args:
        config: The provider table; `base_url` defaults to ``https://api.anthropic.com``.
        env: Looked up for ``ANTHROPIC_API_KEY`` when `config.api_key` is unset.
        clock: Time for backoff and latency.
        client: The run's shared `httpx.Client`; one is made (and closed by `close`)
            when None.
        jitter: A ``random.random``-like source for backoff jitter.

    Raises:
        ConfigError: No key, or a `[web]` declaration Anthropic cannot carry.
    """

    name = "anthropic"
    env_var = "ANTHROPIC_API_KEY"
    default_base_url = "https://api.anthropic.com"

    def __init__(
        self,
        config: ProviderConfig,
        *,
        env: Mapping[str, str],
        clock: Clock,
        client: httpx.Client | None = None,
        jitter: Callable[[], float] | None = None,
    ) -> None:
        validate_web("anthropic", config.web)
        super().__init__(config, env=env, clock=clock, client=client, jitter=jitter)
        self._turns: tuple[tuple[Message, ...], bytes, tuple[str, list[bytes]] | None] | None = None
        self._system: tuple[tuple[Message, ...], str] | None = None
        self._sent_end: int | None = None  # where the previous request's last block ends

    def _check_web(self, request: CompletionRequest) -> None:
        validate_web("anthropic", request.web)

    def _url(self) -> str:
        return self._base_url + "/v1/messages"

    def _headers(self, request: CompletionRequest) -> dict[str, str]:
        headers = {"x-api-key": self._key, "anthropic-version": API_VERSION}
        if request.web is not None and request.web.fetch:
            headers["anthropic-beta"] = WEB_FETCH_BETA
        return headers

    def _body(self, request: CompletionRequest, *, stream: bool) -> dict[str, Any]:
        system = self._system_text(request.messages)
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
        }
        if system:
            body["system"] = [{"type": "text", "text": system, "cache_control": CACHE_MARK}]
        tools: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        if request.web is not None:
            tools.extend(web_tools(request.web))
        if tools:
            tools[-1] = {**tools[-1], "cache_control": CACHE_MARK}
            body["tools"] = tools
        if stream:
            body["stream"] = True
        return body

    def _system_text(self, messages: tuple[Message, ...]) -> str:
        """`system_text`, extended from the previous request's when this one extends it."""
        previous = self._system
        if previous is not None:
            done, text = previous
            if len(messages) >= len(done) and messages[: len(done)] == done:
                more = system_text(messages[len(done) :])
                text = text + "\n\n" + more if text and more else text or more
                self._system = (messages, text)
                return text
        text = system_text(messages)
        self._system = (messages, text)
        return text

    def _messages_json(self, messages: tuple[Message, ...]) -> bytes:
        # The same turns as `wire_messages`, from each message's blocks encoded once.
        # Consecutive messages of one role merge into one turn, so only the last turn
        # can still grow: the turns before it are kept as text between steps, and a
        # request that extends the previous one encodes only its new messages.
        closed: bytes = b""
        last: tuple[str, list[bytes]] | None = None
        rest = messages
        previous = self._turns
        extends = False
        if previous is not None:
            done, done_closed, done_last = previous
            if len(messages) >= len(done) and messages[: len(done)] == done:
                closed, rest = done_closed, messages[len(done) :]
                last = (done_last[0], list(done_last[1])) if done_last is not None else None
                extends = True
        for message in rest:
            if message.role is Role.SYSTEM:
                continue
            role, blocks = self.encoded(message, _encode_blocks)
            if not blocks:
                continue
            if last is not None and last[0] == role:
                last[1].extend(blocks)
                continue
            if last is not None:
                closed = b",".join((closed, _turn_json(*last))) if closed else _turn_json(*last)
            last = (role, list(blocks))
        self._turns = (messages, closed, last)
        if last is None:
            self._sent_end = None
            return b"".join((b"[", closed, b"]"))
        text = b"".join((b"[", closed, b"," if closed else b"", _turn_json(*last), b"]"))
        return self._marked_text(text, extends=extends, at_end=last[0] == "user")

    def _marked_text(self, text: bytes, *, extends: bool, at_end: bool) -> bytes:
        """The conversation with its moving breakpoints: on the last block (unless the
        last turn is an assistant prefill, a `pause_turn` continuation) and on the block
        the previous request ended with, when this one extends it. The vendor finds a
        cached prefix only within 20 blocks of a mark: the second mark reads what the
        previous request wrote however many blocks a step added (parallel tool calls).

        A text ends with its last block's ``}``, then ``]}]``; the previous request's
        text, less those 3 bytes, begins this one when it extends it (the encoding is
        deterministic), so its end is a byte offset here.
        """
        ends = [len(text) - 4] if at_end else []
        previous, self._sent_end = self._sent_end, len(text) - 4
        if extends and previous is not None and previous < len(text) - 4:
            ends.insert(0, previous)
        parts: list[bytes] = []
        start = 0
        for end in ends:
            parts += (text[start:end], _MARK_FIELD)
            start = end
        parts.append(text[start:])
        return b"".join(parts)

    def _error_detail(self, data: dict[str, Any]) -> tuple[str, bool]:
        error = data.get("error")
        if not isinstance(error, dict):
            return json.dumps(data), False
        kind = str(error.get("type") or "error")
        message = str(error.get("message") or "")
        return f"{kind}: {message}", kind in _RETRYABLE_ERROR_TYPES

    def _parse_body(self, data: dict[str, Any]) -> CompletionResponse:
        if data.get("type") == "error":
            detail, retry = self._error_detail(data)
            raise self.stream_error(detail, retryable=retry)
        content = data.get("content")
        if not isinstance(content, list):
            raise self.shape_error("no content list")
        blocks = [_Block.started(b) for b in content if isinstance(b, dict)]
        return _assemble(
            blocks, str(data.get("model") or ""), data.get("usage"), data.get("stop_reason"), None
        )

    def _parse_stream(
        self, events: Iterator[SSEEvent], on_token: TokenCallback | None, ttft: StreamClock
    ) -> CompletionResponse:
        blocks: dict[int, _Block] = {}
        model = ""
        usage: dict[str, Any] = {}
        stop_reason: str | None = None
        for event in events:
            try:
                data = json.loads(event.data)
            except ValueError as exc:
                raise self.shape_error(f"malformed {event.event} event") from exc
            kind = data.get("type") if isinstance(data, dict) else None
            if kind == "content_block_delta":
                _apply_delta(blocks, data, on_token, ttft)
            elif kind == "content_block_start":
                block = data.get("content_block")
                if isinstance(block, dict):
                    blocks[int(data.get("index", len(blocks)))] = _Block.started(block)
            elif kind == "message_start":
                message = data.get("message") or {}
                model = str(message.get("model") or "")
                _merge_usage(usage, message.get("usage"))
            elif kind == "message_delta":
                stop_reason = (data.get("delta") or {}).get("stop_reason") or stop_reason
                _merge_usage(usage, data.get("usage"))
            elif kind == "message_stop":
                ordered = [blocks[i] for i in sorted(blocks)]
                return _assemble(ordered, model, usage, stop_reason, ttft.first)
            elif kind == "error":
                detail, retry = self._error_detail(data)
                raise self.stream_error(f"error event in stream: {detail}", retryable=retry)
            # ping, content_block_stop and event types this version does not know: ignored.
        raise self.stream_error("stream ended before message_stop")


# --- request -------------------------------------------------------------------------


def wire_messages(messages: tuple[Message, ...]) -> tuple[str, list[dict[str, Any]]]:
    """Anthropic's ``system`` text and ``messages`` list for a conversation.

    System messages join into ``system``; tool results travel in a user turn as
    ``tool_result`` blocks; consecutive turns of one role merge, because the API wants
    a tool result in the user turn right after the assistant turn that called it.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role is Role.SYSTEM:
            if message.content:
                system.append(message.content)
            continue
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return "\n\n".join(system), out


def system_text(messages: tuple[Message, ...]) -> str:
    """Anthropic's ``system`` text: every system message, in order."""
    return "\n\n".join(m.content for m in messages if m.role is Role.SYSTEM and m.content)


def _turn_json(role: str, blocks: list[bytes]) -> bytes:
    return b"".join((b'{"role":"', role.encode(), b'","content":[', b",".join(blocks), b"]}"))


def _encode_blocks(message: Message) -> tuple[str, tuple[bytes, ...]]:
    role, blocks = _blocks(message)
    return role, tuple(WIRE_JSON.encode(block).encode() for block in blocks)


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if message.role is Role.TOOL:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        text, images = media_text(message)
        if images:
            # Anthropic takes images inside the tool result, as base64 image blocks.
            parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            parts.extend({"type": "image", "source": {
                "type": "base64", "media_type": m.media_type, "data": base64_text(m)}}
                for m in images)
            block["content"] = parts
        elif text:
            block["content"] = text
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    if message.role is Role.ASSISTANT:
        for call in message.tool_calls:
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            )
        return "assistant", blocks
    return "user", blocks


def web_tools(web: WebAccess) -> list[dict[str, Any]]:
    """The server tools declaring `web`; `max_uses` caps each tool separately."""
    common: dict[str, Any] = {}
    if web.allowed_domains:
        common["allowed_domains"] = list(web.allowed_domains)
    if web.blocked_domains:
        common["blocked_domains"] = list(web.blocked_domains)
    if web.max_uses is not None:
        common["max_uses"] = web.max_uses
    tools: list[dict[str, Any]] = []
    if web.search:
        tools.append({"type": WEB_SEARCH_TOOL, "name": "web_search", **common})
    if web.fetch:
        tools.append({"type": WEB_FETCH_TOOL, "name": "web_fetch", **common})
    return tools


# --- response ------------------------------------------------------------------------


@record(frozen=False)
class _Block:
    """One content block as it arrives; `parts` is text or partial JSON."""

    type: str
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=lambda: [])
    input: dict[str, Any] = field(default_factory=lambda: {})
    citations: list[Any] = field(default_factory=lambda: [])

    @staticmethod
    def started(block: dict[str, Any]) -> _Block:
        text = block.get("text")
        started = _Block(
            type=str(block.get("type") or ""),
            id=str(block.get("id") or ""),
            name=str(block.get("name") or ""),
            parts=[text] if isinstance(text, str) and text else [],
            citations=list(block.get("citations") or ()),
        )
        if isinstance(block.get("input"), dict):
            started.input = block["input"]
        return started

    def tool_input(self) -> tuple[dict[str, Any], str | None]:
        if not self.parts:
            return self.input, None
        return tool_arguments("".join(self.parts))


def _apply_delta(
    blocks: dict[int, _Block],
    data: dict[str, Any],
    on_token: TokenCallback | None,
    ttft: StreamClock,
) -> None:
    block = blocks.get(data.get("index", -1))
    delta = data.get("delta")
    if block is None or not isinstance(delta, dict):
        return
    kind = delta.get("type")
    if kind == "text_delta":
        text = delta.get("text")
        if text:
            block.parts.append(text)
            if ttft.first is None:
                ttft.mark()
            if on_token is not None:
                on_token(text)
    elif kind == "input_json_delta":
        partial = delta.get("partial_json")
        if partial:
            block.parts.append(partial)
            if ttft.first is None:
                ttft.mark()
    elif kind == "citations_delta":
        block.citations.append(delta.get("citation"))


def _merge_usage(into: dict[str, Any], reported: object) -> None:
    """message_delta counts are cumulative: a reported value replaces the earlier one."""
    if isinstance(reported, dict):
        into.update({k: v for k, v in reported.items() if v is not None})


def wire_usage(raw: object) -> Usage:
    """Anthropic's usage, with cache reads and writes folded into `prompt_tokens`.

    Anthropic reports no total, so `total_tokens` stays None (not re-derived).
    """
    if not isinstance(raw, dict):
        return Usage()
    plain = opt_int(raw.get("input_tokens"))
    read = opt_int(raw.get("cache_read_input_tokens"))
    write = opt_int(raw.get("cache_creation_input_tokens"))
    prompt = None if plain is None else plain + (read or 0) + (write or 0)
    server: int | None = None
    counters = raw.get("server_tool_use")
    if isinstance(counters, dict):
        known = [
            n
            for n in (
                opt_int(counters.get(k)) for k in ("web_search_requests", "web_fetch_requests")
            )
            if n is not None
        ]
        server = sum(known) if known else None
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=opt_int(raw.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
        server_tool_requests=server,
    )


def _citations(raw: list[Any]) -> list[Citation]:
    found: list[Citation] = []
    for item in raw:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            title = item.get("title")
            cited = item.get("cited_text")
            found.append(
                Citation(
                    url=item["url"],
                    title=title if isinstance(title, str) else None,
                    cited_text=cited if isinstance(cited, str) else None,
                )
            )
    return found


def _assemble(
    blocks: list[_Block], model: str, usage: object, stop_reason: object, ttft: float | None
) -> CompletionResponse:
    text: list[str] = []
    calls: list[ToolCall] = []
    citations: list[Citation] = []
    server_calls: list[ServerToolCall] = []
    for block in blocks:
        if block.type == "text":
            text.append("".join(block.parts))
            citations.extend(_citations(block.citations))
        elif block.type == "tool_use":
            arguments, raw = block.tool_input()
            calls.append(ToolCall(block.id, block.name, arguments, raw))
        elif block.type == "server_tool_use":
            arguments, _ = block.tool_input()
            server_calls.append(ServerToolCall(block.name, arguments))
    return CompletionResponse(
        text="".join(text),
        tool_calls=tuple(calls),
        usage=wire_usage(usage),
        model=model,
        stop_reason=stop_reason if isinstance(stop_reason, str) else None,
        ttft_ms=ttft,
        citations=tuple(citations),
        server_tool_calls=tuple(server_calls),
    )
