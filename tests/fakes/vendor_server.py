"""Loopback fakes of the Anthropic, OpenAI (Chat Completions and Responses) and
OpenRouter HTTP APIs, SSE included (the Responses wire lives in `responses_wire`).

`start_vendor_server(vendor)` starts a real HTTP server on 127.0.0.1 in a thread and
returns a `FakeVendorServer`: its `base_url` (what a provider's `base_url` should be),
a queue of scripted replies (`push`), an optional `responder` for endless scripts (the
benchmarks), every request it received (`requests`), and every broken invariant it saw
(`violations`: a test asserts it is empty).

Replies are written vendor-neutrally (`Turn`: text, tool calls, usage, served model …)
and rendered in the vendor's own wire format, as JSON or as an event stream depending
on what the request asked for. Failure shapes: `Fail` (any status and body, with
headers such as ``retry-after``), `Cut` (a stream that stops mid-event), `StreamFail`
(an error event inside a stream), `Hang` (no answer until released: read timeouts) and
`EchoKey401` (a 401 that echoes the key it was sent, the way vendors do).

Invariants checked on every request: the auth header, the body's shape, and that every
tool result answers a tool call made in the assistant turn just before it (and every
such call is answered). A violation is recorded and answered with a 400.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.fakes.responses_wire import ResponsesLedger, render_responses

Vendor = Literal["anthropic", "openai", "openrouter", "openai-responses"]
VENDORS: tuple[Vendor, ...] = ("anthropic", "openai", "openrouter", "openai-responses")

PATHS: dict[str, str] = {
    "anthropic": "/v1/messages",
    "openai": "/v1/chat/completions",
    "openrouter": "/api/v1/chat/completions",
    "openai-responses": "/v1/responses",
}
BASE_PATHS: dict[str, str] = {
    "anthropic": "",
    "openai": "/v1",
    "openrouter": "/api/v1",
    "openai-responses": "/v1",
}
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


# --- scripted replies ----------------------------------------------------------------


@dataclass(frozen=True)
class FakeCall:
    """A tool call the fake model makes; `arguments` is raw text, so it may be malformed."""

    id: str
    name: str
    arguments: str = "{}"


@dataclass(frozen=True)
class Turn:
    """One successful completion, vendor-neutral.

    Attributes:
        text: The assistant text.
        tool_calls: Tool calls to make.
        model: The model that "served" (default: the one requested).
        usage: Usage in the vendor's own shape (default: a small fixed count).
        pieces: Split text and each call's arguments into this many stream deltas.
        citations: ``{"url", "title", "cited_text"}`` dicts attached to the text.
        server_tools: ``(name, input)`` provider-executed tool calls (Anthropic blocks).
        extra_events: Raw SSE text inserted right after the first event (unknown event
            types, pings, comments).
        coalesce: Write the whole stream in one chunk (benchmarks), not one per event.
        stop_reason: Override the vendor stop/finish reason.
        reasoning: A reasoning summary (Responses API: becomes a reasoning item with
            ``encrypted_content``).
        message_id: The Anthropic message's id (default ``msg_fake``). Claude Code
            merges consecutive replies that share an id into one assistant turn, so a
            script that drives it gives each reply its own.
    """

    text: str = ""
    tool_calls: tuple[FakeCall, ...] = ()
    model: str | None = None
    usage: dict[str, Any] | None = None
    pieces: int = 1
    citations: tuple[dict[str, str], ...] = ()
    server_tools: tuple[tuple[str, dict[str, Any]], ...] = ()
    extra_events: tuple[str, ...] = ()
    coalesce: bool = False
    stop_reason: str | None = None
    reasoning: str | None = None
    message_id: str | None = None


@dataclass(frozen=True)
class Fail:
    """An HTTP error reply: status, JSON (dict) or text body, extra headers."""

    status: int
    body: dict[str, Any] | str = ""
    headers: dict[str, str] = field(default_factory=lambda: {})


@dataclass(frozen=True)
class Cut:
    """A stream of `turn` that stops in the middle of event number `after_events`.

    ``mode="chunked"`` drops the connection inside a chunked body (the client sees a
    protocol error); ``mode="eof"`` closes a connection-delimited body cleanly, so only
    the missing end-of-stream event shows that the answer is incomplete.
    """

    turn: Turn
    after_events: int = 3
    mode: Literal["chunked", "eof"] = "chunked"


@dataclass(frozen=True)
class StreamFail:
    """A stream of `turn` that sends the vendor's error event after `after_events`."""

    turn: Turn
    error: dict[str, Any]
    after_events: int = 2


