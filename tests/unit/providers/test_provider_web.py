"""Provider-executed web access: what each vendor can carry, how it is declared, what comes back."""

from __future__ import annotations

import pytest

from harness_core.errors import ConfigError
from harness_core.providers import Citation, ServerToolCall, WebAccess, validate_web
from tests.fakes.vendor_server import FakeVendorServer, Turn
from tests.unit.providers.conftest import MakeProvider, request

SEARCH = WebAccess(search=True)
ALLOW = WebAccess(search=True, allowed_domains=("docs.python.org",))
BLOCK = WebAccess(search=True, blocked_domains=("example.com",))
BOTH_FILTERS = WebAccess(search=True, allowed_domains=("a.org",), blocked_domains=("b.org",))
FETCH = WebAccess(fetch=True)
CAPPED = WebAccess(search=True, max_uses=3)

# kind, declaration, refused-because (None: carried)
TABLE = [
    ("anthropic", SEARCH, None),
    ("anthropic", ALLOW, None),
    ("anthropic", BLOCK, None),
    ("anthropic", FETCH, None),
    ("anthropic", CAPPED, None),
    ("anthropic", BOTH_FILTERS, "together"),
    ("openai", SEARCH, None),
    ("openai", ALLOW, None),
    ("openai", BLOCK, "blocked_domains"),
    ("openai", FETCH, "fetch"),
    ("openai", CAPPED, "max_uses"),
    ("openrouter", SEARCH, None),
    ("openrouter", CAPPED, None),
    ("openrouter", ALLOW, "domain filter"),
    ("openrouter", BLOCK, "domain filter"),
    ("openrouter", FETCH, "fetch"),
    ("scripted", FETCH, None),
    (
        "openai",
        WebAccess(blocked_domains=("x.org",)),
        None,
    ),  # nothing switched on: nothing to carry
    ("anthropic", WebAccess(search=True, max_uses=0), "at least 1"),
]


@pytest.mark.parametrize(("kind", "web", "refused"), TABLE)
def test_validate_web_refuses_what_the_vendor_cannot_carry(
    kind: str, web: WebAccess, refused: str | None
) -> None:
    if refused is None:
        validate_web(kind, web)
    else:
        with pytest.raises(ConfigError, match=refused):
            validate_web(kind, web)


def test_validate_web_rejects_an_unknown_kind() -> None:
    with pytest.raises(ConfigError, match="unknown provider kind"):
        validate_web("gemini", SEARCH)


@pytest.mark.parametrize(
    ("kind", "web"),
    [("openai", FETCH), ("openai", BLOCK), ("openrouter", ALLOW), ("openrouter", FETCH)],
)
def test_an_uncarriable_declaration_fails_before_any_request(
    kind: str, web: WebAccess, make_provider: MakeProvider
) -> None:
    from tests.fakes.vendor_server import start_vendor_server

    with start_vendor_server(kind) as fake:  # type: ignore[arg-type]
        with pytest.raises(ConfigError):
            make_provider(kind, fake, web=web)
        provider = make_provider(kind, fake)
        with pytest.raises(ConfigError):
            provider.complete(request(web=web), step=0)
        assert fake.requests == []


CITED = ({"url": "https://docs.python.org/3/", "title": "Python docs", "cited_text": "Python is"},)


@pytest.mark.parametrize("vendor", ["anthropic"])
@pytest.mark.parametrize("stream", [True, False])
def test_anthropic_declares_server_tools_and_records_citations(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, stream: bool
) -> None:
    web = WebAccess(search=True, fetch=True, allowed_domains=("docs.python.org",), max_uses=2)
    provider = make_provider(vendor, server, stream=stream, web=web)
    server.push(
        Turn(
            text="Python is a language.",
            citations=CITED,
            server_tools=(("web_search", {"query": "python"}),),
            usage={
                "input_tokens": 5,
                "output_tokens": 3,
                "server_tool_use": {"web_search_requests": 1},
            },
            pieces=3,
        )
    )
    response = provider.complete(request(web=web), step=0)

    sent = server.requests[0]
    tools = {t.get("type"): t for t in sent.body["tools"]}
    assert tools["web_search_20250305"] == {
        "type": "web_search_20250305",
        "name": "web_search",
        "allowed_domains": ["docs.python.org"],
        "max_uses": 2,
    }
    assert tools["web_fetch_20250910"]["name"] == "web_fetch"
    assert sent.headers["anthropic-beta"] == "web-fetch-2025-09-10"
    assert response.citations == (
        Citation("https://docs.python.org/3/", "Python docs", "Python is"),
    )
    assert response.server_tool_calls == (ServerToolCall("web_search", {"query": "python"}),)
    assert response.usage.server_tool_requests == 1
    assert response.text == "Python is a language."
    assert server.violations == []


@pytest.mark.parametrize("vendor", ["openai", "openrouter"])
@pytest.mark.parametrize("stream", [True, False])
def test_openai_declares_web_search_options_and_records_annotations(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider, stream: bool
) -> None:
    web = ALLOW if vendor == "openai" else CAPPED
    provider = make_provider(vendor, server, stream=stream, web=web)
    server.push(Turn(text="See the docs.", citations=CITED))
    response = provider.complete(request(web=web), step=0)

    body = server.requests[0].body
    if vendor == "openai":
        assert body["web_search_options"] == {"filters": {"allowed_domains": ["docs.python.org"]}}
        assert "plugins" not in body
    else:
        assert body["plugins"] == [{"id": "web", "max_results": 3}]
        assert "web_search_options" not in body
    assert response.citations == (Citation("https://docs.python.org/3/", "Python docs", None),)
    assert response.usage.server_tool_requests is None  # not reported by these vendors
    assert server.violations == []


def test_no_web_declaration_sends_no_web_fields(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server)
    server.push(Turn(text="ok"))
    provider.complete(request(), step=0)
    body = server.requests[0].body
    assert "plugins" not in body and "web_search_options" not in body
    assert all("type" not in t or t["type"] == "function" for t in body.get("tools", []))


def test_the_configured_declaration_applies_to_requests_without_one(
    vendor: str, server: FakeVendorServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(vendor, server, web=SEARCH)
    server.push(Turn(text="ok"))
    provider.complete(request(), step=0)
    body = server.requests[0].body
    declared = {
        "anthropic": any(t.get("type") == "web_search_20250305" for t in body["tools"]),
        "openai": "web_search_options" in body,
        "openrouter": body.get("plugins") == [{"id": "web"}],
        "openai-responses": {"type": "web_search"} in body["tools"],
    }
    assert declared[vendor]
