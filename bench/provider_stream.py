"""Streaming cost per delta: 2,000 small text deltas through each provider, over loopback.

Each vendor's fake (tests/fakes/vendor_server.py) streams one completion of 2,000
deltas in that vendor's SSE format; the provider parses it with `on_token` attached.
The figure is the wall time of `complete()` divided by the deltas (so it includes
HTTP, SSE framing, JSON decoding and the callback), best and median of several runs.
A second figure feeds the same pre-rendered events to the stream parser alone.
Target: <= 20 us a delta.

Run: python bench/provider_stream.py [--deltas N] [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness_core.clock import SystemClock  # noqa: E402
from harness_core.messages import Message  # noqa: E402
from harness_core.providers import CompletionRequest, ProviderConfig  # noqa: E402
from harness_core.providers._http import HttpProvider  # noqa: E402
from harness_core.providers._sse import iter_sse  # noqa: E402
from harness_core.providers._wire import StreamClock  # noqa: E402
from harness_core.providers.anthropic import AnthropicProvider  # noqa: E402
from harness_core.providers.openai import OpenAIProvider  # noqa: E402
from harness_core.providers.openrouter import OpenRouterProvider  # noqa: E402
from harness_core.providers.responses import OpenAIResponsesProvider  # noqa: E402
from tests.fakes.responses_wire import render_responses  # noqa: E402
from tests.fakes.vendor_server import (  # noqa: E402
    VENDORS,
    Turn,
    render_anthropic,
    render_openai,
    start_vendor_server,
)

CLASSES: dict[str, type[HttpProvider]] = {
    "anthropic": AnthropicProvider,
    "openai": OpenAIProvider,
    "openrouter": OpenRouterProvider,
    "openai-responses": OpenAIResponsesProvider,
}


def bench_vendor(vendor: str, deltas: int, runs: int) -> tuple[float, float, float]:
    text = "tok " * deltas
    turn = Turn(text=text, pieces=deltas, coalesce=True)
    request = CompletionRequest(
        model="bench-model", messages=(Message.user("go"),), max_tokens=8192
    )
    with start_vendor_server(vendor, responder=lambda _r: turn) as fake:  # type: ignore[arg-type]
        config = ProviderConfig(
            kind=vendor, model="bench-model", api_key="bench-key", base_url=fake.base_url
        )
        provider = CLASSES[vendor](config, env={}, clock=SystemClock())
        try:
            provider.complete(request, step=0)  # warm the connection and the code paths
            samples = []
            for _ in range(runs):
                received: list[str] = []
                start = time.perf_counter()
                response = provider.complete(request, step=0, on_token=received.append)
                samples.append((time.perf_counter() - start) / deltas * 1e6)
                assert len(received) == deltas and response.text == text, "stream mis-parsed"
        finally:
            provider.close()
    return min(samples), statistics.median(samples), parse_only(vendor, turn, deltas, runs)


def parse_only(vendor: str, turn: Turn, deltas: int, runs: int) -> float:
    """The parser alone, on pre-rendered lines (no HTTP)."""
    if vendor == "anthropic":
        rendered = render_anthropic(turn, "bench-model", True)
    elif vendor == "openai-responses":
        rendered = render_responses(turn, "bench-model", True, "resp_bench")
    else:
        rendered = render_openai(turn, "bench-model", True, vendor, True)
    assert isinstance(rendered, list)
    lines = "".join(rendered).split("\n")
    config = ProviderConfig(kind=vendor, model="bench-model", api_key="bench-key")
    provider = CLASSES[vendor](config, env={}, clock=SystemClock())
    clock = SystemClock()
    best = float("inf")
    try:
        for _ in range(runs):
            sink: list[str] = []
            start = time.perf_counter()
            provider._parse_stream(iter_sse(lines), sink.append, StreamClock(clock))
            best = min(best, (time.perf_counter() - start) / deltas * 1e6)
    finally:
        provider.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(
        f"streaming {args.deltas} deltas, {args.runs} runs, loopback fake per vendor (target <= 20 us/delta)"
    )
    print(f"{'vendor':<18}{'best us/delta':>15}{'median us/delta':>17}{'parser only':>13}")
    for vendor in VENDORS:
        best, median, parse = bench_vendor(vendor, args.deltas, args.runs)
        print(f"{vendor:<18}{best:>15.2f}{median:>17.2f}{parse:>13.2f}")


if __name__ == "__main__":
    main()
