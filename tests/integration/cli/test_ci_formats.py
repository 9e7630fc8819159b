"""CI formats (issue 23): `--junit FILE` writes the gate rounds as JUnit XML, and a
Markdown summary is appended to `$GITHUB_STEP_SUMMARY` when it is set."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def _two_rounds(tmp_path: Path) -> Path:
    """The first gate round fails, the model writes the file, the second passes."""
    return make_workspace(tmp_path / "w", [
        replay_line("done?"),
        replay_line("fix", ("write_file", {"path": "ok.txt", "content": "yes"})),
        replay_line("done"),
    ], verify="test -f ok.txt")


def test_junit_has_one_suite_per_round_and_only_the_last_round_fails_it(tmp_path: Path) -> None:
    ws = _two_rounds(tmp_path)
    report = tmp_path / "gates.xml"
    result = run_io(["run", "goal", "-w", str(ws), "--junit", str(report)])
    assert result.returncode == 0, result.stderr
    root = ElementTree.parse(report).getroot()
    assert root.tag == "testsuites" and root.get("failures") == "0" and root.get("tests") == "2"
    first, last = root.findall("testsuite")
    assert first.get("skipped") == "1" and first.find("testcase/skipped") is not None
    assert last.get("failures") == "0" and last.find("testcase/failure") is None
    assert [c.get("name") for c in root.iter("testcase")] == ["test -f ok.txt"] * 2
    props = {p.get("name"): p.get("value") for p in last.iter("property")}
    assert props["exit_code"] == "0" and props["trace"].startswith("io trace ")


def test_junit_of_a_failing_gate_holds_the_failure_and_its_output(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")] * 2, verify="ls missing-file",
                        toml_extra="[budget]\nmax_steps = 1\n")
    report = tmp_path / "gates.xml"
    result = run_io(["run", "goal", "-w", str(ws), "--json", "--junit", str(report)])
    assert result.returncode == 1
    failure = ElementTree.parse(report).getroot().find("testsuite/testcase/failure")
    assert failure is not None and "missing-file" in (failure.text or "")
    assert failure.get("message", "").startswith("exit ")


def test_junit_of_a_run_without_gates_is_an_empty_suite(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    report = tmp_path / "gates.xml"
    assert run_io(["run", "goal", "-w", str(ws), "--junit", str(report)]).returncode == 0
    root = ElementTree.parse(report).getroot()
    assert root.get("tests") == "0" and len(root.findall("testsuite")) == 1


def test_github_step_summary_is_appended_with_outcome_gates_spend_and_trace(
        tmp_path: Path) -> None:
    ws = _two_rounds(tmp_path)
    summary = tmp_path / "summary.md"
    summary.write_text("## earlier step\n")
    result = run_io(["run", "goal", "-w", str(ws), "--json"],
                    env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.returncode == 0, result.stderr
    run_id = json_lines(result.stdout)[-1]["run_id"]
    text = summary.read_text()
    assert text.startswith("## earlier step\n")  # appended, never replaced
    assert f"io run `{run_id}`: exit 0" in text
    assert "every gate passed" in text and "| `test -f ok.txt` | passed |" in text
    assert "tokens" in text and f"`io trace {run_id}`" in text


def test_no_summary_file_is_written_without_the_variable(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    result = run_io(["run", "goal", "-w", str(ws)], env={"GITHUB_STEP_SUMMARY": ""})
    assert result.returncode == 0
    assert not list(tmp_path.glob("*.md"))
