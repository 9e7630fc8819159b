"""The three HTTP providers against loopback fakes speaking each vendor's wire protocol."""

from __future__ import annotations

import base64
import json
import socket
import threading
import traceback
from typing import Literal

import pytest

from harness_core.errors import ConfigError, ProviderError
from harness_core.messages import Usage
from harness_core.providers._http import HttpProvider
from tests.fakes.responses_wire import responses_error
from tests.fakes.vendor_server import (
    Cut,
    EchoKey401,
    Fail,
    FakeCall,
    FakeVendorServer,
    Hang,
    StreamFail,
    Turn,
    anthropic_error,
    openai_error,
    start_vendor_server,
)
from tests.unit.providers.conftest import (
    CANARY_KEY,
    TOOLS,
    MakeProvider,
    ManualClock,
    request,
)

STREAMING = pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])


def _overloaded(vendor: str) -> Fail:
    # The Responses API's error bodies have Chat Completions' shape.
    if vendor == "anthropic":
        return Fail(529, anthropic_error("overloaded_error", "Overloaded"))
    return Fail(503, openai_error("The server is overloaded"))


def _stream_error(vendor: str) -> dict[str, object]:
    if vendor == "anthropic":
        return anthropic_error("overloaded_error", "Overloaded")
    if vendor == "openai-responses":
        return responses_error("server_error", "upstream failed")
    return openai_error("upstream failed", code=502)


# --- success shapes ------------------------------------------------------------------


@STREAMING
def test_text_completion_records_served_model_usage_and_timing(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, stream: bool
) -> None:
    provider = make_provider(vendor, server, stream=stream)
    server.push(Turn(text="Two files.", model="model-served-2026", pieces=4))
    tokens: list[str] = []
    response = provider.complete(request(), step=0, on_token=tokens.append)

    assert response.text == "Two files."
    assert response.tool_calls == ()
    assert response.model == "model-served-2026"
    assert response.provider == vendor
    assert response.attempts[-1].ok and len(response.attempts) == 1
    assert response.latency_ms == 0.0  # the manual clock did not move
    if stream:
        assert "".join(tokens) == "Two files." and len(tokens) == 4
        assert response.ttft_ms is not None
    else:
        assert tokens == [] and response.ttft_ms is None
    assert server.violations == []


@STREAMING
def test_tool_calls_split_across_many_chunks_are_assembled(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, stream: bool
) -> None:
    provider = make_provider(vendor, server, stream=stream)
    args_a = json.dumps({"cmd": "grep -rn 'needle' src/ --include='*.py'"})
    args_b = json.dumps({"cmd": "python -m pytest -q", "nested": {"deep": [1, 2, 3]}})
    server.push(
        Turn(
            text="Running both.",
            tool_calls=(FakeCall("call_a", "exec", args_a), FakeCall("call_b", "exec", args_b)),
            pieces=17,
        )
    )
    response = provider.complete(request(), step=1)

    assert [c.id for c in response.tool_calls] == ["call_a", "call_b"]
    assert response.tool_calls[0].arguments == json.loads(args_a)
    assert response.tool_calls[1].arguments == json.loads(args_b)
    assert all(c.raw_arguments is None for c in response.tool_calls)
    assert response.text == "Running both."
    assert response.stop_reason in ("tool_use", "tool_calls")
    assert server.violations == []


# Anthropic's JSON body carries tool input as an object, so only its stream can break it.
@pytest.mark.parametrize(
    ("vendor", "stream"),
    [
        ("anthropic", True),
        ("openai", True),
        ("openai", False),
        ("openrouter", True),
        ("openrouter", False),
    ],
)
def test_malformed_tool_arguments_become_raw_arguments_not_an_error(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, stream: bool
) -> None:
    provider = make_provider(vendor, server, stream=stream)
    broken = '{"cmd": "ls", '
    server.push(Turn(tool_calls=(FakeCall("call_x", "exec", broken),), pieces=3))
    response = provider.complete(request(), step=0)

    (call,) = response.tool_calls
    assert call.arguments == {} and call.raw_arguments == broken
    assert len(response.attempts) == 1


def test_unknown_events_pings_and_comments_are_ignored(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server)
    extra = (
        'event: brand_new_event\ndata: {"type": "brand_new_event", "x": 1}\n\n',
        ": keep-alive comment\n\n",
        'event: ping\ndata: {"type": "ping"}\n\n' if vendor == "anthropic" else "",
    )
    server.push(Turn(text="still fine", extra_events=tuple(e for e in extra if e), pieces=3))
    assert provider.complete(request(), step=0).text == "still fine"


