"""Fallback chains and the provider registry."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_core.errors import ConfigError, ProviderError
from harness_core.providers import (
    PROVIDER_KINDS,
    CompletionRequest,
    CompletionResponse,
    Fallback,
    ProviderConfig,
    TokenCallback,
    WebAccess,
    build_provider,
)
from tests.fakes.vendor_server import Fail, FakeVendorServer, Turn, start_vendor_server
from tests.unit.providers.conftest import ManualClock, request


@pytest.fixture
def fakes() -> Iterator[dict[str, FakeVendorServer]]:
    servers = {v: start_vendor_server(v) for v in ("anthropic", "openai", "openrouter")}
    yield servers
    for s in servers.values():
        s.close()


def _config(kind: str, fake: FakeVendorServer, model: str, **extra: object) -> ProviderConfig:
    return ProviderConfig(
        kind=kind,
        model=model,
        api_key=f"{kind}-key",
        base_url=fake.base_url,
        max_retries=1,
        **extra,  # type: ignore[arg-type]
    )


def test_fallback_serves_after_the_primary_spends_its_retries(
    fakes: dict[str, FakeVendorServer], clock: ManualClock
) -> None:
    config = _config(
        "anthropic",
        fakes["anthropic"],
        "claude-primary",
        fallback=(_config("openrouter", fakes["openrouter"], "anthropic/claude-backup"),),
    )
    provider = build_provider(config, env={}, clock=clock)
    try:
        fakes["anthropic"].push(Fail(529, "overloaded"), Fail(529, "overloaded"))
        fakes["openrouter"].push(Turn(text="from the backup", model="anthropic/claude-backup-0901"))
        tokens: list[str] = []
        response = provider.complete(request("claude-primary"), step=0, on_token=tokens.append)
    finally:
        provider.close()

    assert isinstance(provider, Fallback)
    assert response.text == "from the backup"
    assert response.provider == "openrouter"
    assert response.model == "anthropic/claude-backup-0901"
    assert [(a.provider, a.model, a.ok, a.status) for a in response.attempts] == [
        ("anthropic", "claude-primary", False, 529),
        ("anthropic", "claude-primary", False, 529),
        ("openrouter", "anthropic/claude-backup", True, None),
    ]
    # The backup was asked for its own model, not the primary's.
    assert fakes["openrouter"].requests[0].body["model"] == "anthropic/claude-backup"
    assert response.latency_ms == pytest.approx(clock.sleeps[0] * 1000)


def test_fallback_also_covers_a_non_retryable_failure(
    fakes: dict[str, FakeVendorServer], clock: ManualClock
) -> None:
    config = _config(
        "openai",
        fakes["openai"],
        "gpt-x",
        fallback=(_config("anthropic", fakes["anthropic"], "claude"),),
    )
    provider = build_provider(config, env={}, clock=clock)
    try:
        fakes["openai"].push(Fail(401, "bad key"))
        fakes["anthropic"].push(Turn(text="ok"))
        response = provider.complete(request("gpt-x"), step=0)
    finally:
        provider.close()
    assert response.provider == "anthropic"
    assert [a.ok for a in response.attempts] == [False, True]
    assert clock.sleeps == []


def test_every_provider_failing_raises_the_last_error_with_all_attempts(
    fakes: dict[str, FakeVendorServer], clock: ManualClock
) -> None:
    config = _config(
        "anthropic",
        fakes["anthropic"],
        "a",
        fallback=(
            _config("openai", fakes["openai"], "b"),
            _config("openrouter", fakes["openrouter"], "c"),
        ),
    )
    provider = build_provider(config, env={}, clock=clock)
    try:
        fakes["anthropic"].push(Fail(500, "x"), Fail(500, "x"))
        fakes["openai"].push(Fail(400, "bad request"))
        fakes["openrouter"].push(Fail(503, "y"), Fail(503, "y"))
        with pytest.raises(ProviderError) as info:
            provider.complete(request("a"), step=0)
    finally:
        provider.close()
    assert info.value.status == 503 and info.value.retryable
    assert "anthropic" in str(info.value) and "openai" in str(info.value)
    assert isinstance(provider, Fallback)
    assert [a.provider for a in provider.last_attempts] == ["anthropic"] * 2 + ["openai"] + [
        "openrouter"
    ] * 2


class _Misconfigured:
    name = "broken"

    def complete(
        self, request: CompletionRequest, *, step: int, on_token: TokenCallback | None = None
    ) -> CompletionResponse:
        raise ConfigError("cannot carry this")

    def close(self) -> None:
        pass


class _Fixed:
    name = "fixed"

    def __init__(self) -> None:
        self.calls = 0

    def complete(
        self, request: CompletionRequest, *, step: int, on_token: TokenCallback | None = None
    ) -> CompletionResponse:
        self.calls += 1
        return CompletionResponse(text="fixed", model=request.model, provider=self.name)

    def close(self) -> None:
        pass


def test_a_config_error_is_not_fallen_over(clock: ManualClock) -> None:
    backup = _Fixed()
    chain = Fallback([_Misconfigured(), backup], clock=clock)
    with pytest.raises(ConfigError):
        chain.complete(request(), step=0)
    assert backup.calls == 0


def test_a_provider_without_attempts_gets_one_recorded(clock: ManualClock) -> None:
    chain = Fallback([_Fixed()], models=["ignored-for-primary"], clock=clock)
    response = chain.complete(request("asked"), step=0)
    assert response.model == "asked"
    assert [(a.provider, a.ok) for a in response.attempts] == [("fixed", True)]


def test_build_provider_rejects_unknown_kinds_and_nested_fallbacks(clock: ManualClock) -> None:
    with pytest.raises(ConfigError, match="unknown provider kind"):
        build_provider(ProviderConfig(kind="gemini", model="m"), env={}, clock=clock)
    inner = ProviderConfig(
        kind="openai",
        model="m",
        api_key="k",
        fallback=(ProviderConfig(kind="openai", api_key="k"),),
    )
    outer = ProviderConfig(kind="openai", model="m", api_key="k", fallback=(inner,))
    with pytest.raises(ConfigError, match="cannot list fallbacks"):
        build_provider(outer, env={}, clock=clock)


def test_build_provider_checks_web_on_every_provider_in_the_chain(clock: ManualClock) -> None:
    web = WebAccess(search=True, allowed_domains=("a.org",))
    config = ProviderConfig(
        kind="anthropic",
        model="m",
        api_key="k",
        web=web,
        fallback=(ProviderConfig(kind="openrouter", model="m", api_key="k", web=web),),
    )
    with pytest.raises(ConfigError, match="openrouter"):
        build_provider(config, env={}, clock=clock)


def test_build_provider_reads_the_key_from_env(clock: ManualClock) -> None:
    with start_vendor_server("anthropic") as fake:
        config = ProviderConfig(kind="anthropic", model="m", base_url=fake.base_url)
        provider = build_provider(config, env={"ANTHROPIC_API_KEY": "env-key"}, clock=clock)
        fake.push(Turn(text="ok"))
        try:
            assert provider.complete(request(), step=0).text == "ok"
        finally:
            provider.close()
        assert fake.requests[0].headers["x-api-key"] == "env-key"


def test_the_kind_table_names_scripted_and_the_four_vendor_kinds() -> None:
    assert PROVIDER_KINDS["scripted"] == "harness_core.providers.scripted:ScriptedProvider"
    assert set(PROVIDER_KINDS) == {
        "anthropic",
        "openai",
        "openai-responses",
        "openrouter",
        "scripted",
    }


def test_httpx_is_imported_when_an_http_provider_is_built_and_never_for_scripted(
    tmp_path: Path,
) -> None:
    script = tmp_path / "replay.jsonl"
    script.write_text('{"text": "hi"}\n')
    code = (
        "import sys\n"
        "from harness_core.clock import SystemClock\n"
        "import harness_core.providers as p\n"
        "p.validate_web('openai', None)\n"
        "assert 'httpx' not in sys.modules, 'httpx imported by the package'\n"
        f"s = p.build_provider(p.ProviderConfig(kind='scripted', script={str(script)!r}),"
        " env={}, clock=SystemClock())\n"
        "s.complete(p.CompletionRequest(model='m', messages=()), step=0); s.close()\n"
        "assert 'httpx' not in sys.modules, 'httpx imported by the scripted provider'\n"
        "o = p.build_provider(p.ProviderConfig(kind='openai', model='m', api_key='k',"
        " base_url='http://127.0.0.1:9/v1'),"
        " env={}, clock=SystemClock())\n"
        "assert 'httpx' in sys.modules\n"
        "assert 'httpx._main' not in sys.modules, 'the httpx CLI was imported'\n"
        "assert 'trio' not in sys.modules, 'httpcore imported trio'\n"
        "assert 'h2' not in sys.modules, 'h2 imported for a plain-http provider'\n"
        "import importlib.util\n"
        "if importlib.util.find_spec('trio') is not None:\n"
        "    import trio  # still importable by anything else\n"
        "import httpx\n"
        "assert isinstance(o.client, httpx.Client)\n"
        "o.close()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
