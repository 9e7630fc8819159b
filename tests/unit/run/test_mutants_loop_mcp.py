"""The run loop's MCP servers pinned (mutation testing's survivors in `run/_loop.py`):
a run offers the tools of the servers it started, reports a server the policy refused
and one that failed to start as warnings and goes on without them, and ends its servers
with the run. A real stdio MCP server (the fixture of tests/integration/mcp)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_core import EventKind, Policy, Runner, RunStatus, Store
from harness_core.mcp import McpServerConfig
from harness_core.providers._config import ProviderConfig
from harness_core.providers.scripted import ScriptedProvider
from tests.fakes.clock import ManualClock
from tests.integration.mcp.conftest import ENV, fixture_server, live_descendants
from tests.unit.session.support import Events, spec_for


class _Closable:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_a_run_offers_its_servers_tools_and_reports_the_ones_that_did_not_start(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    lines: list[dict[str, Any]] = [
        {"text": "ask", "usage": usage, "tool_calls": [
            {"name": "mcp__fx__env_value", "arguments": {"name": "SERVER_ONLY"}}]},
        {"text": "done", "usage": usage}]
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    servers = (fixture_server("fx", SERVER_ONLY="from-the-table"),
               McpServerConfig("denied", "mcp-denied-bin", optional=True),
               McpServerConfig("broken", str(tmp_path / "no-such-server"), optional=True))
    spec = spec_for(ws, "go", mcp=servers, env=ENV,
                    policy=Policy.from_lists(tier="full", deny_exec=["mcp-denied-bin*"]))
    events = Events()
    before = live_descendants()
    extra = _Closable()  # a caller's extra named like the drive's own MCP session
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, ScriptedProvider(ProviderConfig(kind="scripted", script=script)),
                         clock=ManualClock(), on_event=events,
                         extras=lambda run_id, ctx: {"mcp": extra}).start(spec)
        assert outcome.status is RunStatus.FINISHED
        (entry,) = store.ledger(outcome.run_id)
        assert (entry.name, entry.is_error) == ("mcp__fx__env_value", False)
        assert "from-the-table" in (entry.observation or "")
    warnings = [e for e in events.seen if e.kind is EventKind.WARNING]
    assert [sorted(e.data) for e in warnings] == [["mcp"], ["mcp"]]
    assert all(e.run_id == outcome.run_id for e in warnings)
    refused, failed = (e.data["mcp"] for e in warnings)
    assert "'denied'" in refused and "mcp-denied-bin*" in refused
    assert "broken" in failed
    assert live_descendants() == before  # the server ended with the run
    assert extra.closed is True  # and so did the extra
