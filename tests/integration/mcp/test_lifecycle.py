"""Start failures are reports, and `close` leaves no process and no thread behind."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness_core.errors import McpUnavailable
from harness_core.mcp import McpServerConfig, McpSession

from .conftest import (
    fixture_server,
    is_alive,
    live_descendants,
    loop_threads,
    start,
    time_server,
    tool_context,
    wait_for,
)


def test_close_stops_every_server_its_grandchildren_and_the_loop_thread(
        tmp_path: Path) -> None:
    before = live_descendants()
    session = start([time_server(), fixture_server()], tmp_path)
    assert sorted(session.servers) == ["fx", "time"]
    # A grandchild in a session of its own: outside the server's process group.
    result = session.call_tool("fx", "spawn_sleeper", {}, 10)
    assert not result.is_error, result.text
    grandchild = int(result.text)
    started = live_descendants() - before
    assert len(started) >= 3 and grandchild in started
    assert loop_threads()
    session.close()
    assert wait_for(lambda: not (live_descendants() & started)), live_descendants() & started
    assert not is_alive(grandchild)
    assert not loop_threads()
    assert session.servers == ()


def test_close_is_idempotent_and_a_closed_sessions_tools_answer_with_an_error(
        tmp_path: Path) -> None:
    with start([time_server()], tmp_path) as session:
        tool = session.tools[0]
    session.close()
    session.close()
    outcome = tool.run({"timezone": "UTC"}, tool_context(tmp_path))
    assert outcome.is_error and "not running" in outcome.output


def test_a_command_that_does_not_exist_is_a_failure_report_not_an_exception(
        tmp_path: Path) -> None:
    before = live_descendants()
    with start([McpServerConfig("ghost", "no-such-mcp-server-anywhere", optional=True)],
               tmp_path) as session:
        assert session.tools == [] and session.refusals == []
        [failure] = session.failures
        assert failure.server == "ghost"
        assert "no-such-mcp-server-anywhere" in failure.message
        assert "not found" in failure.message
    assert live_descendants() == before


def test_a_server_that_does_not_start_fails_the_start_with_its_stderr_unless_optional(
        tmp_path: Path) -> None:
    config = McpServerConfig(
        "quits", sys.executable, ("-c", "import sys; sys.stderr.write('cannot start: no token\\n')"))
    before = live_descendants()
    with pytest.raises(McpUnavailable) as caught:
        start([config, time_server()], tmp_path)
    assert "'quits'" in caught.value.message and "cannot start: no token" in caught.value.message
    assert wait_for(lambda: live_descendants() <= before)


def test_a_server_that_exits_at_start_is_reported_with_its_stderr(tmp_path: Path) -> None:
    config = McpServerConfig(
        "quits", sys.executable, ("-c", "import sys; sys.stderr.write('cannot start: no token\\n')"),
        optional=True)
    with start([config, time_server()], tmp_path) as session:
        [failure] = session.failures
        assert failure.server == "quits"
        assert "did not start" in failure.message
        assert "cannot start: no token" in failure.message
        assert session.servers == ("time",)


def test_a_server_that_never_answers_is_stopped_at_the_start_timeout(tmp_path: Path) -> None:
    before = live_descendants()
    # Reads its stdin and never answers; leaves at once when stdin closes.
    config = McpServerConfig("mute", sys.executable, ("-c", "import sys\nfor _ in sys.stdin: pass"),
                             optional=True)
    with start([config], tmp_path, timeout=1) as session:
        [failure] = session.failures
        assert "within 1 s" in failure.message
    assert wait_for(lambda: live_descendants() <= before)


def test_a_server_that_dies_mid_run_makes_its_tools_error_outcomes(tmp_path: Path) -> None:
    with start([fixture_server()], tmp_path) as session:
        crashed = session.call_tool("fx", "crash", {}, 10)
        assert crashed.is_error
        after = session.call_tool("fx", "dotted.name", {}, 10)
        assert after.is_error and "not running" in after.text
        assert "crashing on purpose" in after.text
        assert session.servers == ()


def test_an_empty_session_needs_no_sdk_and_closes(tmp_path: Path) -> None:
    with McpSession() as empty:
        assert empty.tools == [] and empty.servers == ()
    with start([], tmp_path) as none_configured:
        assert none_configured.tools == []
