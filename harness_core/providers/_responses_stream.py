"""Reading a Responses API answer: output items and semantic stream events into a
`CompletionResponse`, plus what must be carried to the next turn (reasoning items and
the response id).

Text comes from ``response.output_text.delta`` (streamed to the caller as it arrives)
or, for a body, from the message items; a function call is opened by
``response.output_item.added``, grows with ``response.function_call_arguments.delta``
and is settled by its ``response.output_item.done``; usage and the served model come
with ``response.completed`` (or ``response.incomplete``). Event types this version
does not know are ignored. No I/O.
"""

from __future__ import annotations

import uuid
from dataclasses import field
from typing import Any

from harness_core._record import record
from harness_core.messages import Message, ToolCall, Usage
from harness_core.providers._base import (
    Citation,
    CompletionResponse,
    ServerToolCall,
    TokenCallback,
)
from harness_core.providers._wire import WIRE_JSON, StreamClock, opt_int, tool_arguments

__all__ = ["RETRYABLE_CODES", "ResponseState", "TurnKey", "turn_key", "wire_usage"]

RETRYABLE_CODES = frozenset(
    {"server_error", "rate_limit_exceeded", "internal_error", "server_is_overloaded", "slow_down"}
)
"""Error codes (in an error event, a failed response or an error body) worth a retry."""

TurnKey = tuple[str, tuple[str, ...]]
"""An assistant turn as the provider recognises it later: its text and its call ids."""


def turn_key(message: Message) -> TurnKey:
    """The key of an assistant message (the loop rebuilds it from the answer's fields)."""
    return message.content, tuple(call.id for call in message.tool_calls)


@record(frozen=False)
class _Call:
    call_id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=lambda: [])
    arguments: str | None = None