@pytest.mark.parametrize("vendor", ["anthropic"])
def test_anthropic_usage_folds_cache_counts_into_prompt(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    usage = {
        "input_tokens": 20,
        "cache_read_input_tokens": 300,
        "cache_creation_input_tokens": 40,
        "output_tokens": 7,
        "server_tool_use": {"web_search_requests": 2},
    }
    for stream in (True, False):
        provider = make_provider(vendor, server, stream=stream)
        server.push(Turn(text="ok", usage=usage))
        got = provider.complete(request(), step=0).usage
        assert got == Usage(
            prompt_tokens=360,
            completion_tokens=7,
            total_tokens=None,
            cache_read_tokens=300,
            cache_write_tokens=40,
            server_tool_requests=2,
        ), f"stream={stream}"


@pytest.mark.parametrize("vendor", ["openai", "openrouter"])
def test_openai_usage_keeps_breakdowns_and_reported_total(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 200,
        "total_tokens": 1234,  # disagrees with the parts on purpose: billed on the total
        "prompt_tokens_details": {"cached_tokens": 800},
        "completion_tokens_details": {"reasoning_tokens": 150},
    }
    for stream in (True, False):
        provider = make_provider(vendor, server, stream=stream)
        server.push(Turn(text="ok", usage=usage))
        got = provider.complete(request(), step=0).usage
        assert got == Usage(
            prompt_tokens=1000,
            completion_tokens=200,
            total_tokens=1234,
            cache_read_tokens=800,
            reasoning_tokens=150,
        ), f"stream={stream}"


def test_usage_not_reported_stays_none_not_zero(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server, stream=False)
    server.push(Turn(text="ok", usage={}))
    assert provider.complete(request(), step=0).usage == Usage()


# --- request shape -------------------------------------------------------------------


def test_request_carries_system_tools_results_and_ceiling_in_vendor_shape(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server)
    server.push(Turn(text="done"))
    provider.complete(request(), step=0)
    (sent,) = server.requests
    body = sent.body
    assert server.violations == []
    assert body["model"] == "model-asked" and body["stream"] is True
    if vendor == "anthropic":
        assert body["system"] == [
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
        assert body["max_tokens"] == 256
        assert body["tools"][0]["input_schema"]["required"] == ["cmd"]
        assert body["messages"][-1]["content"][0]["type"] == "tool_result"
        assert sent.headers["x-api-key"] == CANARY_KEY
    elif vendor == "openai-responses":
        assert body["input"][0] == {"type": "message", "role": "system", "content": "Be brief."}
        assert body["max_output_tokens"] == 256 and "max_tokens" not in body
        assert body["tools"][0] == {
            "type": "function",
            "name": "exec",
            "description": "Run a command.",
            "parameters": TOOLS[0].parameters,
            "strict": False,
        }
        assert body["input"][-2:] == [
            {"type": "function_call", "call_id": "call_1", "name": "exec",
             "arguments": '{"cmd": "ls"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt\nb.txt"},
        ]
        assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
        assert "previous_response_id" not in body
        assert sent.headers["authorization"] == f"Bearer {CANARY_KEY}"
    else:
        assert body["messages"][0] == {"role": "system", "content": "Be brief."}
        assert body["max_tokens"] == 256  # a non-OpenAI base_url gets the portable field
        assert body["stream_options"] == {"include_usage": True}
        assert body["tools"][0]["function"]["name"] == "exec"
        assert body["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "a.txt\nb.txt",
        }
        assert sent.headers["authorization"] == f"Bearer {CANARY_KEY}"
    if vendor == "openrouter":
        assert sent.headers["http-referer"] and sent.headers["x-title"] == "io"
        assert body["usage"] == {"include": True}


def test_openai_itself_gets_max_completion_tokens(make_provider: MakeProvider) -> None:
    provider = make_provider("openai", None)
    body = provider._body(request(), stream=False)
    assert body["max_completion_tokens"] == 256 and "max_tokens" not in body


def test_a_multi_step_conversation_keeps_the_fake_invariants(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    from harness_core.messages import Message, ToolResult

    provider = make_provider(vendor, server)
    messages = [Message.system("sys"), Message.user("go")]
    for step in range(3):
        server.push(
            Turn(
                text=f"step {step}",
                tool_calls=(FakeCall(f"call_{step}", "exec", '{"cmd": "echo"}'),),
            )
        )
        response = provider.complete(request(messages=tuple(messages)), step=step)
        messages.append(Message.assistant(response.text, response.tool_calls))
        for call in response.tool_calls:
            messages.append(Message.tool(ToolResult(call.id, call.name, "echo")))
    server.push(Turn(text="finished"))
    assert provider.complete(request(messages=tuple(messages)), step=3).text == "finished"
    assert len(server.requests) == 4 and server.violations == []


def test_the_fake_refuses_a_tool_result_without_its_call(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    from harness_core.messages import Message, ToolResult

    provider = make_provider(vendor, server)
    orphan = (Message.user("go"), Message.tool(ToolResult("call_nowhere", "exec", "x")))
    with pytest.raises(ProviderError) as info:
        provider.complete(request(messages=orphan), step=0)
    assert info.value.status == 400 and not info.value.retryable
    assert server.violations  # the fake saw the broken invariant


# --- retries -------------------------------------------------------------------------


def test_429_honours_retry_after_seconds(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, clock: ManualClock
) -> None:
    provider = make_provider(vendor, server)
    server.push(Fail(429, "slow down", {"retry-after": "7"}), Turn(text="ok"))
    response = provider.complete(request(), step=0)
    assert response.text == "ok"
    assert clock.sleeps == [7.0]
    assert [(a.ok, a.status) for a in response.attempts] == [(False, 429), (True, None)]
    assert response.latency_ms == pytest.approx(7000.0)


def test_429_honours_retry_after_http_date(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, clock: ManualClock
) -> None:
    provider = make_provider(vendor, server)
    server.push(Fail(429, "", {"retry-after": "Thu, 01 Jan 2026 00:00:12 GMT"}), Turn(text="ok"))
    provider.complete(request(), step=0)
    assert clock.sleeps == [12.0]


@STREAMING
def test_overload_is_retried(
    vendor: str,
    server: FakeVendorServer,
    make_provider: MakeProvider,
    clock: ManualClock,
    stream: bool,
) -> None:
    provider = make_provider(vendor, server, stream=stream)
    server.push(_overloaded(vendor), Turn(text="ok"))
    response = provider.complete(request(), step=0)
    assert response.text == "ok"
    assert response.attempts[0].status == (529 if vendor == "anthropic" else 503)
    assert "verloaded" in (response.attempts[0].error or "")
    assert clock.sleeps == [0.5]  # base delay, jitter pinned at its top


@pytest.mark.parametrize("vendor", ["anthropic"])
def test_anthropic_overloaded_error_is_retried_whatever_the_status(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server)
    server.push(Fail(400, anthropic_error("overloaded_error", "Overloaded")), Turn(text="ok"))
    assert provider.complete(request(), step=0).text == "ok"


def test_500_then_success(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, clock: ManualClock
) -> None:
    provider = make_provider(vendor, server)
    server.push(Fail(500, "boom"), Fail(502, "bad gateway"), Turn(text="ok"))
    response = provider.complete(request(), step=0)
    assert response.text == "ok" and len(response.attempts) == 3
    assert clock.sleeps == [0.5, 1.0]  # doubling backoff


def test_backoff_jitter_scales_between_half_and_full(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, clock: ManualClock
) -> None:
    provider = make_provider(vendor, server)
    provider._jitter = lambda: 0.0
    server.push(Fail(500, "boom"), Fail(500, "boom"), Turn(text="ok"))
    provider.complete(request(), step=0)
    assert clock.sleeps == [0.25, 0.5]


def test_retries_spent_raise_with_every_attempt_recorded(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, clock: ManualClock
) -> None:
    provider = make_provider(vendor, server, max_retries=2)
    server.push(Fail(503, "down"), Fail(503, "down"), Fail(503, "down"))
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), step=0)
    assert info.value.retryable and info.value.status == 503
    assert [a.ok for a in provider.last_attempts] == [False, False, False]
    assert len(clock.sleeps) == 2


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_4xx_other_than_429_is_not_retried(
    vendor: str,
    server: FakeVendorServer,
    make_provider: MakeProvider,
    clock: ManualClock,
    status: int,
) -> None:
    provider = make_provider(vendor, server)
    server.push(Fail(status, openai_error("nope", "invalid_request_error")))
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), step=0)
    assert info.value.status == status and not info.value.retryable
    assert clock.sleeps == [] and len(server.requests) == 1


def test_a_very_long_retry_after_ends_retries_at_once(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, clock: ManualClock
) -> None:
    provider = make_provider(vendor, server)
    server.push(Fail(429, "quota", {"retry-after": "3600"}))
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), step=0)
    assert info.value.retry_after == 3600.0 and clock.sleeps == []


