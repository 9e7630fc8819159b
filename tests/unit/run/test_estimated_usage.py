"""Estimated usage and cost budgets that cannot fail open: the estimate of a completion
whose provider reported nothing, and the pricing a cost budget is built with."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core.config import load
from harness_core.config._assemble import build_run_spec
from harness_core.errors import ConfigError
from harness_core.messages import Message, ToolCall, ToolSpec, Usage
from harness_core.providers import CompletionRequest, CompletionResponse
from harness_core.run._estimate import estimate_usage, with_estimate

SPEC = ToolSpec("exec", "Run a program.", {"type": "object", "properties": {}})


def _request(text: str) -> CompletionRequest:
    return CompletionRequest(model="m", messages=(Message.system("s"), Message.user(text)),
                             tools=(SPEC,))


def test_an_unreported_usage_is_estimated_from_what_the_request_and_answer_carried() -> None:
    answer = CompletionResponse(text="ok", tool_calls=(ToolCall("c", "exec", {"argv": ["x"]}),))
    short, long = (with_estimate(_request(t), answer).usage for t in ("go", "go " * 400))
    assert short.estimated and long.estimated
    assert short.prompt_tokens is not None and long.prompt_tokens is not None
    assert long.prompt_tokens - short.prompt_tokens == pytest.approx(1200 // 4, abs=2)
    assert short.completion_tokens == estimate_usage(_request("go"), answer).completion_tokens
    assert short.total_tokens == short.prompt_tokens + (short.completion_tokens or 0)
    assert short.billed_tokens(0.1) == short.total_tokens  # drawn like a reported count


def test_a_reported_count_is_kept_as_it_is() -> None:
    for usage in (Usage(prompt_tokens=5), Usage(completion_tokens=0), Usage(total_tokens=9)):
        answer = CompletionResponse(text="ok", usage=usage)
        assert with_estimate(_request("go"), answer).usage == usage


def test_a_server_tool_count_survives_the_estimate() -> None:
    answer = CompletionResponse(text="ok", usage=Usage(server_tool_requests=2))
    usage = with_estimate(_request("go"), answer).usage
    assert usage.estimated and usage.server_tool_requests == 2


def _spec_for(tmp_path: Path, toml: str) -> object:
    (tmp_path / "io.toml").write_text(toml)
    config = load(tmp_path, env={"HOME": str(tmp_path), "K": "k"})
    return build_run_spec(config, tmp_path, "goal", env={})


_PROVIDER = '[provider]\nkind = "openai"\nmodel = "gpt-5"\napi_key = "${env:K}"\n'
_PRICES = ('[prices]\nas_of = "2026-01-01"\n[prices.models."gpt-5"]\n'
           "input_per_mtok = 1.0\noutput_per_mtok = 2.0\n")


def test_a_cost_budget_on_an_unpriced_model_or_fallback_refuses_to_start(
    tmp_path: Path,
) -> None:
    fallback = ('[[provider.fallback]]\nkind = "openai"\nmodel = "gpt-4.1"\n'
                'api_key = "${env:K}"\n')
    with pytest.raises(ConfigError, match="no price for 'gpt-4.1'"):
        _spec_for(tmp_path, _PROVIDER + fallback + "[budget]\nmax_cost_usd = 1.0\n" + _PRICES)


def test_a_served_version_of_the_configured_model_is_priced_as_it(tmp_path: Path) -> None:
    spec = _spec_for(tmp_path, _PROVIDER + "[budget]\nmax_cost_usd = 1.0\n" + _PRICES)
    cost_of = spec.cost_of  # type: ignore[attr-defined]
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    assert cost_of("gpt-5-2025-08-07", usage) == pytest.approx(3.0)
    assert cost_of("gpt-5", usage) == pytest.approx(3.0)
    assert cost_of("other-model", usage) is None
