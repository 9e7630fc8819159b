"""The real `mcp-server-time` from PyPI: started, listed, called through the `Tool` seam."""

from __future__ import annotations

import json
from pathlib import Path

from harness_core.mcp import McpSession
from harness_core.tools import RESERVED_TOOL_NAMES, Tool, Toolbox

from .conftest import tool_context


def _tool(session: McpSession, name: str) -> Tool:
    return next(t for t in session.tools if t.spec.name == name)


def test_the_time_server_starts_and_lists_its_tools_under_the_prefix(
        time_session: McpSession) -> None:
    assert time_session.refusals == [] and time_session.failures == []
    assert time_session.servers == ("time",)
    names = sorted(t.spec.name for t in time_session.tools)
    assert names == ["mcp__time__convert_time", "mcp__time__get_current_time"]


def test_a_listed_tool_carries_the_servers_description_and_input_schema(
        time_session: McpSession) -> None:
    spec = _tool(time_session, "mcp__time__get_current_time").spec
    assert "time" in spec.description.lower()
    assert spec.parameters["type"] == "object"
    assert "timezone" in spec.parameters["properties"]
    assert "timezone" in spec.parameters.get("required", [])


def test_get_current_time_in_utc_returns_the_time_as_an_outcome(
        time_session: McpSession, tmp_path: Path) -> None:
    outcome = _tool(time_session, "mcp__time__get_current_time").run(
        {"timezone": "UTC"}, tool_context(tmp_path))
    assert not outcome.is_error
    body = json.loads(outcome.output)
    assert body["timezone"] == "UTC"
    assert body["datetime"].endswith("+00:00")
    assert outcome.data.server == "time"
    assert outcome.data.tool == "get_current_time"
    assert outcome.data.structured["timezone"] == "UTC"


def test_convert_time_is_called_with_its_own_arguments(
        time_session: McpSession, tmp_path: Path) -> None:
    outcome = _tool(time_session, "mcp__time__convert_time").run(
        {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        tool_context(tmp_path))
    assert not outcome.is_error, outcome.output
    body = json.loads(outcome.output)
    assert body["target"]["timezone"] == "Asia/Tokyo"
    assert "T21:00" in body["target"]["datetime"]


def test_a_server_side_error_becomes_an_error_outcome(
        time_session: McpSession, tmp_path: Path) -> None:
    outcome = _tool(time_session, "mcp__time__get_current_time").run(
        {"timezone": "Not/AZone"}, tool_context(tmp_path))
    assert outcome.is_error
    assert "Not/AZone" in outcome.output


def test_an_unknown_tool_on_a_started_server_is_an_error_result_not_an_exception(
        time_session: McpSession) -> None:
    result = time_session.call_tool("time", "no_such_tool", {}, 10)
    assert result.is_error and "no_such_tool" in result.text


def test_the_tools_join_the_builtins_in_a_toolbox_without_any_collision(
        time_session: McpSession, tmp_path: Path) -> None:
    box = Toolbox.builtins(include_shell=True)
    for tool in time_session.tools:
        box.add(tool)
        assert tool.spec.name.startswith("mcp__")
        assert tool.spec.name not in RESERVED_TOOL_NAMES
    from harness_core.messages import ToolCall

    outcome = box.call(ToolCall("c1", "mcp__time__get_current_time", {"timezone": "UTC"}),
                       tool_context(tmp_path))
    assert not outcome.is_error


def test_the_output_is_bounded_by_the_contexts_cap(
        time_session: McpSession, tmp_path: Path) -> None:
    outcome = _tool(time_session, "mcp__time__get_current_time").run(
        {"timezone": "UTC"}, tool_context(tmp_path, output_cap=20))
    assert "[output truncated:" in outcome.output
    assert outcome.data.truncated_bytes > 0
    assert outcome.data.structured is None and "structured" not in outcome.data.to_json()