@record(frozen=False)
class ResponseState:
    """What has been read of one answer so far."""

    text: list[str] = field(default_factory=lambda: [])
    item_text: list[str] = field(default_factory=lambda: [])
    calls: dict[int, _Call] = field(default_factory=lambda: {})
    reasoning: list[str] = field(default_factory=lambda: [])
    server_tools: list[ServerToolCall] = field(default_factory=lambda: [])
    citations: list[Citation] = field(default_factory=lambda: [])
    model: str = ""
    response_id: str = ""
    status: str | None = None
    usage: Usage = field(default_factory=Usage)

    def apply(
        self, kind: str, data: dict[str, Any], on_token: TokenCallback | None, ttft: StreamClock
    ) -> None:
        """Fold one stream event (other than the terminal ones) into the state."""
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            delta = data.get("delta")
            if isinstance(delta, str) and delta:
                self.text.append(delta)
                ttft.mark()
                if on_token is not None:
                    on_token(delta)
        elif kind == "response.function_call_arguments.delta":
            delta = data.get("delta")
            if isinstance(delta, str):
                self._call(data).parts.append(delta)
                ttft.mark()
        elif kind == "response.output_item.added":
            item = data.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call":
                call = self._call(data)
                call.call_id = str(item.get("call_id") or call.call_id)
                call.name = str(item.get("name") or call.name)
        elif kind == "response.output_item.done":
            item = data.get("item")
            if isinstance(item, dict):
                self.item_done(item, _index(data))
        elif kind in ("response.created", "response.in_progress"):
            self._identify(data.get("response"))

    def _call(self, data: dict[str, Any]) -> _Call:
        index = _index(data)
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = _Call()
        return call

    def item_done(self, item: dict[str, Any], index: int | None = None) -> None:
        """Settle one finished output item (from ``output_item.done`` or a body)."""
        kind = item.get("type")
        if kind == "function_call":
            call = self.calls.get(index) if index is not None else None
            if call is None:
                call = self.calls[index if index is not None else len(self.calls)] = _Call()
            call.call_id = str(item.get("call_id") or call.call_id)
            call.name = str(item.get("name") or call.name)
            arguments = item.get("arguments")
            if isinstance(arguments, str):
                call.arguments = arguments
        elif kind == "reasoning":
            carried: dict[str, Any] = {
                k: item[k] for k in ("type", "id", "encrypted_content") if k in item
            }
            carried["summary"] = item.get("summary") or []
            self.reasoning.append(WIRE_JSON.encode(carried))
        elif kind == "message":
            self._message(item)
        elif kind == "web_search_call":
            action = item.get("action")
            self.server_tools.append(
                ServerToolCall("web_search", action if isinstance(action, dict) else {})
            )

    def _message(self, item: dict[str, Any]) -> None:
        for part in item.get("content") or ():
            if not isinstance(part, dict):
                continue
            if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                self.item_text.append(part["text"])
                self.citations.extend(_citations(part.get("annotations")))
            elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                self.item_text.append(part["refusal"])

    def _identify(self, response: object) -> None:
        if isinstance(response, dict):
            self.model = str(response.get("model") or self.model)
            self.response_id = str(response.get("id") or self.response_id)

    def finish(self, response: object) -> None:
        """Take usage, model, id and status from the final response object."""
        self._identify(response)
        if not isinstance(response, dict):
            return
        self.status = str(response.get("status") or "completed")
        details = response.get("incomplete_details")
        if self.status == "incomplete" and isinstance(details, dict) and details.get("reason"):
            self.status = str(details["reason"])
        self.usage = wire_usage(response.get("usage"), len(self.server_tools))

    def response(self, ttft: float | None) -> CompletionResponse:
        """The answer read so far as a `CompletionResponse`."""
        calls: list[ToolCall] = []
        for index in sorted(self.calls):
            partial = self.calls[index]
            text = partial.arguments if partial.arguments is not None else "".join(partial.parts)
            arguments, raw = tool_arguments(text)
            call_id = partial.call_id or "call_" + uuid.uuid4().hex[:24]
            calls.append(ToolCall(call_id, partial.name, arguments, raw))
        text = "".join(self.text) if self.text else "".join(self.item_text)
        return CompletionResponse(
            text=text,
            tool_calls=tuple(calls),
            usage=self.usage,
            model=self.model,
            stop_reason=_stop_reason(self.status, bool(calls)),
            ttft_ms=ttft,
            citations=tuple(self.citations),
            server_tool_calls=tuple(self.server_tools),
        )


def _stop_reason(status: str | None, has_calls: bool) -> str:
    # The Responses API has no finish reason: a completed answer that calls tools is
    # recorded as ``tool_calls`` (as Chat Completions says), one cut short by its reason.
    if status in (None, "completed"):
        return "tool_calls" if has_calls else "completed"
    return status


def _index(data: dict[str, Any]) -> int:
    index = data.get("output_index")
    return index if isinstance(index, int) else 0


def wire_usage(raw: object, searches: int = 0) -> Usage:
    """Responses usage: input and output counts with their cached and reasoning parts."""
    if not isinstance(raw, dict):
        return Usage(server_tool_requests=searches or None)
    input_details = raw.get("input_tokens_details")
    output_details = raw.get("output_tokens_details")
    return Usage(
        prompt_tokens=opt_int(raw.get("input_tokens")),
        completion_tokens=opt_int(raw.get("output_tokens")),
        total_tokens=opt_int(raw.get("total_tokens")),
        cache_read_tokens=opt_int(input_details.get("cached_tokens"))
        if isinstance(input_details, dict)
        else None,
        reasoning_tokens=opt_int(output_details.get("reasoning_tokens"))
        if isinstance(output_details, dict)
        else None,
        server_tool_requests=searches or None,
    )


def _citations(raw: object) -> list[Citation]:
    found: list[Citation] = []
    if not isinstance(raw, list):
        return found
    for note in raw:
        if isinstance(note, dict) and note.get("type") == "url_citation":
            url, title = note.get("url"), note.get("title")
            if isinstance(url, str):
                found.append(Citation(url=url, title=title if isinstance(title, str) else None))
    return found

