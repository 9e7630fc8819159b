"""Starting a server is an exec act: checked by the gate before anything is spawned. A
refused server fails the start unless it is optional; an optional one is reported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness_core.errors import McpUnavailable
from harness_core.events import Event, EventKind
from harness_core.mcp import McpServerConfig
from harness_core.policy import ActKind, ApproveAll, DenyAll, Policy, Tier, Verdict

from .conftest import live_descendants, make_gate, start, time_server


def test_a_denied_server_is_not_started_and_is_reported_with_rule_and_layer(
        tmp_path: Path) -> None:
    events: list[Event] = []
    gate = make_gate(Policy.from_lists(tier=Tier.FULL, deny_exec=["mcp-server-time*"]),
                     events=events)
    before = live_descendants()
    with start([McpServerConfig("time", "mcp-server-time", optional=True)], tmp_path,
               gate=gate) as session:
        assert session.tools == [] and session.servers == () and session.failures == []
        assert live_descendants() == before
        [refusal] = session.refusals
        assert refusal.server == "time"
        assert refusal.act.kind is ActKind.EXEC and refusal.act.argv == ("mcp-server-time",)
        assert refusal.decision.verdict is Verdict.DENY
        assert refusal.decision.rule == "mcp-server-time*"
        assert refusal.decision.layer == "project"
        assert "mcp-server-time*" in refusal.describe() and "'time'" in refusal.describe()
    [event] = events
    assert event.kind is EventKind.REFUSAL


def test_the_whole_argv_is_checked_so_a_deny_on_the_interpreter_stops_a_module_server(
        tmp_path: Path) -> None:
    gate = make_gate(Policy.from_lists(tier=Tier.FULL, deny_exec=["*python* -m mcp_server*"]))
    config = McpServerConfig("time", sys.executable, ("-m", "mcp_server_time"), optional=True)
    with start([config], tmp_path, gate=gate) as session:
        assert session.tools == []
        [refusal] = session.refusals
        assert refusal.act.argv == (sys.executable, "-m", "mcp_server_time")
        assert refusal.decision.rule == "*python* -m mcp_server*"


def test_a_refused_server_does_not_stop_an_allowed_one(tmp_path: Path) -> None:
    gate = make_gate(Policy.from_lists(tier=Tier.FULL, deny_exec=["forbidden-server*"]))
    configs = [McpServerConfig("bad", "forbidden-server", optional=True), time_server()]
    with start(configs, tmp_path, gate=gate) as session:
        assert [r.server for r in session.refusals] == ["bad"]
        assert session.servers == ("time",)
        assert len(session.tools) == 2


def test_an_ask_without_an_approver_keeps_the_server_off_without_raising(
        tmp_path: Path) -> None:
    gate = make_gate(Policy.from_lists(tier=Tier.WORKSPACE_WRITE))
    with start([time_server(optional=True)], tmp_path, gate=gate) as session:
        [refusal] = session.refusals
        assert refusal.decision.verdict is Verdict.DENY
        assert "approval" in refusal.decision.reason
        assert refusal.decision.layer == "tier"
        assert session.tools == []


def test_an_approvers_no_is_a_refusal_recorded_by_the_gate(tmp_path: Path) -> None:
    events: list[Event] = []
    gate = make_gate(Policy.from_lists(tier=Tier.WORKSPACE_WRITE), approver=DenyAll(),
                     events=events)
    with start([time_server(optional=True)], tmp_path, gate=gate) as session:
        assert [r.server for r in session.refusals] == ["time"]
    assert [e.kind for e in events] == [EventKind.REFUSAL]


def test_an_approvers_yes_starts_the_server(tmp_path: Path) -> None:
    gate = make_gate(Policy.from_lists(tier=Tier.WORKSPACE_WRITE), approver=ApproveAll())
    with start([time_server()], tmp_path, gate=gate) as session:
        assert session.refusals == []
        assert session.servers == ("time",)


def test_a_refused_server_that_is_not_optional_fails_the_start_naming_rule_and_layer(
        tmp_path: Path) -> None:
    gate = make_gate(Policy.from_lists(tier=Tier.FULL, deny_exec=["forbidden-server*"]))
    before = live_descendants()
    with pytest.raises(McpUnavailable) as caught:
        start([time_server(), McpServerConfig("bad", "forbidden-server")], tmp_path, gate=gate)
    message = caught.value.message
    assert "'bad'" in message and "forbidden-server*" in message and "project" in message
    assert "optional" in (caught.value.hint or "")
    assert live_descendants() == before  # the allowed server was stopped again
