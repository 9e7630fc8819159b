"""No budget fails open: `io run` (the real CLI) against fakes that report no usage, as
llama.cpp's server does when it streams. io records an estimate, marks it "estimated" in
spend and the trace, and token and cost budgets draw it; a cost budget it cannot price
refuses to start, or stops the run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.vendor_server import (
    VENDORS,
    FakeVendorServer,
    RecordedRequest,
    Reply,
    Turn,
    tool_results_in,
)
from tests.integration.providers.conftest import (
    REQUESTED,
    Cli,
    echo_call,
    finished,
    provider_toml,
    write_workspace,
)

StartFake = Callable[..., FakeVendorServer]


def _silent(steps: int) -> Callable[[RecordedRequest], Reply]:
    """A tool loop of `steps` echo calls whose replies carry no usage at all."""

    def respond(request: RecordedRequest) -> Reply:
        step = tool_results_in(request)
        if step < steps:
            return Turn(text=f"step {step}", tool_calls=(echo_call(step),), usage={})
        return Turn(text="all done", usage={})

    return respond


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_provider_that_reports_no_usage_is_counted_as_estimated(
    vendor: str, cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    fake = fakes(vendor, responder=_silent(2))
    ws = write_workspace(tmp_path / "ws", provider_toml(vendor, fake))
    result = cli("run", "echo twice", "-w", str(ws), "--json")
    assert result.returncode == 0, result.stderr
    run_id = finished(result.stdout)["run_id"]

    trace = cli.json("trace", run_id, "-w", str(ws))
    usages = [s["usage"] for s in trace["steps"]]
    assert [u["estimated"] for u in usages] == [True] * 3
    assert all(u["prompt_tokens"] > 0 and u["completion_tokens"] > 0 for u in usages)
    # Each request carries the last one and more: so does each estimate.
    prompts = [u["prompt_tokens"] for u in usages]
    assert prompts == sorted(prompts) and len(set(prompts)) == 3
    assert trace["run"]["tokens"] > 0

    report = cli.json("spend", "-w", str(ws))
    assert report["total"]["estimated_calls"] == 3
    assert report["total"]["prompt_tokens"] == sum(prompts)
    plain = cli("spend", "-w", str(ws))
    assert "3 calls reported no token counts" in plain.stderr
    assert plain.stdout.splitlines()[-1].split("\t")[-1] == "3"
    text = cli("trace", run_id, "-w", str(ws))
    assert text.stdout.count("estimated (not reported)") == 3


def test_a_token_budget_stops_a_run_whose_server_reports_no_usage(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    fake = fakes("openai", responder=_silent(50))
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake),
                         "[budget]\nmax_tokens = 500\n")
    result = cli("run", "echo many times", "-w", str(ws), "--json")
    assert result.returncode == 3, result.stderr
    end = finished(result.stdout)
    assert "token budget of 500 is spent" in str(end["why"] or end.get("reason"))
    assert len(fake.requests) < 50


def test_a_cost_budget_draws_the_estimate(cli: Cli, fakes: StartFake, tmp_path: Path) -> None:
    fake = fakes("openai", responder=_silent(50))
    prices = (f'[prices]\nas_of = "2026-01-01"\n[prices.models."{REQUESTED}"]\n'
              "input_per_mtok = 1000.0\noutput_per_mtok = 1000.0\n")
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake),
                         "[budget]\nmax_cost_usd = 0.5\n" + prices)
    result = cli("run", "echo many times", "-w", str(ws), "--json")
    assert result.returncode == 3, result.stderr
    assert "cost budget" in str(finished(result.stdout)["why"])
    assert len(fake.requests) < 50


def test_a_cost_budget_on_a_model_without_a_price_refuses_to_start(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    fake = fakes("openai", responder=_silent(1))
    prices = '[prices]\nas_of = "2026-01-01"\n[prices.models.other]\ninput_per_mtok = 1.0\n' \
             "output_per_mtok = 1.0\n"
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake),
                         "[budget]\nmax_cost_usd = 1.0\n" + prices)
    result = cli("run", "go", "-w", str(ws))
    assert result.returncode == 2
    assert f"max_cost_usd cannot be enforced: [prices] has no price for '{REQUESTED}'" in (
        result.stderr)
    assert "Traceback" not in result.stderr and fake.requests == []


def test_a_sessions_turns_share_one_prompt_cache_key(
    cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    """A session's turns repeat one conversation: they reach the vendor under the
    session's id; a plain run sends its own id."""
    fake = fakes("openai", responder=_silent(0))
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake))
    made = cli("session", "new", "-w", str(ws), "--json")
    assert made.returncode == 0, made.stderr
    session = json.loads(made.stdout.splitlines()[-1])["session_id"]
    for text in ("first", "second"):
        turn = cli("session", "turn", session, text, "-w", str(ws), "--json")
        assert turn.returncode == 0, turn.stderr
    run = cli("run", "alone", "-w", str(ws), "--json")
    run_id = finished(run.stdout)["run_id"]
    keys = [r.body["prompt_cache_key"] for r in fake.requests]
    assert keys == [session, session, run_id]