@dataclass(frozen=True)
class Hang:
    """No answer until `release` is set (or the server closes), then a 500."""

    release: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class EchoKey401:
    """A 401 whose body echoes the received key's first 16 characters and its base64."""


Reply = Turn | Fail | Cut | StreamFail | Hang | EchoKey401


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    """Anthropic's error body (``overloaded_error``, ``rate_limit_error`` …)."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_error(message: str, kind: str = "server_error", code: Any = None) -> dict[str, Any]:
    """The Chat Completions error body."""
    return {"error": {"message": message, "type": kind, "code": code}}


@dataclass
class RecordedRequest:
    """One request the fake received; `received_at` is `time.perf_counter()` once its
    body was read (the benchmarks measure the client's gap between requests with it)."""

    path: str
    headers: dict[str, str]
    body: Any
    received_at: float = field(default_factory=time.perf_counter)
    raw: bytes = b""
    """The body as sent (the prefix-stability tests compare requests byte by byte)."""

    @property
    def wants_stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


# --- rendering -----------------------------------------------------------------------


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    n = max(1, min(pieces, len(text)))
    step = -(-len(text) // n)
    return [text[i : i + step] for i in range(0, len(text), step)]


def _sse(event: str | None, data: Any) -> str:
    payload = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"


def _anthropic_usage(turn: Turn) -> dict[str, Any]:
    return dict(turn.usage) if turn.usage is not None else {"input_tokens": 10, "output_tokens": 5}


def _anthropic_stop(turn: Turn) -> str:
    return turn.stop_reason or ("tool_use" if turn.tool_calls else "end_turn")


def _anthropic_blocks(turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for i, (name, tool_input) in enumerate(turn.server_tools):
        blocks.append(
            {"type": "server_tool_use", "id": f"srvtoolu_{i}", "name": name, "input": tool_input}
        )
        blocks.append(
            {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{i}", "content": []}
        )
    if turn.text or turn.citations:
        block: dict[str, Any] = {"type": "text", "text": turn.text}
        if turn.citations:
            block["citations"] = [
                {"type": "web_search_result_location", "encrypted_index": "x", **c}
                for c in turn.citations
            ]
        blocks.append(block)
    for call in turn.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": json.loads(call.arguments),
            }
        )
    return blocks


def render_anthropic(turn: Turn, model: str, stream: bool) -> dict[str, Any] | list[str]:
    usage = _anthropic_usage(turn)
    served = turn.model or model
    if not stream:
        return {
            "id": turn.message_id or "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": served,
            "content": _anthropic_blocks(turn),
            "stop_reason": _anthropic_stop(turn),
            "stop_sequence": None,
            "usage": usage,
        }
    start_usage = {k: v for k, v in usage.items() if k not in ("output_tokens", "server_tool_use")}
    if usage:  # `usage={}`: a proxy that strips every count
        start_usage["output_tokens"] = 1
    events = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": turn.message_id or "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": served,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        ),
        *turn.extra_events,
        _sse("ping", {"type": "ping"}),
    ]
    index = 0
    for i, (name, tool_input) in enumerate(turn.server_tools):
        events.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "server_tool_use",
                        "id": f"srvtoolu_{i}",
                        "name": name,
                        "input": {},
                    },
                },
            )
        )
        events.append(
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(tool_input)},
                },
            )
        )
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
        events.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "web_search_tool_result",
                        "tool_use_id": f"srvtoolu_{i}",
                        "content": [],
                    },
                },
            )
        )
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    if turn.text or turn.citations:
        events.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        for c in turn.citations:
            events.append(
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {
                            "type": "citations_delta",
                            "citation": {
                                "type": "web_search_result_location",
                                "encrypted_index": "x",
                                **c,
                            },
                        },
                    },
                )
            )
        for piece in _split(turn.text, turn.pieces):
            events.append(
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
            )
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for call in turn.tool_calls:
        events.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": {},
                    },
                },
            )
        )
        for piece in _split(call.arguments, turn.pieces):
            events.append(
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
            )
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    delta_usage = {"output_tokens": usage.get("output_tokens", 0)} if usage else {}
    if "server_tool_use" in usage:
        delta_usage["server_tool_use"] = usage["server_tool_use"]
    events.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": _anthropic_stop(turn), "stop_sequence": None},
                "usage": delta_usage,
            },
        )
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def _openai_usage(turn: Turn) -> dict[str, Any]:
    if turn.usage is not None:
        return dict(turn.usage)
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _annotations(turn: Turn) -> list[dict[str, Any]]:
    return [
        {
            "type": "url_citation",
            "url_citation": {
                "url": c["url"],
                "title": c.get("title", ""),
                "start_index": 0,
                "end_index": len(turn.text),
            },
        }
        for c in turn.citations
    ]


