"""Human output (issue 23): each message once whatever the terminal, no `None`, and
every refusal names its rule and layer (a tier's default as `tier:<tier>`)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import REPO, run_io
from tests.integration.cli.helpers import json_lines, make_workspace


def test_streamed_text_is_printed_once_off_a_terminal(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [json.dumps({"text": "streaming hello there"})])
    result = run_io(["run", "goal", "-w", str(ws)])
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("streaming hello there") == 1, result.stderr
    assert "(provisional)" not in result.stderr
    assert result.stdout == "streaming hello there\n"


def test_the_answer_is_printed_once_when_stdout_and_stderr_are_one_log(tmp_path: Path) -> None:
    """`io run … 2>&1 | tee log` (a CI log): the answer on stdout is not also a `says:`
    line of the trace in the same stream; a step before it still shows its text."""
    import subprocess

    from tests.conftest import io_cmd

    ws = make_workspace(tmp_path / "w", [
        json.dumps({"text": "first look", "tool_calls": [{"name": "list_dir", "arguments": {}}]}),
        json.dumps({"text": "the final answer here"})])
    log = subprocess.run([*io_cmd(), "run", "goal", "-w", str(ws)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=120)
    assert log.returncode == 0, log.stdout
    assert log.stdout.count("the final answer here") == 1, log.stdout
    assert "the final answer here" in log.stdout.splitlines()  # the answer, whole
    assert "says: first look" in log.stdout


def test_no_none_in_the_trace_when_the_provider_reports_no_usage(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        json.dumps({"text": "look", "tool_calls": [
            {"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]}),
        json.dumps({"text": "done"})],
        toml_extra='[policy]\ntier = "read-only"\napproval = "deny"\n')
    result = run_io(["run", "goal", "-w", str(ws)])
    assert "None" not in result.stderr, result.stderr
    assert "estimated (not reported)" in result.stderr  # the scripted replay reports none
    assert "[rule tier:read-only, layer tier]" in result.stderr
    run_id = json_lines(run_io(["runs", "-w", str(ws), "--json"]).stdout)[0]["run_id"]
    trace = run_io(["trace", str(run_id), "-w", str(ws)])
    assert trace.returncode == 0 and "None" not in trace.stdout, trace.stdout
    assert "rule tier:read-only, layer tier" in trace.stdout


def test_io_tool_json_refusal_by_a_tier_names_the_tier_as_its_rule(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [], toml_extra='[policy]\ntier = "read-only"\n'
                        'approval = "deny"\n')
    result = run_io(["tool", "write_file", "--args", '{"path": "a.txt", "content": "x"}',
                     "-w", str(ws), "--json"])
    assert result.returncode == 1
    refused = json.loads(result.stdout)["refused"]
    assert (refused["rule"], refused["layer"]) == ("tier:read-only", "tier")


def test_no_replay_file_is_left_at_the_repository_root() -> None:
    assert not (REPO / "replay.jsonl").exists()


def test_a_construct_refused_by_the_shell_grammar_names_its_rule(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [])
    result = run_io(["tool", "shell", "--args", '{"line": "echo $(id)"}', "-w", str(ws),
                     "--json"])
    refused = json.loads(result.stdout)["refused"]
    assert (refused["rule"], refused["layer"]) == ("construct:command substitution", "builtin")
