"""`io run` with a real MCP server from PyPI (mcp-server-time): its start goes through the
policy, each tool call too (allow_mcp), its tools reach the model, a server that cannot
start fails the run unless optional, and nothing is left running."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

pytestmark = pytest.mark.skipif(shutil.which("mcp-server-time") is None,
                                reason="mcp-server-time is not installed (pip install -e '.[dev]')")

MCP = '[[mcp]]\nname = "time"\ncommand = "mcp-server-time"\nargs = []\n'
ALLOW = '[policy]\nallow_exec = ["mcp-server-time*"]\nallow_mcp = ["time/*"]\n'


def test_an_mcp_tool_is_called_through_a_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("time?", ("mcp__time__get_current_time", {"timezone": "UTC"})),
        replay_line("done"),
    ], toml_extra=ALLOW + MCP)
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    results = [e for e in json_lines(result.stdout) if e["kind"] == "tool_result"]
    assert not results[0]["is_error"] and "UTC" in results[0]["output"]


def test_an_mcp_tool_no_rule_names_needs_approval_like_a_command(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("time?", ("mcp__time__get_current_time", {"timezone": "UTC"})),
        replay_line("done"),
    ], toml_extra='[policy]\napproval = "deny"\nallow_exec = ["mcp-server-time*"]\n' + MCP)
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    events = json_lines(result.stdout)
    refusals = [e for e in events if e["kind"] == "refusal"]
    assert refusals and refusals[0]["act"] == "mcp"
    assert refusals[0]["target"] == "mcp time/get_current_time"
    assert refusals[0]["layer"] == "tier"
    results = [e for e in events if e["kind"] == "tool_result"]
    assert results[0]["is_error"] and "refused" in results[0]["output"]


def test_a_denied_mcp_server_fails_the_run_start_with_exit_1(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")],
                        toml_extra='[policy]\ndeny_exec = ["mcp-server-time*"]\n' + MCP)
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 1, result.stderr
    assert "io: error: MCP server 'time' not started" in result.stderr
    assert "mcp-server-time*" in result.stderr and "Traceback" not in result.stderr


def test_a_server_that_cannot_start_fails_the_run_start(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")], toml_extra=(
        '[policy]\nallow_exec = ["no-such-mcp-server*"]\n'
        '[[mcp]]\nname = "ghost"\ncommand = "no-such-mcp-server"\n'))
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 1, result.stderr
    assert "io: error: MCP server 'ghost' did not start" in result.stderr
    assert "optional = true" in result.stderr  # the hint
    assert "Traceback" not in result.stderr


def test_a_denied_optional_mcp_server_is_not_started_and_the_run_goes_on(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("time?", ("mcp__time__get_current_time", {"timezone": "UTC"})),
        replay_line("done"),
    ], toml_extra='[policy]\ndeny_exec = ["mcp-server-time*"]\n' + MCP + "optional = true\n")
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    refusals = [e for e in events if e["kind"] == "refusal"]
    assert refusals and refusals[0]["rule"] == "mcp-server-time*"
    results = [e for e in events if e["kind"] == "tool_result"]
    assert results[0]["is_error"] and "unknown tool" in results[0]["output"]


def test_an_mcp_call_that_asks_pauses_the_run_and_resume_approve_runs_it(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("time?", ("mcp__time__get_current_time", {"timezone": "UTC"})),
        replay_line("done"),
    ], toml_extra='[policy]\nallow_exec = ["mcp-server-time*"]\n' + MCP)
    paused = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert paused.returncode == 4, paused.stderr
    events = json_lines(paused.stdout)
    run_id = events[0]["run_id"]
    assert not [e for e in events if e["kind"] == "tool_result"]  # nothing was sent
    resumed = run_io(["resume", run_id, "--approve", "-w", str(ws), "--json"])
    assert resumed.returncode == 0, resumed.stderr
    results = [e for e in json_lines(resumed.stdout) if e["kind"] == "tool_result"]
    assert not results[0]["is_error"] and "UTC" in results[0]["output"]


def test_a_tool_name_holding_a_slash_is_not_offered_and_the_operator_sees_a_warning(
        tmp_path: Path) -> None:
    import sys

    fixture = Path(__file__).resolve().parent.parent / "mcp" / "fixture_server.py"
    ws = make_workspace(tmp_path / "w", [
        replay_line("delete", ("mcp__fx__a_delete_x", {})),
        replay_line("done"),
    ], toml_extra=(
        '[policy]\ntier = "full"\ndeny_mcp = ["*/delete_*"]\n'
        f'[[mcp]]\nname = "fx"\ncommand = {str(sys.executable)!r}\nargs = [{str(fixture)!r}]\n'
        '[mcp.env]\nFIXTURE_SLASH_TOOLS = "1"\n'))
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    warnings = [e for e in events if e["kind"] == "warning" and "mcp" in e]
    assert any("'a/delete_x'" in w["mcp"] and "not offered" in w["mcp"] for w in warnings)
    results = [e for e in events if e["kind"] == "tool_result"]
    assert results[0]["is_error"] and "unknown tool" in results[0]["output"]
