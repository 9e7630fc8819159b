"""`io run` (the real CLI, in a subprocess) against each vendor's loopback fake: several
tool-calling steps streamed, the served model and every attempt recorded, `io spend`
totals equal to what the fake reported, fallback, retry-after and pause_turn."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness_core import Store
from tests.fakes.vendor_server import (
    VENDORS,
    Fail,
    FakeVendorServer,
    Turn,
    openai_error,
)
from tests.integration.providers.conftest import (
    REQUESTED,
    SERVED,
    Cli,
    echo_call,
    events,
    finished,
    provider_toml,
    tool_conversation,
    usage_for,
    write_workspace,
)

StartFake = Callable[..., FakeVendorServer]
STEPS = 3


def _expected_totals(vendor: str, replies: int) -> tuple[int, int]:
    prompt = completion = 0
    for step in range(replies):
        usage = usage_for(vendor, step)
        if vendor == "anthropic":
            prompt += usage["input_tokens"] + usage["cache_read_input_tokens"]
            completion += usage["output_tokens"]
        elif vendor == "openai-responses":
            prompt += usage["input_tokens"]
            completion += usage["output_tokens"]
        else:
            prompt += usage["prompt_tokens"]
            completion += usage["completion_tokens"]
    return prompt, completion


@pytest.mark.parametrize("vendor", VENDORS)
def test_io_run_streams_a_multi_step_tool_conversation_and_records_the_served_model(
    vendor: str, cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    fake = fakes(vendor, responder=tool_conversation(vendor, STEPS))
    prices = (f'[prices]\nas_of = "2026-01-01"\n[prices.models."{SERVED}"]\n'
              "input_per_mtok = 3.0\noutput_per_mtok = 15.0\n")
    ws = write_workspace(tmp_path / "ws", provider_toml(vendor, fake), prices)

    result = cli("run", "echo a few things", "-w", str(ws), "--json")

    assert result.returncode == 0, result.stderr
    assert fake.violations == []
    assert len(fake.requests) == STEPS + 1
    assert all(r.wants_stream for r in fake.requests)
    assert all(r.body["model"] == REQUESTED for r in fake.requests)
    assert len(fake.connections) == 1  # every step reused the first keep-alive connection
    run_id = finished(result.stdout)["run_id"]
    outputs = [e["output"] for e in events(result.stdout) if e["kind"] == "tool_result"]
    assert outputs == [f"exit status 0\nstdout:\nhi-{i}\n" for i in range(STEPS)]
    assert any(e["kind"] == "token" for e in events(result.stdout))

    trace = cli.json("trace", run_id, "-w", str(ws))
    assert [s["model"] for s in trace["steps"]] == [SERVED] * (STEPS + 1)
    assert {s["provider"] for s in trace["steps"]} == {vendor}
    assert all(s["ttft_ms"] is not None and s["latency_ms"] > 0 for s in trace["steps"])
    assert [(a["provider"], a["model"], a["ok"]) for a in trace["attempts"]] == [
        (vendor, REQUESTED, 1)] * (STEPS + 1)
    with Store(cli.store) as store:
        rows = store.spend_rows()
    assert {(r.model, r.model_requested) for r in rows} == {(SERVED, REQUESTED)}

    report = cli.json("spend", "-w", str(ws))
    prompt, completion = _expected_totals(vendor, STEPS + 1)
    total = report["total"]
    assert (total["calls"], total["prompt_tokens"], total["completion_tokens"]) == (
        STEPS + 1, prompt, completion)
    # Anthropic reports no total; the others' totals are summed as reported.
    assert total["total_tokens"] == (None if vendor == "anthropic" else prompt + completion)
    assert [g["key"] for g in report["groups"]] == [SERVED]
    assert report["is_floor"] is False
    assert total["cost_usd"] == pytest.approx((prompt * 3.0 + completion * 15.0) / 1e6)


def test_spend_counts_calls_of_an_unpriced_served_model_and_marks_the_total_a_floor(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    fake = fakes("openai", responder=tool_conversation("openai", 1))
    # The price is for the model asked for; the fake says another one served.
    prices = (f'[prices]\nas_of = "2026-01-01"\n[prices.models."{REQUESTED}"]\n'
              "input_per_mtok = 3.0\noutput_per_mtok = 15.0\n")
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake), prices)
    assert cli("run", "go", "-w", str(ws), "--json").returncode == 0

    report = cli.json("spend", "-w", str(ws), "--by", "run")
    assert report["total"]["unpriced_calls"] == 2 and report["total"]["cost_usd"] is None
    assert report["is_floor"] is True and report["prices_as_of"] == "2026-01-01"

    plain = cli("spend", "-w", str(ws))
    assert plain.returncode == 0
    lines = plain.stdout.splitlines()
    assert lines[0].split("\t") == ["model", "calls", "prompt", "output", "total", "cost_usd",
                                    "unpriced", "cache_read", "cache_write", "estimated"]
    assert lines[-1].split("\t")[:2] == ["total", "2"]
    assert "floor" in plain.stderr


def test_spend_filters_by_since_and_until(cli: Cli, fakes: StartFake, tmp_path: Path) -> None:
    fake = fakes("openai", responder=tool_conversation("openai", 1))
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake))
    assert cli("run", "go", "-w", str(ws), "--json").returncode == 0

    everything = cli.json("spend", "-w", str(ws), "--since", "2000-01-01", "--until", "2999-12-31")
    nothing = cli.json("spend", "-w", str(ws), "--until", "2000-01-01T00:00:00Z")
    assert everything["total"]["calls"] == 2 and nothing["total"]["calls"] == 0
    assert everything["groups"][0]["cost_usd"] is None  # no [prices]: never costed at zero

    bad = cli("spend", "-w", str(ws), "--since", "last tuesday")
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_primary_failing_with_500s_spends_its_retries_then_the_fallback_serves(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    primary = fakes("openai", responder=lambda _r: Fail(
        500, openai_error("upstream exploded"), {"retry-after": "0"}))
    backup = fakes("anthropic", responder=tool_conversation("anthropic", 1))
    toml = (provider_toml("openai", primary, max_retries=2)
            + "\n" + provider_toml("anthropic", backup, table="[provider.fallback]",
                                   model="fallback-model"))
    ws = write_workspace(tmp_path / "ws", toml)

    result = cli("run", "go", "-w", str(ws), "--json")

    assert result.returncode == 0, result.stderr
    assert primary.violations == [] and backup.violations == []
    assert len(primary.requests) == 2 * 3  # two steps, three tries each
    assert {r.body["model"] for r in backup.requests} == {"fallback-model"}
    trace = cli.json("trace", finished(result.stdout)["run_id"], "-w", str(ws))
    assert [(s["provider"], s["model"]) for s in trace["steps"]] == [("anthropic", SERVED)] * 2
    step0 = [(a["provider"], a["model"], a["ok"], a["status"])
             for a in trace["attempts"] if a["step"] == 0]
    assert step0 == [("openai", REQUESTED, 0, 500)] * 3 + [("anthropic", "fallback-model", 1, None)]
    assert all("upstream exploded" in (a["error"] or "") for a in trace["attempts"] if not a["ok"])


def test_every_provider_failing_errors_the_run_and_records_each_failed_attempt(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    primary = fakes("openrouter", responder=lambda _r: Fail(503, openai_error("down"),
                                                            {"retry-after": "0"}))
    backup = fakes("anthropic", responder=lambda _r: Fail(400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "no"}}))
    toml = (provider_toml("openrouter", primary, max_retries=1)
            + "\n" + provider_toml("anthropic", backup, table="[provider.fallback]"))
    ws = write_workspace(tmp_path / "ws", toml)

    result = cli("run", "go", "-w", str(ws), "--json")

    assert result.returncode == 1
    end = finished(result.stdout)
    assert end["status"] == "errored" and "every provider failed" in end["reason"]
    trace = cli.json("trace", end["run_id"], "-w", str(ws))
    assert [(a["provider"], a["ok"], a["status"]) for a in trace["attempts"]] == [
        ("openrouter", 0, 503), ("openrouter", 0, 503), ("anthropic", 0, 400)]


def test_a_429_with_retry_after_is_waited_out_then_retried(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    fake = fakes("openai", responder=tool_conversation("openai", 0))
    fake.push(Fail(429, openai_error("slow down", "rate_limit_exceeded"), {"retry-after": "1"}))
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake))

    result = cli("run", "go", "-w", str(ws), "--json")

    assert result.returncode == 0, result.stderr
    assert len(fake.requests) == 2
    waited = fake.requests[1].received_at - fake.answered_at[0]
    assert waited >= 0.9, f"retried after {waited:.3f}s despite retry-after: 1"
    trace = cli.json("trace", finished(result.stdout)["run_id"], "-w", str(ws))
    assert [(a["ok"], a["status"]) for a in trace["attempts"]] == [(0, 429), (1, None)]


def test_anthropic_pause_turn_continues_the_step_instead_of_ending_the_run(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    fake = fakes("anthropic")
    usage: dict[str, Any] = {"input_tokens": 10, "output_tokens": 2}
    fake.push(
        Turn(text="Searching. ", stop_reason="pause_turn", usage=usage,
             server_tools=(("web_search", {"query": "io harness"}),)),
        Turn(text="Found it.", tool_calls=(echo_call(0),), usage=usage),
        Turn(text="done", usage=usage),
    )
    ws = write_workspace(tmp_path / "ws", provider_toml("anthropic", fake))

    result = cli("run", "look it up", "-w", str(ws), "--json")

    assert result.returncode == 0, result.stderr
    assert fake.violations == [] and len(fake.requests) == 3
    continued = fake.requests[1].body["messages"][-1]
    assert continued == {"role": "assistant",
                         "content": [{"type": "text", "text": "Searching."}]}
    trace = cli.json("trace", finished(result.stdout)["run_id"], "-w", str(ws))
    assert [s["text"] for s in trace["steps"]] == ["Searching. Found it.", "done"]
    assert trace["steps"][0]["usage"]["prompt_tokens"] == 20
    assert [c["name"] for c in trace["steps"][0]["calls"]] == ["exec"]


def test_malformed_tool_arguments_from_a_vendor_become_an_observation(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    fake = fakes("openai")
    from tests.fakes.vendor_server import FakeCall

    fake.push(Turn(tool_calls=(FakeCall("call_x", "exec", '{"argv": ["echo", '),), pieces=3),
              Turn(text="sorry, done"))
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake))

    result = cli("run", "go", "-w", str(ws), "--json")

    assert result.returncode == 0, result.stderr
    observed = [e for e in events(result.stdout) if e["kind"] == "tool_result"]
    assert observed[0]["is_error"] and "JSON" in observed[0]["output"]
    sent = json.dumps(fake.requests[1].body)
    assert "call_x" in sent  # the model is told, in the next request
