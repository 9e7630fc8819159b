"""What a server gets (its environment, its directory) and how its results are read."""

from __future__ import annotations

from pathlib import Path

from harness_core.mcp import McpServerConfig, McpSession

from .conftest import start


def test_the_parents_secrets_do_not_reach_a_server(fixture_session: McpSession) -> None:
    result = fixture_session.call_tool("fx", "env_value", {"name": "ANTHROPIC_API_KEY"}, 10)
    assert result.text == "<unset>"


def test_the_servers_own_env_table_does_reach_it(fixture_session: McpSession) -> None:
    result = fixture_session.call_tool("fx", "env_value", {"name": "SERVER_ONLY"}, 10)
    assert result.text == "from-the-mcp-table"


def test_default_variables_are_passed_from_the_callers_env(fixture_session: McpSession) -> None:
    assert fixture_session.call_tool("fx", "env_value", {"name": "LANG"}, 10).text == "C.UTF-8"


def test_an_is_error_result_becomes_an_error_outcome(fixture_session: McpSession) -> None:
    result = fixture_session.call_tool("fx", "fail", {}, 10)
    assert result.is_error and "always fails" in result.text


def test_a_non_text_block_is_summarised_in_one_line(fixture_session: McpSession) -> None:
    result = fixture_session.call_tool("fx", "picture", {}, 10)
    assert not result.is_error
    caption, image = result.text.splitlines()
    assert caption == "a caption"
    assert image.startswith("[image content: image/png")


def test_a_tool_name_outside_the_allowed_characters_is_sanitised_but_called_by_its_own(
        fixture_session: McpSession, tmp_path: Path) -> None:
    from .conftest import tool_context

    tool = next(t for t in fixture_session.tools if t.spec.name == "mcp__fx__dotted_name")
    assert tool.run({}, tool_context(tmp_path)).output == "dotted ok"


def test_a_server_starts_outside_the_workspace_unless_it_names_a_cwd(tmp_path: Path) -> None:
    from harness_core.host import host_dir

    here = tmp_path / "ws"
    here.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = ("import os, sys; sys.stderr.write('cwd=' + os.getcwd() + '\\n')")
    configs = [McpServerConfig("a", "python3", ("-c", probe), optional=True),
               McpServerConfig("b", "python3", ("-c", probe), cwd=elsewhere, optional=True)]
    with start(configs, here) as session:
        by_name = {f.server: f.message for f in session.failures}
    # Never the workspace: a `python -m` server would import what the agent planted there.
    assert f"cwd={host_dir()}" in by_name["a"]
    assert f"cwd={elsewhere}" in by_name["b"]


def test_a_slow_call_times_out_with_the_contexts_exec_timeout(
        fixture_session: McpSession, tmp_path: Path) -> None:
    from .conftest import tool_context

    slow = next(t for t in fixture_session.tools if t.spec.name == "mcp__fx__slow")
    outcome = slow.run({"seconds": 1.0}, tool_context(tmp_path, exec_timeout=0.2))
    assert outcome.is_error and "did not answer within 0.2 s" in outcome.output
    assert not fixture_session.call_tool("fx", "dotted.name", {}, 10).is_error
