"""Prompt caching on the wire: Anthropic's breakpoints (also through OpenRouter when it
routes to Anthropic), OpenAI's `prompt_cache_key`, each checked by the loopback fake
against the vendor's documented request format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness_core.messages import Message, ToolCall, ToolResult
from harness_core.providers import CompletionRequest
from tests.fakes.vendor_server import (
    FakeVendorServer,
    Turn,
    cache_marks,
    check_anthropic_cache,
    start_vendor_server,
)
from tests.unit.providers.conftest import CONVERSATION, TOOLS, MakeProvider, request

MARK = {"type": "ephemeral"}


def _steps(n: int) -> list[tuple[Message, ...]]:
    """The conversations of `n` consecutive steps of a tool loop."""
    messages = list(CONVERSATION)
    out = [tuple(messages)]
    for i in range(2, n + 1):
        call = ToolCall(f"call_{i}", "exec", {"cmd": f"echo {i}"})
        messages += [Message.assistant("", (call,)),
                     Message.tool(ToolResult(f"call_{i}", "exec", f"{i}"))]
        out.append(tuple(messages))
    return out


def _run(provider: Any, server: FakeVendorServer, steps: int, **changes: Any) -> list[Any]:
    for conversation in _steps(steps):
        server.push(Turn(text="ok"))
        provider.complete(request(messages=conversation, **changes), step=0)
    assert server.violations == []
    return [r.body for r in server.requests]


def _end(body: dict[str, Any], turn: int) -> str:
    return f"messages[{turn}].content[{len(body['messages'][turn]['content']) - 1}]"


def test_anthropic_marks_the_tools_the_system_prompt_and_the_end_of_each_request(
    make_provider: MakeProvider,
) -> None:
    with start_vendor_server("anthropic") as server:
        bodies = _run(make_provider("anthropic", server), server, 4)
    for n, body in enumerate(bodies):
        places = [place for place, _ in cache_marks(body)]
        head = [f"tools[{len(body['tools']) - 1}]", "system[0]"]
        last = len(body["messages"]) - 1
        # After the first: also where the previous request ended (its last user turn,
        # two turns back), so the cache it wrote is read however many blocks were added.
        ends = [_end(body, last)] if n == 0 else [_end(body, last - 2), _end(body, last)]
        assert places == head + ends
        assert all(mark == MARK for _, mark in cache_marks(body))


def _unmarked_bytes(raw: bytes) -> bytes:
    return raw.replace(b',"cache_control":{"type":"ephemeral"}', b"")


def test_the_moving_marks_leave_the_earlier_turns_byte_identical(
    make_provider: MakeProvider,
) -> None:
    """What the previous request wrote to the cache is the prefix of the next one: the
    marks move, and nothing before them changes."""
    with start_vendor_server("anthropic") as server:
        _run(make_provider("anthropic", server), server, 5)
        raw = [_unmarked_bytes(r.raw) for r in server.requests]
    for before, after in zip(raw, raw[1:], strict=False):
        conversation = before[: before.index(b'],"tools":')]
        assert after.startswith(conversation[:-3])  # less the last turn's `]}` and `]`


def test_a_step_of_many_parallel_calls_still_reads_the_previous_prefix(
    make_provider: MakeProvider,
) -> None:
    """More than 20 blocks in one step: the mark where the previous request ended is
    within reach of the vendor's 20-block lookback however many blocks follow it."""
    provider = make_provider("anthropic", None)
    first = CONVERSATION
    calls = tuple(ToolCall(f"p{i}", "exec", {"cmd": f"echo {i}"}) for i in range(15))
    second = (*first, Message.assistant("", calls),
              *(Message.tool(ToolResult(c.id, "exec", "x")) for c in calls))
    provider.payload(CompletionRequest(model="m", messages=first, tools=TOOLS), stream=False)
    body = json.loads(provider.payload(
        CompletionRequest(model="m", messages=second, tools=TOOLS), stream=False))
    first_end = len(json.loads(provider.payload(
        CompletionRequest(model="m", messages=first, tools=TOOLS), stream=False))["messages"])
    places = [place for place, _ in cache_marks(body)]
    assert _end(body, first_end - 1) in places and len(places) == 4


@pytest.mark.parametrize("bad", [
    {"system": "s", "tools": [{"name": f"t{i}", "input_schema": {},
                               "cache_control": MARK} for i in range(5)]},
    {"system": [{"type": "text", "text": "s", "cache_control": {"type": "persistent"}}]},
    {"system": [{"type": "text", "text": ""}]},
    {"messages": [{"role": "user", "content": [
        {"type": "thinking", "thinking": "x", "cache_control": MARK}]}]},
])
def test_the_fake_refuses_what_anthropic_documents_as_invalid(bad: dict[str, Any]) -> None:
    assert check_anthropic_cache(bad) != []


def test_openrouter_marks_text_parts_only_when_it_routes_to_anthropic(
    make_provider: MakeProvider,
) -> None:
    with start_vendor_server("openrouter") as server:
        provider = make_provider("openrouter", server, model="anthropic/claude-sonnet-4.5")
        bodies = _run(provider, server, 3, model="anthropic/claude-sonnet-4.5")
    for body in bodies:
        system, last = body["messages"][0], body["messages"][-1]
        assert system["content"] == [{"type": "text", "text": "Be brief.", "cache_control": MARK}]
        assert last["role"] == "tool" and last["content"][0]["cache_control"] == MARK
        marked = [m for m in body["messages"] if isinstance(m["content"], list)]
        assert len(marked) == 2  # the earlier turns keep their plain form
    with start_vendor_server("openrouter") as server:
        bodies = _run(make_provider("openrouter", server), server, 2, model="openai/gpt-5")
    assert all(isinstance(m["content"], str) for b in bodies for m in b["messages"])


@pytest.mark.parametrize("vendor", ["openai", "openai-responses", "openrouter"])
def test_openai_kinds_send_the_runs_cache_key_on_every_step(
    vendor: str, make_provider: MakeProvider
) -> None:
    with start_vendor_server(vendor) as server:  # type: ignore[arg-type]
        bodies = _run(make_provider(vendor, server), server, 3, cache_key="run-1")
    assert [b["prompt_cache_key"] for b in bodies] == ["run-1"] * 3
    with start_vendor_server(vendor) as server:  # type: ignore[arg-type]
        bodies = _run(make_provider(vendor, server), server, 1)
    assert "prompt_cache_key" not in bodies[0]


def test_an_assistant_turn_of_tool_calls_sends_empty_string_content(
    make_provider: MakeProvider,
) -> None:
    """Not null, not left out: llama-cpp-python's server refuses both."""
    provider = make_provider("openai", None)
    conversation = _steps(2)[-1]
    body = provider.payload(CompletionRequest(model="m", messages=conversation, tools=TOOLS),
                            stream=False)
    turns = [m for m in json.loads(body)["messages"] if m.get("tool_calls")]
    assert [t["content"] for t in turns] == ["Looking.", ""]
