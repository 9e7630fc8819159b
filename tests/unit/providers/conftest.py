"""Fixtures for the provider tests: a manual clock, loopback vendor fakes, provider factories."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness_core.messages import Message, ToolCall, ToolResult, ToolSpec
from harness_core.providers import CompletionRequest, ProviderConfig
from harness_core.providers._http import HttpProvider
from harness_core.providers.anthropic import AnthropicProvider
from harness_core.providers.openai import OpenAIProvider
from harness_core.providers.openrouter import OpenRouterProvider
from harness_core.providers.responses import OpenAIResponsesProvider
from tests.fakes.vendor_server import VENDORS, FakeVendorServer, start_vendor_server

CANARY_KEY = "sk-canary-Zq7Lx2Pw9Rt4Vb6Nm8Kd3Hs5Jf1Gc0Ya"
"""A key whose every fragment is distinctive, so a grep for it cannot hit by chance."""

CLASSES: dict[str, type[HttpProvider]] = {
    "anthropic": AnthropicProvider,
    "openai": OpenAIProvider,
    "openrouter": OpenRouterProvider,
    "openai-responses": OpenAIResponsesProvider,
}

TOOLS = (
    ToolSpec(
        "exec",
        "Run a command.",
        {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    ),
)

CONVERSATION = (
    Message.system("Be brief."),
    Message.user("List the files."),
    Message.assistant("Looking.", (ToolCall("call_1", "exec", {"cmd": "ls"}),)),
    Message.tool(ToolResult("call_1", "exec", "a.txt\nb.txt")),
)


class ManualClock:
    """A `Clock` that moves only when slept on; records every sleep."""

    def __init__(self) -> None:
        self._start = datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 0.0
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self._mono)

    def monotonic(self) -> float:
        return self._mono

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self._mono += seconds


def request(model: str = "model-asked", **changes: Any) -> CompletionRequest:
    base = CompletionRequest(model=model, messages=CONVERSATION, tools=TOOLS, max_tokens=256)
    return replace(base, **changes)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=VENDORS)
def vendor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(vendor: str) -> Iterator[FakeVendorServer]:
    fake = start_vendor_server(vendor)  # type: ignore[arg-type]
    yield fake
    fake.close()


MakeProvider = Callable[..., HttpProvider]


@pytest.fixture
def make_provider(clock: ManualClock) -> Iterator[MakeProvider]:
    made: list[HttpProvider] = []

    def make(vendor: str, fake: FakeVendorServer | None, **overrides: Any) -> HttpProvider:
        fields: dict[str, Any] = {
            "kind": vendor,
            "model": "model-asked",
            "api_key": CANARY_KEY,
            "base_url": fake.base_url if fake is not None else None,
            "stream": True,
            "max_retries": 3,
            "timeout_seconds": 5.0,
        }
        env = overrides.pop("env", {})
        fields.update(overrides)
        provider = CLASSES[vendor](
            ProviderConfig(**fields), env=env, clock=clock, jitter=lambda: 1.0
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()


@pytest.fixture
def provider(vendor: str, server: FakeVendorServer, make_provider: MakeProvider) -> HttpProvider:
    return make_provider(vendor, server)
