"""Every way a run can end has its own exit code, the same in the process's exit status,
in `run_finished` (with `why`), in `io runs`, and in the table of docs/guide/exit-codes.md
and `io --help` (issue 23)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from io_harness_cli.exit_codes import ExitCode
from tests.conftest import REPO, io_cmd, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line
from tests.integration.cli.test_run_cli import _blocking_workspace, _wait_for


def _finished(stdout: str) -> dict[str, object]:
    last = json_lines(stdout)[-1]
    assert last["kind"] == "run_finished"
    return last


def test_a_gate_that_keeps_failing_exits_1_whatever_stopped_the_run(tmp_path: Path) -> None:
    """Gate `false`, one step: the budget stops the run, but the last round failed."""
    ws = make_workspace(tmp_path / "w", [replay_line("done"), replay_line("done again")],
                        verify="false", toml_extra="[budget]\nmax_steps = 1\n")
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    last = _finished(result.stdout)
    assert result.returncode == 1, result.stderr
    assert (last["status"], last["exit_code"], last["verified"]) == ("stopped", 1, False)
    assert "the last gate round failed" in str(last["why"]) and "`false`" in str(last["why"])
    listed = json_lines(run_io(["runs", "-w", str(ws), "--json"]).stdout)
    assert listed[0]["exit_code"] == 1  # recorded with the run, not guessed from its status
    human = run_io(["run", "goal", "-w", str(ws)])
    assert human.returncode == 1
    assert "(exit 1)" in human.stderr and "the last gate round failed" in human.stderr


def test_a_budget_stop_with_no_failed_gate_exits_3(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("look", ("list_dir", {}))] * 3,
                        verify="true", toml_extra="[budget]\nmax_steps = 1\n")
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    last = _finished(result.stdout)
    assert result.returncode == 3 and last["exit_code"] == 3 and last["verified"] is None
    assert str(last["why"]).startswith("stopped with no failed gate")


def test_a_run_without_gates_says_so_and_verified_is_null(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("the answer")])
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    last = _finished(result.stdout)
    assert result.returncode == 0 and last["exit_code"] == 0
    assert last["verified"] is None and last["why"] == "no gates configured"
    assert "every gate passed" not in json.dumps(last)
    human = run_io(["run", "goal", "-w", str(ws)])
    assert "no gates configured" in human.stderr and "every gate passed" not in human.stderr


def test_passing_gates_exit_0_with_verified_true(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")], verify="true")
    last = _finished(run_io(["run", "goal", "-w", str(ws), "--json"]).stdout)
    assert (last["exit_code"], last["verified"], last["why"]) == (0, True, "every gate passed")


def test_a_paused_run_exits_4_and_prints_the_resume_command(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("ask", ("exec", {"argv": ["touch", "approved.txt"]})), replay_line("done")])
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    last = _finished(result.stdout)
    assert result.returncode == 4 and last["exit_code"] == 4
    assert last["resume"] == f"io resume {last['run_id']} --approve"
    human = run_io(["run", "goal", "-w", str(ws)])
    assert human.returncode == 4
    assert re.search(r"continue with: io resume \w+ --approve", human.stderr), human.stderr


def test_the_loser_of_two_drivers_exits_5_busy(tmp_path: Path) -> None:
    ws = _blocking_workspace(tmp_path)
    proc = subprocess.Popen([*io_cmd(), "run", "goal", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(tmp_path / "started", proc)
        run_id = json.loads(proc.stdout.readline())["run_id"] if proc.stdout else ""
        second = run_io(["resume", run_id, "-w", str(ws), "--json"])
        assert second.returncode == 5, second.stderr
        last = _finished(second.stdout)
        assert (last["status"], last["exit_code"]) == ("busy", 5)
        assert str(last["why"]).startswith("busy")
    finally:
        (tmp_path / "release").write_text("go")
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def _documented_table() -> dict[int, str]:
    text = (REPO / "docs" / "guide" / "exit-codes.md").read_text()
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \| ([^|]+) \|", text,
                                                             re.M)}


def test_the_documented_table_io_help_and_the_enum_agree() -> None:
    assert set(_documented_table()) == {int(code) for code in ExitCode}
    help_text = run_io(["--help"]).stdout
    for code in ExitCode:
        assert re.search(rf"\b{int(code)} ", " ".join(help_text.split())), code


@pytest.mark.parametrize(("status", "verified", "code"), [
    ("finished", True, 0), ("finished", None, 0), ("stopped", False, 1), ("stopped", None, 3),
    ("failed", False, 1), ("failed", None, 1), ("errored", None, 1), ("paused", False, 4),
    ("paused", None, 4), ("interrupted", False, 130), ("interrupted", None, 130),
])
def test_outcome_to_exit_code_table(status: str, verified: bool | None, code: int) -> None:
    from harness_core import RunOutcome, RunStatus

    assert RunOutcome("r", RunStatus(status), "why", 1, verified=verified).exit_code == code