@pytest.mark.parametrize("mode", ["chunked", "eof"])
def test_a_stream_cut_mid_event_is_retried_never_half_parsed(
    vendor: str,
    server: FakeVendorServer,
    make_provider: MakeProvider,
    mode: Literal["chunked", "eof"],
) -> None:
    provider = make_provider(vendor, server)
    long_text = "partial answer that must not survive " * 3
    server.push(
        Cut(Turn(text=long_text, pieces=8), after_events=4, mode=mode), Turn(text="whole answer")
    )
    tokens: list[str] = []
    response = provider.complete(request(), step=0, on_token=tokens.append)
    assert response.text == "whole answer"
    assert "partial" not in response.text
    assert tokens[-1] == "whole answer"  # the cut stream's deltas were provisional
    assert [a.ok for a in response.attempts] == [False, True]
    assert response.attempts[0].error


def test_a_stream_cut_every_time_raises_retryable(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server, max_retries=1)
    server.push(*[Cut(Turn(text="x" * 50, pieces=10), after_events=5, mode="eof")] * 2)
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), step=0)
    assert info.value.retryable


def test_an_error_event_inside_a_stream_is_retried(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server)
    server.push(StreamFail(Turn(text="abc", pieces=3), _stream_error(vendor)), Turn(text="ok"))
    response = provider.complete(request(), step=0)
    assert response.text == "ok"
    assert not response.attempts[0].ok