def render_openai(
    turn: Turn, model: str, stream: bool, vendor: str, include_usage: bool
) -> dict[str, Any] | list[str]:
    served = turn.model or model
    finish = turn.stop_reason or ("tool_calls" if turn.tool_calls else "stop")
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in turn.tool_calls
            ]
        if turn.citations:
            message["annotations"] = _annotations(turn)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": served,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _openai_usage(turn),
        }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        return _sse(
            None,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": served,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            },
        )

    events: list[str] = []
    if vendor == "openrouter":
        events.append(": OPENROUTER PROCESSING\n\n")
    events.append(chunk({"role": "assistant", "content": ""}))
    events.extend(turn.extra_events)
    for piece in _split(turn.text, turn.pieces):
        events.append(chunk({"content": piece}))
    for k, call in enumerate(turn.tool_calls):
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": k,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in _split(call.arguments, turn.pieces):
            events.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]}))
    if turn.citations:
        events.append(chunk({"annotations": _annotations(turn)}))
    events.append(chunk({}, finish))
    if include_usage:
        events.append(
            _sse(
                None,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": served,
                    "choices": [],
                    "usage": _openai_usage(turn),
                },
            )
        )
    events.append(_sse(None, "[DONE]"))
    return events


def tool_results_in(request: RecordedRequest) -> int:
    """How many tool results the request carries (the step a stateless script is at)."""
    body = request.body if isinstance(request.body, dict) else {}
    count = 0
    for message in body.get("messages") or body.get("input") or ():
        if message.get("role") == "tool" or message.get("type") == "function_call_output":
            count += 1
        elif isinstance(message.get("content"), list):
            count += sum(1 for b in message["content"] if b.get("type") == "tool_result")
    return count


def tool_loop_responder(
    steps: int,
    *,
    tool: str = "exec",
    arguments: str = '{"cmd": "echo hi"}',
    final_text: str = "done",
    usage: dict[str, Any] | None = None,
) -> Callable[[RecordedRequest], Reply]:
    """A responder that calls `tool` once per step for `steps` steps, then answers text.

    It is stateless (the step is read from the tool results in the request), so a
    resumed run, a retry or a second run each get the reply their conversation is at.
    Each reply reports `usage` (vendor-shaped; default: the fixed counts of `Turn`).
    """

    def respond(request: RecordedRequest) -> Reply:
        step = tool_results_in(request)
        if step < steps:
            call = FakeCall(f"call_{step}", tool, arguments)
            return Turn(text=f"step {step}", tool_calls=(call,), usage=usage)
        return Turn(text=final_text, usage=usage)

    return respond


# --- invariants ----------------------------------------------------------------------


def check_anthropic(headers: dict[str, str], body: Any) -> list[str]:
    problems: list[str] = []
    if not headers.get("x-api-key"):
        problems.append("missing x-api-key header")
    if not headers.get("anthropic-version"):
        problems.append("missing anthropic-version header")
    if not isinstance(body, dict):
        return problems + ["body is not a JSON object"]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model missing")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        problems.append("max_tokens missing or not positive")
    for tool in body.get("tools") or ():
        if "type" in tool and tool["type"].startswith("web_"):
            if tool["type"].startswith("web_fetch") and "web-fetch" not in headers.get(
                "anthropic-beta", ""
            ):
                problems.append("web_fetch tool without its anthropic-beta header")
            continue
        if not _TOOL_NAME.match(str(tool.get("name", ""))):
            problems.append(f"bad tool name {tool.get('name')!r}")
        if not isinstance(tool.get("input_schema"), dict):
            problems.append(f"tool {tool.get('name')!r} has no input_schema")
    problems.extend(check_anthropic_cache(body))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return problems + ["messages missing or empty"]
    if messages[0].get("role") != "user":
        problems.append("first message is not a user turn")
    pending: set[str] = set()
    previous_role = ""
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"message {i} has role {role!r}")
        if role == previous_role:
            problems.append(f"message {i} repeats role {role!r}")
        previous_role = role
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if not blocks:
            problems.append(f"message {i} has empty content")
        answered: set[str] = set()
        called: set[str] = set()
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and not block.get("text"):
                problems.append(f"message {i} has an empty text block")
            elif kind == "tool_use":
                called.add(str(block.get("id")))
            elif kind == "tool_result":
                answer = str(block.get("tool_use_id"))
                if answer not in pending:
                    problems.append(f"tool_result {answer!r} answers no call in the previous turn")
                answered.add(answer)
        if role == "user" and pending - answered:
            problems.append(f"tool calls {sorted(pending - answered)} were never answered")
        pending = called if role == "assistant" else set()
    return problems


