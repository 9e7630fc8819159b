"""Remote MCP servers over streamable HTTP: a real SDK server on 127.0.0.1 (uvicorn in a
thread), reached through io's client under the policy. The host is a net act, each
tool call an mcp act; a refused host or tool never reaches the server."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from harness_core.errors import McpUnavailable
from harness_core.events import Event, EventKind
from harness_core.mcp import McpCallResult, McpServerConfig, McpTool, McpToolInfo
from harness_core.policy import ApprovalMode, Decision, Policy, Tier, Verdict
from harness_core.sandbox import Admission
from tests.integration.mcp.conftest import make_gate, start, tool_context
from tests.integration.mcp.http_fixture import CALLS, HttpServer


@pytest.fixture
def remote() -> Iterator[HttpServer]:
    server = HttpServer()
    CALLS.clear()
    yield server
    server.close()


def _policy(server: HttpServer, **rules: list[str]) -> Policy:
    return Policy.from_lists(tier=Tier.WORKSPACE_WRITE, approval=ApprovalMode.DENY,
                             allow_net=[f"127.0.0.1:{server.port}"], **rules)


def _tool(tools: list[object], name: str) -> McpTool:
    found = [t for t in tools if isinstance(t, McpTool) and t.spec.name == name]
    assert found, f"{name} not offered"
    return found[0]


def test_a_remote_tool_call_goes_through_the_policy_for_its_host_and_its_tool(
        remote: HttpServer, tmp_path: Path) -> None:
    policy = _policy(remote, allow_mcp=["remote/echo"])
    events: list[Event] = []
    gate = make_gate(policy, events=events)
    with start([McpServerConfig("remote", url=remote.url)], tmp_path, gate=gate) as session:
        ctx = tool_context(tmp_path)
        ctx.gate = gate
        outcome = _tool(session.tools, "mcp__remote__echo").run({"text": "hi"}, ctx)
        assert (outcome.output, outcome.is_error) == ("echo: hi", False)
        refused = _tool(session.tools, "mcp__remote__grow").run({}, ctx)
    assert refused.is_error and refused.refused is not None
    assert refused.refused.act == "mcp" and "remote/grow" in refused.output
    assert CALLS == ["hi"]  # the refused tool was never sent
    assert [e.data["target"] for e in events if e.kind is EventKind.REFUSAL] == [
        "mcp remote/grow"]


def test_a_denied_tool_is_refused_by_its_rule_even_when_the_server_is_allowed(
        remote: HttpServer, tmp_path: Path) -> None:
    gate = make_gate(_policy(remote, allow_mcp=["remote/*"], deny_mcp=["*/echo"]))
    with start([McpServerConfig("remote", url=remote.url)], tmp_path, gate=gate) as session:
        ctx = tool_context(tmp_path)
        ctx.gate = gate
        outcome = _tool(session.tools, "mcp__remote__echo").run({"text": "no"}, ctx)
    assert outcome.refused is not None
    assert (outcome.refused.rule, outcome.refused.layer) == ("*/echo", "project")
    assert CALLS == []


def test_a_refused_host_fails_the_start_and_is_never_dialled(
        remote: HttpServer, tmp_path: Path) -> None:
    gate = make_gate(Policy.from_lists(tier=Tier.FULL, deny_net=["127.0.0.1"]))
    with pytest.raises(McpUnavailable) as caught:
        start([McpServerConfig("remote", url=remote.url)], tmp_path, gate=gate)
    assert f"net 127.0.0.1:{remote.port}" in caught.value.message
    assert "'127.0.0.1'" in caught.value.message  # the rule that refused
    assert remote.seen == []


def test_an_optional_refused_server_is_reported_and_the_session_goes_on(
        remote: HttpServer, tmp_path: Path) -> None:
    gate = make_gate(Policy.from_lists(tier=Tier.WORKSPACE_WRITE, approval=ApprovalMode.DENY))
    config = McpServerConfig("remote", url=remote.url, optional=True)
    with start([config], tmp_path, gate=gate) as session:
        assert session.tools == [] and session.failures == []
        (refusal,) = session.refusals
    assert refusal.act.describe() == f"net 127.0.0.1:{remote.port}"
    assert refusal.decision.layer == "tier"
    assert remote.seen == []


def test_an_unreachable_server_fails_the_start_unless_optional(tmp_path: Path) -> None:
    closed = HttpServer()
    url = closed.url
    closed.close()  # nothing listens on that port any more
    gate = make_gate(Policy.from_lists(tier=Tier.FULL))
    with pytest.raises(McpUnavailable) as caught:
        start([McpServerConfig("gone", url=url)], tmp_path, gate=gate, timeout=10)
    assert "'gone'" in caught.value.message and caught.value.hint
    with start([McpServerConfig("gone", url=url, optional=True)], tmp_path, gate=gate,
               timeout=10) as session:
        (failure,) = session.failures
    assert failure.server == "gone"


def test_headers_reach_the_server_and_stay_out_of_repr(tmp_path: Path) -> None:
    server = HttpServer(token="s3cr3t-header-value")
    try:
        config = McpServerConfig("remote", url=server.url,
                                 headers={"Authorization": "Bearer s3cr3t-header-value"})
        assert "s3cr3t" not in repr(config)
        with start([config], tmp_path) as session:
            result = session.call_tool("remote", "echo", {"text": "with key"}, 20)
        assert result.text == "echo: with key"
        assert {auth for _, _, auth in server.seen} == {"Bearer s3cr3t-header-value"}
    finally:
        server.close()


def test_a_lost_session_is_replaced_and_the_call_runs_exactly_once(
        remote: HttpServer, tmp_path: Path) -> None:
    with start([McpServerConfig("remote", url=remote.url)], tmp_path) as session:
        assert session.call_tool("remote", "echo", {"text": "one"}, 20).text == "echo: one"
        remote.forget_sessions()
        again = session.call_tool("remote", "echo", {"text": "two"}, 20)
        assert (again.text, again.is_error) == ("echo: two", False)
    assert CALLS == ["one", "two"]
    initializes = [path for method, path, _ in remote.seen if method == "POST"]
    assert len(initializes) >= 4  # initialize, initialized, list, echo … then again


def test_a_tools_list_changed_notification_refreshes_the_listing(
        remote: HttpServer, tmp_path: Path) -> None:
    with start([McpServerConfig("remote", url=remote.url)], tmp_path) as session:
        assert "sprout" not in {t.name for t in session.listed_tools("remote")}
        assert session.call_tool("remote", "grow", {}, 20).text == "grown"
        deadline = 200
        while "sprout" not in {t.name for t in session.listed_tools("remote")} and deadline:
            session.call_tool("remote", "echo", {"text": "tick"}, 20)  # lets the loop run
            deadline -= 1
        assert "sprout" in {t.name for t in session.listed_tools("remote")}


def test_a_mute_server_fails_at_the_start_timeout_not_after_the_authorization_wait(
        tmp_path: Path) -> None:
    # Accepts connections and never answers: only an authorization may extend a start.
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        url = f"http://127.0.0.1:{mute.getsockname()[1]}/mcp"
        with pytest.raises(McpUnavailable) as caught:
            start([McpServerConfig("mute", url=url)], tmp_path, timeout=1,
                  notice=lambda text: None)
    assert "within 1 s" in caught.value.message


class _Listing:
    """A caller whose server re-lists its tools (as after tools/list_changed)."""

    def __init__(self, info: McpToolInfo) -> None:
        self.listed = (info,)

    def call_tool(self, server: str, tool: str, arguments: dict[str, Any],
                  timeout: float) -> McpCallResult:
        return McpCallResult("unused")

    def listed_tools(self, server: str) -> tuple[McpToolInfo, ...]:
        return self.listed


def test_a_tools_spec_follows_the_servers_current_listing() -> None:
    before = McpToolInfo("search", "Search v1.", {"type": "object", "properties": {}})
    caller = _Listing(before)
    tool = McpTool("remote", before, "mcp__remote__search", caller)
    assert tool.spec.description == "Search v1."
    after = McpToolInfo("search", "Search v2.",
                        {"type": "object", "properties": {"q": {"type": "string"}}})
    caller.listed = (after,)
    assert (tool.spec.name, tool.spec.description) == ("mcp__remote__search", "Search v2.")
    assert tool.spec.parameters == after.input_schema
    caller.listed = ()  # the server dropped it: the last known spec stays
    assert tool.spec.description == "Search v2."


PINNED = "mcp-pinned.invalid"
"""A name no resolver answers (RFC 6761): only the admitted addresses can reach it."""


def _admitting(*addresses: str) -> tuple[list[tuple[str, int]], Callable[[str, int], Admission]]:
    asked: list[tuple[str, int]] = []

    def net(host: str, port: int) -> Admission:
        asked.append((host, port))
        return Admission(True, "checked by name and address",
                         tuple(ipaddress.ip_address(a) for a in addresses))

    return asked, net


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_the_client_dials_the_addresses_the_egress_check_admitted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tls: bool) -> None:
    # As the egress proxy does: the name is resolved once, by the check, and the client
    # dials the checked addresses in order (::1 has no listener here: the next one is
    # tried), never a second lookup; `Host` and the TLS server name stay the name.
    pem = None
    if tls:
        ca = trustme.CA()
        pem = str(tmp_path / "server.pem")
        ca.issue_cert(PINNED).private_key_and_cert_chain_pem.write_to_path(pem)
        ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    server = HttpServer(name=PINNED, tls_pem=pem)
    CALLS.clear()
    try:
        asked, net = _admitting("::1", "127.0.0.1")
        gate = make_gate(Policy.from_lists(tier=Tier.FULL, allow_mcp=["pinned/*"]))
        with start([McpServerConfig("pinned", url=server.url)], tmp_path, gate=gate,
                   net=net) as session:
            ctx = tool_context(tmp_path)
            ctx.gate = gate
            outcome = _tool(session.tools, "mcp__pinned__echo").run({"text": "hi"}, ctx)
        assert (outcome.output, outcome.is_error) == ("echo: hi", False)
        assert CALLS == ["hi"]
        assert asked == [(PINNED, server.port)]  # decided once, for the session
        assert server.hosts and set(server.hosts) == {f"{PINNED}:{server.port}"}
    finally:
        server.close()


def test_negative_control_a_decision_without_addresses_dials_the_name_which_resolves_to_none(
        tmp_path: Path) -> None:
    server = HttpServer(name=PINNED)
    try:
        with pytest.raises(McpUnavailable):
            start([McpServerConfig("pinned", url=server.url)], tmp_path, timeout=5,
                  net=lambda host, port: Decision(Verdict.ALLOW, "by name only")).close()
        assert server.seen == []
    finally:
        server.close()


def test_an_admission_without_addresses_is_refused_as_the_proxy_refuses_it(
        tmp_path: Path) -> None:
    server = HttpServer(name=PINNED)
    try:
        _, net = _admitting()
        with pytest.raises(McpUnavailable, match="no address"):
            start([McpServerConfig("pinned", url=server.url)], tmp_path, net=net,
                  timeout=5).close()
        assert server.seen == []
    finally:
        server.close()
