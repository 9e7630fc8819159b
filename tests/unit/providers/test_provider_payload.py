"""The encoded request body: built from per-message fragments, equal to the plain encoding."""

from __future__ import annotations

import json
from typing import Any

from harness_core.messages import Media, Message, ToolCall, ToolResult
from harness_core.providers import CompletionRequest
from harness_core.providers import anthropic as anthropic_wire
from harness_core.providers import openai as openai_wire
from harness_core.providers import responses as responses_wire
from tests.unit.providers.conftest import TOOLS, MakeProvider

MARK = {"type": "ephemeral"}


def _conversation(steps: int) -> list[Message]:
    messages = [Message.system("Be brief."), Message.system("Really."), Message.user("go ✓")]
    for i in range(steps):
        calls = (ToolCall(f"c{i}", "exec", {"cmd": f"echo {i}"}),
                 ToolCall(f"d{i}", "exec", {}, raw_arguments="{not json"))
        messages.append(Message.assistant(f"step {i}" if i % 2 else "", calls))
        media = (Media("image/png", b"\x89PNG" + bytes([i]), f"shot{i}.png"),) if i % 2 else ()
        messages.append(Message.tool(ToolResult(f"c{i}", "exec", f"out {i}", media=media)))
        messages.append(Message.tool(ToolResult(f"d{i}", "exec", "bad", is_error=True)))
        if i == 1:
            messages.append(Message.user("[operator steer] faster"))
        if i == 2:
            messages.append(Message.system("a system note in the middle"))
    return messages


def _plain(vendor: str, provider: Any, request: CompletionRequest) -> dict[str, Any]:
    body = dict(provider._body(request, stream=True))
    if vendor == "anthropic":
        system, body["messages"] = anthropic_wire.wire_messages(request.messages)
        body.pop("system", None)
        if system:
            body["system"] = [{"type": "text", "text": system, "cache_control": MARK}]
    elif vendor == "openai-responses":
        body["input"] = [i for m in request.messages for i in responses_wire.wire_items(m)]
    else:
        body["messages"] = openai_wire.wire_messages(request.messages)
    return body


def _sent(provider: Any, request: CompletionRequest) -> dict[str, Any]:
    """The payload as parsed, the conversation's moving cache breakpoints left out (they
    depend on the previous request: tests/unit/providers/test_prompt_cache.py)."""
    body: dict[str, Any] = json.loads(provider.payload(request, stream=True))
    for turn in body.get("messages") or ():
        for block in turn["content"] if isinstance(turn.get("content"), list) else ():
            block.pop("cache_control", None)
    return body


def test_the_payload_equals_the_plain_encoding_at_every_step(
    vendor: str, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, None)
    messages = _conversation(5)
    for end in range(3, len(messages) + 1):
        request = CompletionRequest(model="m", messages=tuple(messages[:end]), tools=TOOLS)
        assert _sent(provider, request) == _plain(vendor, provider, request)


def test_earlier_messages_are_encoded_once_and_forgotten_when_gone(
    vendor: str, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, None)
    messages = _conversation(30)
    request = CompletionRequest(model="m", messages=tuple(messages), tools=TOOLS)
    provider.payload(request, stream=False)
    cached = dict(provider._fragments)
    provider.payload(request, stream=False)
    assert provider._fragments == cached  # nothing re-encoded, nothing added
    short = CompletionRequest(model="m", messages=tuple(messages[:3]))
    for _ in range(2):
        provider.payload(short, stream=False)
    assert len(provider._fragments) <= 2 * 3 + 16


def test_a_history_that_changed_in_the_middle_is_encoded_afresh(
    vendor: str, make_provider: MakeProvider
) -> None:
    """An elided observation replaces a message in the middle: the text kept from the
    previous request must not be reused."""
    provider = make_provider(vendor, None)
    messages = _conversation(4)
    first = CompletionRequest(model="m", messages=tuple(messages), tools=TOOLS)
    provider.payload(first, stream=True)
    elided = list(messages)
    elided[4] = Message.tool(ToolResult("c0", "exec", "[elided]"))
    elided.append(Message.user("go on"))
    second = CompletionRequest(model="m", messages=tuple(elided), tools=TOOLS)
    assert _sent(provider, second) == _plain(vendor, provider, second)
    assert _sent(provider, first) == _plain(vendor, provider, first)


def test_the_tools_are_encoded_again_when_the_offered_tools_or_web_change(
    vendor: str, make_provider: MakeProvider
) -> None:
    """The encoded tools are kept between requests: a request that offers other tools
    (or other web access) must not be sent the previous request's."""
    from dataclasses import replace

    from harness_core import ToolSpec, WebAccess

    provider = make_provider(vendor, None)
    messages = tuple(_conversation(2))
    other = (*TOOLS, ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}}))
    renamed = (replace(TOOLS[0], description="Run one command."),)
    web = WebAccess(search=True) if vendor != "anthropic" else WebAccess(fetch=True)
    for tools, access in ((TOOLS, None), (other, None), (TOOLS, None), (renamed, None),
                          (TOOLS, web), (TOOLS, None), ((), None)):
        request = CompletionRequest(model="m", messages=messages, tools=tools, web=access)
        if access is not None and vendor == "openrouter":
            continue  # OpenRouter declares no web tools
        assert _sent(provider, request) == _plain(vendor, provider, request)