_CACHE_TTLS = ("5m", "1h")
_MARKABLE = frozenset({"text", "image", "document", "tool_use", "tool_result"})
MAX_CACHE_MARKS = 4
"""Anthropic: at most 4 ``cache_control`` breakpoints in one request."""


def _bad_mark(mark: Any) -> str | None:
    if not isinstance(mark, dict) or mark.get("type") != "ephemeral":
        return f"cache_control {mark!r} is not {{'type': 'ephemeral'}}"
    if set(mark) - {"type", "ttl"} or mark.get("ttl", "5m") not in _CACHE_TTLS:
        return f"cache_control {mark!r} has an unknown field or ttl"
    return None


def cache_marks(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """Where an Anthropic request carries ``cache_control``: (place, mark) pairs."""
    found: list[tuple[str, Any]] = []
    for n, tool in enumerate(body.get("tools") or ()):
        if "cache_control" in tool:
            found.append((f"tools[{n}]", tool["cache_control"]))
    system = body.get("system")
    for n, block in enumerate(system if isinstance(system, list) else ()):
        if "cache_control" in block:
            found.append((f"system[{n}]", block["cache_control"]))
    for i, message in enumerate(body.get("messages") or ()):
        content = message.get("content")
        for n, block in enumerate(content if isinstance(content, list) else ()):
            if "cache_control" in block:
                found.append((f"messages[{i}].content[{n}]", block["cache_control"]))
    return found


def check_anthropic_cache(body: dict[str, Any]) -> list[str]:
    """Anthropic's documented prompt-caching rules: a string or a list of text blocks as
    `system`, at most 4 breakpoints, each ``{"type": "ephemeral"}`` (an optional `ttl`),
    on a tool or a content block of a kind that can be cached, never an empty text."""
    problems: list[str] = []
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        if not isinstance(system, list) or not all(
            isinstance(b, dict) and b.get("type") == "text" and b.get("text") for b in system
        ):
            problems.append("system is neither a string nor a list of non-empty text blocks")
    marks = cache_marks(body)
    if len(marks) > MAX_CACHE_MARKS:
        problems.append(f"{len(marks)} cache_control breakpoints (at most {MAX_CACHE_MARKS})")
    problems.extend(p for p in (_bad_mark(m) for _, m in marks) if p is not None)
    for message in body.get("messages") or ():
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if "cache_control" in block and block.get("type") not in _MARKABLE:
                problems.append(f"cache_control on a {block.get('type')!r} block")
    return problems


def check_openrouter_cache(body: dict[str, Any]) -> list[str]:
    """OpenRouter's rules for Anthropic's breakpoints: on text parts only, at most 4,
    and only when the model is Anthropic's (other vendors would ignore or refuse them)."""
    problems: list[str] = []
    count = 0
    for i, message in enumerate(body.get("messages") or ()):
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            if "cache_control" not in part:
                continue
            count += 1
            if part.get("type") != "text" or not part.get("text"):
                problems.append(f"cache_control on a part that is not text (message {i})")
            bad = _bad_mark(part["cache_control"])
            if bad is not None:
                problems.append(bad)
    if count > MAX_CACHE_MARKS:
        problems.append(f"{count} cache_control breakpoints (at most {MAX_CACHE_MARKS})")
    if count and not str(body.get("model", "")).startswith("anthropic/"):
        problems.append("cache_control breakpoints sent for a model that is not Anthropic's")
    return problems


def check_openai(headers: dict[str, str], body: Any, vendor: str) -> list[str]:
    problems: list[str] = []
    auth = headers.get("authorization", "")
    if not auth.startswith("Bearer ") or len(auth) <= len("Bearer "):
        problems.append("missing Bearer authorization header")
    if not isinstance(body, dict):
        return problems + ["body is not a JSON object"]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model missing")
    if "stream_options" in body and not body.get("stream"):
        problems.append("stream_options sent without stream")
    if vendor == "openai" and "plugins" in body:
        problems.append("plugins is an OpenRouter field")
    if "prompt_cache_key" in body and (
        not isinstance(body["prompt_cache_key"], str) or not body["prompt_cache_key"]):
        problems.append("prompt_cache_key is not a non-empty string")
    if vendor == "openrouter":
        problems.extend(check_openrouter_cache(body))
    for tool in body.get("tools") or ():
        function = tool.get("function") or {}
        if tool.get("type") != "function" or not _TOOL_NAME.match(str(function.get("name", ""))):
            problems.append(f"bad tool {tool!r}")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return problems + ["messages missing or empty"]
    pending: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            problems.append(f"message {i} has role {role!r}")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                problems.append(f"tool message {call_id!r} answers no open call")
            pending.discard(call_id)
            continue
        if pending:
            problems.append(f"tool calls {sorted(pending)} were never answered")
        pending = set()
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                if not call.get("id") or call.get("type") != "function":
                    problems.append(f"bad tool call {call!r}")
                if not isinstance((call.get("function") or {}).get("arguments"), str):
                    problems.append("tool call arguments must be a string")
                pending.add(call.get("id"))
            if not isinstance(message.get("content"), str | list):
                # OpenAI allows null (or no content) beside tool calls; llama-cpp-python's
                # server refuses both, so the form every server takes is a string.
                problems.append(f"assistant message {i} has no string content")
    return problems


# --- the server ----------------------------------------------------------------------


class FakeVendorServer:
    """A running fake; use `start_vendor_server` to make one, `close` (or `with`) to stop."""

    def __init__(
        self, vendor: Vendor, *, api_key: str | None = None, tls: ssl.SSLContext | None = None
    ) -> None:
        self.vendor = vendor
        self.scheme = "https" if tls is not None else "http"
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.answered_at: list[float] = []
        """`time.perf_counter()` after the last byte of each scripted reply was written."""
        self.connections: set[tuple[str, int]] = set()
        """Client (host, port) pairs seen: one per TCP connection the client opened."""
        self.violations: list[str] = []
        self.ledger = ResponsesLedger()
        """The Responses API fake's memory: stored responses, issued reasoning."""
        self.check_anthropic: Callable[[dict[str, str], Any], list[str]] = check_anthropic
        """The Anthropic request checks; a bench may widen them for a client that sends
        shapes of a newer API beta (bench/tokens_peers.py does, for Claude Code)."""
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._hangs: list[threading.Event] = []
        self._closed = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        if tls is not None:
            # The handshake happens on accept; one that fails (an untrusted certificate,
            # as the client sees it) is dropped by socketserver as an OSError.
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """What the provider's `base_url` should be for this vendor."""
        return f"{self.scheme}://127.0.0.1:{self.port}{BASE_PATHS[self.vendor]}"

    def push(self, *replies: Reply) -> None:
        """Queue replies, answered in order, one per request."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Replies queued and not yet sent."""
        with self._lock:
            return len(self._queue)

    def next_reply(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
        return self.responder(request) if self.responder is not None else None

    def close(self) -> None:
        self._closed.set()
        for hang in self._hangs:
            hang.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeVendorServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_vendor_server(
    vendor: Vendor,
    *,
    api_key: str | None = None,
    responder: Callable[[RecordedRequest], Reply] | None = None,
    tls: ssl.SSLContext | None = None,
) -> FakeVendorServer:
    """Start a fake of `vendor` on a free loopback port.

    Args:
        vendor: A key of `PATHS`.
        api_key: When set, a request with another key gets a plain 401.
        responder: Answers requests once the queue is empty (else a 500 and a violation).
        tls: A server TLS context: the fake speaks HTTPS with it (`base_url` says so).
    """
    server = FakeVendorServer(vendor, api_key=api_key, tls=tls)
    server.responder = responder
    return server


def _handler_for(fake: FakeVendorServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        pass

    Handler.fake = fake
    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10
    # As real API servers do: without it a stream's last small write waits on the
    # client's delayed ACK (40 ms on Linux), which the benchmarks would measure.
    disable_nagle_algorithm = True
    fake: FakeVendorServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:
            pass  # the client went away (a timeout test, a cut stream)

    def do_POST(self) -> None:
        fake = self.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        # Stamped before the body is parsed: a long conversation's JSON takes the fake
        # milliseconds to decode, which is the fake's time, not the client's.
        arrived = time.perf_counter()
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        request = RecordedRequest(self.path, headers, body, arrived, raw)
        fake.connections.add((str(self.client_address[0]), int(self.client_address[1])))
        if self.path != PATHS[fake.vendor]:
            fake.requests.append(request)
            fake.violations.append(f"request to unknown path {self.path}")
            return self._json(404, self._error_body("not found"))
        if fake.vendor == "anthropic":
            problems = fake.check_anthropic(headers, body)
        elif fake.vendor == "openai-responses":
            problems = fake.ledger.check(headers, body)
        else:
            problems = check_openai(headers, body, fake.vendor)
        if problems:
            fake.requests.append(request)
            fake.violations.extend(problems)
            return self._json(400, self._error_body("fake: " + "; ".join(problems)))
        sent_key = self._sent_key(headers)
        if fake.api_key is not None and sent_key != fake.api_key:
            fake.requests.append(request)
            return self._json(401, self._error_body("invalid api key"))
        reply = fake.next_reply(request)
        if reply is None:
            fake.violations.append("request with no scripted reply")
            return self._json(500, self._error_body("fake: no scripted reply"))
        self._answer(reply, request, sent_key)
        fake.answered_at.append(time.perf_counter())

    def _sent_key(self, headers: dict[str, str]) -> str:
        if self.fake.vendor == "anthropic":
            return headers.get("x-api-key", "")
        return headers.get("authorization", "").removeprefix("Bearer ")

    def _error_body(self, message: str) -> dict[str, Any]:
        if self.fake.vendor == "anthropic":
            return anthropic_error("invalid_request_error", message)
        return openai_error(message, "invalid_request_error")

    def _answer(self, reply: Reply, request: RecordedRequest, sent_key: str) -> None:
        if isinstance(reply, Fail):
            body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            return self._send(reply.status, body.encode(), "application/json", reply.headers)
        if isinstance(reply, EchoKey401):
            encoded = base64.b64encode(sent_key.encode()).decode()
            message = f"Incorrect API key provided: {sent_key[:16]}****. (token {encoded})"
            if self.fake.vendor == "anthropic":
                return self._json(401, anthropic_error("authentication_error", message))
            return self._json(
                401, openai_error(message, "invalid_request_error", "invalid_api_key")
            )
        if isinstance(reply, Hang):
            self.fake._hangs.append(reply.release)
            reply.release.wait(timeout=30)
            return self._json(500, self._error_body("fake: released"))
        turn = reply.turn if isinstance(reply, Cut | StreamFail) else reply
        rendered = self._render(turn, request)
        if isinstance(rendered, dict):
            return self._json(200, rendered)
        if isinstance(reply, Cut):
            return self._cut(rendered, reply)
        if isinstance(reply, StreamFail):
            error_event = (
                _sse(None, reply.error)
                if self.fake.vendor in ("openai", "openrouter")
                else _sse("error", reply.error)
            )
            rendered = rendered[: reply.after_events] + [error_event]
        self._stream(rendered, coalesce=turn.coalesce)

    def _render(self, turn: Turn, request: RecordedRequest) -> dict[str, Any] | list[str]:
        body = request.body
        model = str(body.get("model"))
        if self.fake.vendor == "anthropic":
            return render_anthropic(turn, model, request.wants_stream)
        if self.fake.vendor == "openai-responses":
            response_id = self.fake.ledger.next_id()
            rendered = render_responses(turn, model, request.wants_stream, response_id)
            self.fake.ledger.remember(response_id, body, rendered, turn)
            return rendered
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return render_openai(turn, model, request.wants_stream, self.fake.vendor, include_usage)

    def _json(self, status: int, body: dict[str, Any]) -> None:
        self._send(status, json.dumps(body).encode(), "application/json", {})

    def _send(
        self, status: int, payload: bytes, content_type: str, headers: dict[str, str]
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, events: list[str], *, coalesce: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        blocks = ["".join(events)] if coalesce else events
        for block in blocks:
            data = block.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")

    def _cut(self, events: list[str], cut: Cut) -> None:
        kept = events[: cut.after_events]
        partial = (
            events[cut.after_events][: max(1, len(events[cut.after_events]) // 2)]
            if cut.after_events < len(events)
            else ""
        )
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        if cut.mode == "chunked":
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("connection", "close")
        self.end_headers()
        for block in [*kept, partial]:
            data = block.encode()
            if not data:
                continue
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if cut.mode == "chunked" else data)
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
