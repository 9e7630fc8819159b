"""What a run's MCP servers tell the person running it, pinned to exact values (mutation
testing's survivors in `run/_open.py`, `start_mcp`): a notice from the session (here, a
listed tool not offered because its name holds '/') reaches the run's events as a
warning of that run. A real stdio MCP server (the fixture of tests/integration/mcp)."""

from __future__ import annotations

from pathlib import Path

from harness_core import EventKind, Policy, Runner, RunStatus, Store
from tests.fakes.clock import ManualClock
from tests.integration.mcp.conftest import ENV, fixture_server
from tests.unit.run.loop_support import line, scripted, workspace
from tests.unit.session.support import Events, spec_for


def test_a_notice_of_the_mcp_session_is_a_warning_of_the_run(tmp_path: Path) -> None:
    spec = spec_for(workspace(tmp_path), "go", env=ENV,
                    mcp=(fixture_server("fx", FIXTURE_SLASH_TOOLS="1"),),
                    policy=Policy.from_lists(tier="full"))
    events = Events()
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, [line("done")]), clock=ManualClock(),
                      on_event=events).start(spec)
        assert done.status is RunStatus.FINISHED
    warnings = [(e.run_id, e.data) for e in events.seen if e.kind is EventKind.WARNING]
    assert warnings == [(done.run_id, {"mcp": (
        "MCP server 'fx' lists a tool named 'a/delete_x'; a tool name holding '/' is not"
        " offered (policy rules name server/tool)")})]