def test_a_read_timeout_is_retried(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server, timeout_seconds=0.2)
    hang = Hang()
    server.push(hang, Turn(text="ok"))
    try:
        response = provider.complete(request(), step=0)
    finally:
        hang.release.set()
    assert response.text == "ok"
    assert "Timeout" in (response.attempts[0].error or "")


def test_a_refused_connection_is_retryable(
    vendor: str, make_provider: MakeProvider, clock: ManualClock
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    fake_base = f"http://127.0.0.1:{port}"
    provider = make_provider(vendor, None, base_url=fake_base, max_retries=1)
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), step=0)
    assert info.value.retryable and len(provider.last_attempts) == 2


# --- keys ----------------------------------------------------------------------------


def _leaks(text: str) -> list[str]:
    forms = {
        "key": CANARY_KEY,
        "prefix": CANARY_KEY[:12],
        "base64": base64.b64encode(CANARY_KEY.encode()).decode().rstrip("="),
    }
    return [name for name, form in forms.items() if form in text]


def test_a_401_echoing_the_key_never_surfaces_it(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, clock: ManualClock
) -> None:
    provider = make_provider(vendor, server)
    server.push(EchoKey401())
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), step=0)
    exc = info.value
    assert exc.status == 401 and not exc.retryable and clock.sleeps == []
    assert "[REDACTED]" in str(exc)
    surfaces = [
        str(exc),
        repr(exc),
        repr(exc.args),
        str(exc.hint),
        "".join(traceback.format_exception(exc)),
        repr(provider.last_attempts),
        repr(provider),
        repr(provider.config),
    ]
    for text in surfaces:
        assert _leaks(text) == [], text


def test_a_retried_failure_echoing_the_key_is_redacted_in_every_attempt(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server)
    echo = f"upstream said key={CANARY_KEY} b64={base64.b64encode(CANARY_KEY.encode()).decode()}"
    server.push(Fail(500, echo), Fail(503, CANARY_KEY[:20] + "..."), Turn(text="ok"))
    response = provider.complete(request(), step=0)
    assert all(_leaks(repr(a)) == [] for a in response.attempts)
    assert _leaks(repr(response)) == []


