"""A stable prefix, as a tested property: a 100-step `io run` on each wire, each request
compared with the one before it in the order the vendor caches a prompt (tools, system,
conversation), with the cache marks left out (they move; the content they mark does not).

After step 2, at least 95 % of each request's bytes repeat the previous request's
prefix. A request where that fails is a break (an elision changed an early turn); the
breaks are counted, and with a context ceiling that the run passes several times over,
block elision keeps them to a few.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.vendor_server import (
    VENDORS,
    FakeCall,
    FakeVendorServer,
    RecordedRequest,
    Reply,
    Turn,
    tool_results_in,
)
from tests.integration.providers.conftest import Cli, provider_toml, write_workspace

StartFake = Callable[..., FakeVendorServer]
STEPS = 100
SHARE = 0.95


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def cached_order(vendor: str, body: dict[str, Any]) -> bytes:
    """The request as the vendor's cache reads it: tools, system, then the conversation."""
    parts: list[Any] = [body.get("tools") or []]
    if vendor == "anthropic":
        parts += [body.get("system"), body.get("messages")]
    elif vendor == "openai-responses":
        parts += [body.get("input")]
    else:
        parts += [body.get("messages")]
    return json.dumps(_unmarked(parts), separators=(",", ":")).encode()


def repeated(requests: list[bytes]) -> list[tuple[int, int, int]]:
    """For each request after the first: (bytes it shares with the previous request's
    start, the previous request's length, its own length)."""
    out: list[tuple[int, int, int]] = []
    for before, after in zip(requests, requests[1:], strict=False):
        n, limit = 0, min(len(before), len(after))
        while n < limit and before[n] == after[n]:
            n += 1
        out.append((n, len(before), len(after)))
    return out


def shares(pairs: list[tuple[int, int, int]]) -> list[float]:
    """The share of each request's bytes that repeat the previous request's prefix."""
    return [n / size for n, _, size in pairs]


def breaks(pairs: list[tuple[int, int, int]]) -> list[int]:
    """The requests (numbered from 1) that changed something the previous one sent,
    instead of only adding to it (its closing brackets aside)."""
    return [i + 2 for i, (n, before, _) in enumerate(pairs) if n < before - _CLOSING]


_CLOSING = 4


def _echo_loop(extra: str) -> Callable[[RecordedRequest], Reply]:
    """`STEPS` steps of one `echo` each (another line each time: no stall), then "done"."""

    def respond(request: RecordedRequest) -> Reply:
        step = tool_results_in(request)
        if step < STEPS:
            arguments = json.dumps({"argv": ["echo", f"line {step} of the output{extra}"]})
            return Turn(text=f"step {step}",
                        tool_calls=(FakeCall(f"call_{step}", "exec", arguments),))
        return Turn(text="done")

    return respond


def _run(vendor: str, cli: Cli, fakes: StartFake, root: Path, context: str = "",
         extra: str = "") -> list[tuple[int, int, int]]:
    fake = fakes(vendor, responder=_echo_loop(extra))
    ws = write_workspace(root, provider_toml(vendor, fake),
                         f"[budget]\nmax_steps = {STEPS + 5}\n{context}")
    result = cli("run", "echo a hundred times", "-w", str(ws), "--json", timeout=300)
    assert result.returncode == 0, result.stderr
    assert fake.violations == [] and len(fake.requests) == STEPS + 1
    return repeated([cached_order(vendor, r.body) for r in fake.requests])


@pytest.mark.parametrize("vendor", VENDORS)
def test_every_request_repeats_the_previous_prefix(
    vendor: str, cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    pairs = _run(vendor, cli, fakes, tmp_path / "ws")
    assert breaks(pairs) == []
    low = [(k + 2, round(s, 3)) for k, s in enumerate(shares(pairs)) if k >= 2 and s < SHARE]
    assert low == [], f"{vendor}: requests repeating under {SHARE:.0%} of the last: {low}"


@pytest.mark.parametrize("vendor", VENDORS)
def test_elision_breaks_the_prefix_in_blocks_not_on_every_step(
    vendor: str, cli: Cli, fakes: StartFake, tmp_path: Path
) -> None:
    """A ceiling the run passes many times over. Each pass elides a block of the oldest
    observations at once (a break: the request repeats under 95 % of the last), so the
    prefix breaks a few times, not on every step past the ceiling. Once the turns that
    cannot be elided outgrow the ceiling, each step elides the observation that just left
    the newest four: a change near the end, which keeps most of the prefix."""
    pairs = _run(vendor, cli, fakes, tmp_path / "ws", "[context]\nmax_tokens = 12000\n",
                 " " + "an observation worth eliding " * 20)
    low = {k + 2 for k, share in enumerate(shares(pairs)) if k >= 2 and share < SHARE}
    costly = [i for i in breaks(pairs) if i in low]
    assert 1 <= len(costly) <= 5, f"{vendor}: {len(costly)} breaks at {costly}"
    repeated_bytes = sum(n for n, _, _ in pairs[2:])
    assert repeated_bytes / sum(size for _, _, size in pairs[2:]) >= 0.9
