"""`kind = "openai-responses"` against the loopback Responses fake: reasoning carried
between turns, previous_response_id chaining, usage, web search, stream failures and
answers of the wrong shape."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness_core.errors import ProviderError
from harness_core.messages import Message, ToolCall, ToolResult, Usage
from harness_core.providers import CompletionResponse, WebAccess
from harness_core.providers._http import HttpProvider
from tests.fakes.responses_wire import encrypted, responses_error
from tests.fakes.vendor_server import (
    VENDORS,
    Cut,
    Fail,
    FakeCall,
    FakeVendorServer,
    StreamFail,
    Turn,
    start_vendor_server,
)
from tests.unit.providers.conftest import MakeProvider, ManualClock, request

VENDOR = "openai-responses"
STREAMING = pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])


@pytest.fixture
def fake() -> FakeVendorServer:
    server = start_vendor_server(VENDOR)
    yield server  # type: ignore[misc]
    server.close()


def _next(messages: tuple[Message, ...], answer: CompletionResponse, outputs: list[str]) -> tuple[
    Message, ...
]:
    """The conversation after `answer`, as the loop builds it: the assistant turn, then
    one tool result per call."""
    turn = Message.assistant(answer.text, answer.tool_calls)
    results = tuple(
        Message.tool(ToolResult(call.id, call.name, out))
        for call, out in zip(answer.tool_calls, outputs, strict=True)
    )
    return (*messages, turn, *results)


def _call(n: int) -> FakeCall:
    return FakeCall(f"call_{n}", "exec", '{"cmd": "ls"}')


FIRST = (Message.system("Be brief."), Message.user("List the files."))


@STREAMING
def test_reasoning_items_are_carried_back_before_their_calls(
    fake: FakeVendorServer, make_provider: MakeProvider, stream: bool
) -> None:
    provider = make_provider(VENDOR, fake, stream=stream)
    fake.push(
        Turn(text="", tool_calls=(_call(1),), reasoning="look first"),
        Turn(text="two files", reasoning="answer now"),
    )
    first = provider.complete(replace(request(), messages=FIRST), step=0)
    assert [c.id for c in first.tool_calls] == ["call_1"]
    assert first.stop_reason == "tool_calls"
    messages = _next(FIRST, first, ["a.txt\nb.txt"])
    second = provider.complete(replace(request(), messages=messages), step=1)
    assert second.text == "two files" and second.stop_reason == "completed"

    sent = fake.requests[1].body["input"]
    kinds = [item["type"] for item in sent]
    assert kinds == ["message", "message", "reasoning", "function_call", "function_call_output"]
    reasoning = sent[2]
    assert reasoning["id"] == "rs_resp_0001"
    assert reasoning["encrypted_content"] == encrypted("look first")
    assert reasoning["summary"] == [{"type": "summary_text", "text": "look first"}]
    assert fake.violations == []
    assert all(r.body["store"] is False for r in fake.requests)
    assert all(r.body["include"] == ["reasoning.encrypted_content"] for r in fake.requests)


def test_previous_response_id_sends_only_the_new_items(
    fake: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(VENDOR, fake, previous_response_id=True)
    fake.push(
        Turn(tool_calls=(_call(1),), reasoning="r1"),
        Turn(text="step two", tool_calls=(_call(2),)),
        Turn(text="done"),
    )
    messages: tuple[Message, ...] = FIRST
    answer = provider.complete(replace(request(), messages=messages), step=0)
    for step in (1, 2):
        messages = _next(messages, answer, [f"out {step}"])
        answer = provider.complete(replace(request(), messages=messages), step=step)
    assert answer.text == "done"

    bodies = [r.body for r in fake.requests]
    assert [b["store"] for b in bodies] == [True, True, True]
    assert "previous_response_id" not in bodies[0] and len(bodies[0]["input"]) == 2
    assert bodies[1]["previous_response_id"] == "resp_0001"
    assert bodies[1]["input"] == [
        {"type": "function_call_output", "call_id": "call_1", "output": "out 1"}
    ]
    assert bodies[2]["previous_response_id"] == "resp_0002"
    assert [i["call_id"] for i in bodies[2]["input"]] == ["call_2"]
    assert fake.violations == []


def test_a_history_that_does_not_extend_the_last_answer_is_sent_whole(
    fake: FakeVendorServer, make_provider: MakeProvider
) -> None:
    """An elided or rebuilt history (a resumed run) cannot be chained: all of it goes."""
    provider = make_provider(VENDOR, fake, previous_response_id=True)
    fake.push(Turn(tool_calls=(_call(1),), reasoning="r1"), Turn(text="done"))
    answer = provider.complete(replace(request(), messages=FIRST), step=0)
    rebuilt = (Message.system("Be brief."), Message.user("List the files."))  # new objects
    messages = _next(rebuilt, answer, ["out"])
    provider.complete(replace(request(), messages=messages), step=1)
    second = fake.requests[1].body
    assert "previous_response_id" not in second
    assert [i["type"] for i in second["input"]] == [
        "message", "message", "reasoning", "function_call", "function_call_output"
    ]
    assert fake.violations == []


def test_the_fake_refuses_an_output_without_its_call(
    fake: FakeVendorServer, make_provider: MakeProvider, clock: ManualClock
) -> None:
    provider = make_provider(VENDOR, fake)
    orphan = (*FIRST, Message.tool(ToolResult("call_9", "exec", "out")))
    with pytest.raises(ProviderError, match="HTTP 400"):
        provider.complete(replace(request(), messages=orphan), step=0)
    assert any("call_9" in v and "no matching call" in v for v in fake.violations)


@STREAMING
def test_usage_keeps_cached_and_reasoning_tokens(
    fake: FakeVendorServer, make_provider: MakeProvider, stream: bool
) -> None:
    usage = {
        "input_tokens": 1200,
        "input_tokens_details": {"cached_tokens": 1000},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 256},
        "total_tokens": 1500,
    }
    provider = make_provider(VENDOR, fake, stream=stream)
    fake.push(Turn(text="ok", usage=usage, model="gpt-served"))
    answer = provider.complete(request(), step=0)
    assert answer.usage == Usage(
        prompt_tokens=1200,
        completion_tokens=300,
        total_tokens=1500,
        cache_read_tokens=1000,
        reasoning_tokens=256,
    )
    assert answer.model == "gpt-served" and answer.provider == VENDOR


@STREAMING
def test_web_search_maps_the_web_table_and_records_searches_and_citations(
    fake: FakeVendorServer, make_provider: MakeProvider, stream: bool
) -> None:
    web = WebAccess(search=True, allowed_domains=("docs.python.org",))
    provider = make_provider(VENDOR, fake, stream=stream, web=web)
    citation = {"url": "https://docs.python.org/3/", "title": "Python docs"}
    action = {"type": "search", "query": "python docs"}
    fake.push(Turn(text="See the docs.", citations=(citation,), server_tools=(("ws", action),)))
    answer = provider.complete(request(), step=0)
    tools = fake.requests[0].body["tools"]
    assert {"type": "web_search", "filters": {"allowed_domains": ["docs.python.org"]}} in tools
    assert [(c.url, c.title) for c in answer.citations] == [
        ("https://docs.python.org/3/", "Python docs")
    ]
    assert [(s.name, s.input) for s in answer.server_tool_calls] == [("web_search", action)]
    assert answer.usage.server_tool_requests == 1


def test_system_role_developer_applies_to_the_responses_input(
    fake: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(VENDOR, fake, system_role="developer")
    fake.push(Turn(text="ok"))
    provider.complete(request(), step=0)
    first = fake.requests[0].body["input"][0]
    assert first == {"type": "message", "role": "developer", "content": "Be brief."}


def test_an_incomplete_answer_keeps_its_text_and_says_why(
    fake: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(VENDOR, fake)
    fake.push(Turn(text="partial", stop_reason="max_output_tokens"))
    answer = provider.complete(request(), step=0)
    assert (answer.text, answer.stop_reason) == ("partial", "max_output_tokens")


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (responses_error("server_error", "try again"), True),
        (responses_error("invalid_prompt", "refused"), False),
        (
            {
                "type": "response.failed",
                "response": {"id": "r", "status": "failed",
                             "error": {"code": "server_error", "message": "boom"}},
            },
            True,
        ),
    ],
)
def test_stream_failures_are_retried_only_when_the_code_says_so(
    fake: FakeVendorServer,
    make_provider: MakeProvider,
    clock: ManualClock,
    error: dict[str, object],
    retryable: bool,
) -> None:
    provider = make_provider(VENDOR, fake, max_retries=1)
    fake.push(StreamFail(Turn(text="hello", pieces=3), error, after_events=3), Turn(text="ok"))
    if retryable:
        assert provider.complete(request(), step=0).text == "ok"
        assert len(clock.sleeps) == 1
    else:
        with pytest.raises(ProviderError, match="invalid_prompt") as info:
            provider.complete(request(), step=0)
        assert info.value.retryable is False and clock.sleeps == []


def test_a_stream_cut_before_response_completed_is_retried(
    fake: FakeVendorServer, make_provider: MakeProvider, clock: ManualClock
) -> None:
    provider = make_provider(VENDOR, fake)
    fake.push(Cut(Turn(text="hello"), after_events=4, mode="eof"), Turn(text="whole"))
    assert provider.complete(request(), step=0).text == "whole"
    assert len(clock.sleeps) == 1


# --- a 200 answer of the wrong shape, every vendor -------------------------------------


@pytest.mark.parametrize("vendor", VENDORS)
@STREAMING
@pytest.mark.parametrize(
    "body",
    [{"unexpected": True}, "<html>not json</html>", ["a", "list"]],
    ids=["object", "html", "list"],
)
def test_a_200_answer_of_the_wrong_shape_is_not_retried(
    vendor: str,
    make_provider: MakeProvider,
    clock: ManualClock,
    stream: bool,
    body: object,
) -> None:
    import json

    with start_vendor_server(vendor) as server:  # type: ignore[arg-type]
        text = body if isinstance(body, str) else json.dumps(body)
        server.push(Fail(200, text), Turn(text="never reached"))
        provider: HttpProvider = make_provider(vendor, server, stream=stream)
        with pytest.raises(ProviderError, match="wrong shape|not JSON") as info:
            provider.complete(request(), step=0)
        assert server.pending == 1  # the good answer was never asked for
    assert info.value.retryable is False and clock.sleeps == []
    assert len(info.value.attempts) == 1


def test_a_malformed_event_in_a_responses_stream_is_not_retried(
    make_provider: MakeProvider, clock: ManualClock
) -> None:
    bad = "event: response.output_text.delta\ndata: {not json\n\n"
    with start_vendor_server(VENDOR) as server:
        server.push(Turn(text="hi", extra_events=(bad,)), Turn(text="never reached"))
        provider = make_provider(VENDOR, server)
        with pytest.raises(ProviderError, match="wrong shape"):
            provider.complete(request(), step=0)
    assert clock.sleeps == []


def test_tool_arguments_from_a_body_and_a_stream_agree(
    fake: FakeVendorServer, make_provider: MakeProvider
) -> None:
    calls = (FakeCall("call_a", "exec", '{"cmd": "grep -rn x ."}'),
             FakeCall("call_b", "exec", "{broken"))
    answers = []
    for stream in (True, False):
        provider = make_provider(VENDOR, fake, stream=stream)
        fake.push(Turn(text="both", tool_calls=calls, pieces=5))
        answers.append(provider.complete(request(), step=0).tool_calls)
    assert answers[0] == answers[1] == (
        ToolCall("call_a", "exec", {"cmd": "grep -rn x ."}),
        ToolCall("call_b", "exec", {}, "{broken"),
    )


def test_a_chain_the_vendor_lost_is_sent_again_whole(
    fake: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(VENDOR, fake, previous_response_id=True)
    lost = Fail(404, {"error": {"message": "Previous response with id 'resp_0001' not found.",
                                "type": "invalid_request_error",
                                "param": "previous_response_id",
                                "code": "previous_response_not_found"}})
    fake.push(Turn(tool_calls=(_call(1),)), lost, Turn(text="done"))
    first = provider.complete(replace(request(), messages=FIRST), step=0)
    answer = provider.complete(replace(request(), messages=_next(FIRST, first, ["out"])), step=1)
    assert answer.text == "done"
    assert [(a.ok, a.status) for a in answer.attempts] == [(False, 404), (True, None)]
    second, third = (r.body for r in fake.requests[1:])
    assert second["previous_response_id"] == "resp_0001" and len(second["input"]) == 1
    assert "previous_response_id" not in third and len(third["input"]) == 4
    assert fake.violations == []


def test_a_child_of_a_tree_gets_its_own_state_over_the_same_client(
    fake: FakeVendorServer, make_provider: MakeProvider
) -> None:
    """Parallel children call their providers from their own threads: each gets a
    provider of its own (its own chain and caches) sharing the parent's client."""
    parent = make_provider(VENDOR, fake, previous_response_id=True)
    fake.push(Turn(tool_calls=(_call(1),)), Turn(text="child answer"), Turn(text="done"))
    first = parent.complete(replace(request(), messages=FIRST), step=0)
    child = parent.for_child(0, 0)
    assert type(child) is type(parent) and child is not parent
    assert child.client is parent.client
    child_messages = (Message.system("Be brief."), Message.user("Help."))
    assert child.complete(replace(request(), messages=child_messages), step=0).text == (
        "child answer"
    )
    child.close()
    assert not parent.client.is_closed
    answer = parent.complete(replace(request(), messages=_next(FIRST, first, ["out"])), step=1)
    assert answer.text == "done"
    bodies = [r.body for r in fake.requests]
    assert "previous_response_id" not in bodies[1]  # the child's own conversation
    assert bodies[2]["previous_response_id"] == "resp_0001"  # the parent's chain held
    assert fake.violations == []


def test_a_fallback_chain_for_a_child_holds_fresh_http_providers(clock: ManualClock) -> None:
    from harness_core.providers import ProviderConfig, build_provider

    with start_vendor_server("openai") as one, start_vendor_server(VENDOR) as two:
        config = ProviderConfig(
            kind="openai", model="a", api_key="k", base_url=one.base_url,
            fallback=(ProviderConfig(kind=VENDOR, model="b", api_key="k",
                                     base_url=two.base_url),),
        )
        chain = build_provider(config, env={}, clock=clock)
        try:
            child = chain.for_child(2, 1)  # type: ignore[attr-defined]
            pairs = list(zip(chain.providers, child.providers, strict=True))  # type: ignore[attr-defined]
            assert all(a is not b and a.client is b.client for a, b in pairs)
            child.close()
            assert not chain.providers[0].client.is_closed  # type: ignore[attr-defined]
        finally:
            chain.close()
        assert chain.providers[0].client.is_closed  # type: ignore[attr-defined]