def test_key_comes_from_the_env_mapping_when_config_has_none(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    variable = {
        "anthropic": "ANTHROPIC_API_KEY",
        "openai": "OPENAI_API_KEY",
        "openrouter": "OPENROUTER_API_KEY",
        "openai-responses": "OPENAI_API_KEY",
    }[vendor]
    provider = make_provider(vendor, server, api_key=None, env={variable: "from-env-key"})
    server.push(Turn(text="ok"))
    provider.complete(request(), step=0)
    headers = server.requests[0].headers
    assert "from-env-key" in (headers.get("x-api-key") or headers.get("authorization", ""))


def test_a_missing_key_is_a_config_error_naming_the_variable(
    vendor: str, make_provider: MakeProvider
) -> None:
    variable = {
        "anthropic": "ANTHROPIC_API_KEY",
        "openai": "OPENAI_API_KEY",
        "openrouter": "OPENROUTER_API_KEY",
        "openai-responses": "OPENAI_API_KEY",
    }[vendor]
    with pytest.raises(ConfigError, match=variable):
        make_provider(vendor, None, api_key=None, env={})


def test_a_shared_client_keeps_its_connection_after_the_provider_closes(
    clock: ManualClock,
) -> None:
    from harness_core.providers import ProviderConfig
    from harness_core.providers._client import make_client
    from harness_core.providers.openai import OpenAIProvider

    client = make_client({})
    with start_vendor_server("openai") as fake:
        config = ProviderConfig(kind="openai", model="m", api_key="k", base_url=fake.base_url)
        first = OpenAIProvider(config, env={}, clock=clock, client=client)
        fake.push(Turn(text="one"), Turn(text="two"))
        assert first.complete(request(), step=0).text == "one"
        first.close()
        second = OpenAIProvider(config, env={}, clock=clock, client=client)
        assert second.complete(request(), step=0).text == "two"
        second.close()
        client.close()
    assert len(fake.connections) == 1  # the second provider reused the first's connection


def test_concurrent_providers_share_nothing(clock: ManualClock) -> None:
    """Two providers on two threads each see their own replies and attempts."""
    from harness_core.providers import ProviderConfig
    from harness_core.providers.anthropic import AnthropicProvider

    results: dict[str, str] = {}
    with start_vendor_server("anthropic") as one, start_vendor_server("anthropic") as two:
        one.push(Turn(text="from one"))
        two.push(Turn(text="from two"))
        providers = {
            name: AnthropicProvider(
                ProviderConfig(kind="anthropic", model="m", api_key="k", base_url=fake.base_url),
                env={},
                clock=clock,
            )
            for name, fake in (("one", one), ("two", two))
        }

        def run(name: str) -> None:
            results[name] = providers[name].complete(request(), step=0).text

        threads = [threading.Thread(target=run, args=(n,)) for n in providers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        for p in providers.values():
            p.close()
    assert results == {"one": "from one", "two": "from two"}


def test_provider_is_an_http_provider(provider: HttpProvider, vendor: str) -> None:
    assert provider.name == vendor


class TickingClock(ManualClock):
    """Every reading of the monotonic clock advances it by one millisecond."""

    def monotonic(self) -> float:
        self._mono += 0.001
        return self._mono


def test_ttft_is_measured_from_the_request_and_bounded_by_latency(
    vendor: str, server: FakeVendorServer
) -> None:
    from harness_core.providers import ProviderConfig
    from tests.unit.providers.conftest import CLASSES

    config = ProviderConfig(
        kind=vendor, model="m", api_key="key-123456789", base_url=server.base_url
    )
    provider = CLASSES[vendor](config, env={}, clock=TickingClock())
    try:
        server.push(Turn(text="abc", pieces=3))
        response = provider.complete(request(), step=0)
    finally:
        provider.close()
    assert response.ttft_ms is not None
    assert 0 < response.ttft_ms < response.latency_ms


def test_a_401_hints_at_the_key_variable(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server)
    server.push(Fail(401, "nope"))
    with pytest.raises(ProviderError) as info:
        provider.complete(request(), step=0)
    assert info.value.hint is not None and provider.env_var in info.value.hint


def test_an_assistant_turn_with_nothing_in_it_still_makes_a_valid_request(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    from harness_core.messages import Message

    provider = make_provider(vendor, server)
    server.push(Turn(text="ok"))
    messages = (Message.user("go"), Message.assistant(""), Message.user("again"))
    assert provider.complete(request(messages=messages), step=0).text == "ok"
    assert server.violations == []


def test_the_tool_loop_responder_drives_a_whole_run(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    from harness_core.messages import Message, ToolResult
    from tests.fakes.vendor_server import tool_loop_responder

    server.responder = tool_loop_responder(3)
    provider = make_provider(vendor, server)
    messages = [Message.system("sys"), Message.user("go")]
    for _ in range(10):
        response = provider.complete(request(messages=tuple(messages)), step=0)
        messages.append(Message.assistant(response.text, response.tool_calls))
        if not response.tool_calls:
            break
        for call in response.tool_calls:
            messages.append(Message.tool(ToolResult(call.id, call.name, "hi")))
    assert response.text == "done"
    assert len(server.requests) == 4 and server.violations == []


@pytest.mark.parametrize("vendor", ["openai", "openrouter"])
@pytest.mark.parametrize("role", ["system", "developer"])
def test_system_role_names_the_role_of_the_system_message(
    vendor: str, role: str, make_provider: MakeProvider
) -> None:
    with start_vendor_server(vendor) as fake:  # type: ignore[arg-type]
        fake.push(Turn(text="ok"))
        provider = make_provider(vendor, fake, system_role=role)
        provider.complete(request(), step=0)
    messages = fake.requests[0].body["messages"]
    assert messages[0] == {"role": role, "content": "Be brief."}
    assert [m["role"] for m in messages[1:]] == ["user", "assistant", "tool"]
    assert fake.violations == []
