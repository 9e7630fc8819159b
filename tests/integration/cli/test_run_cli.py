"""`io run` / `io resume` through the real CLI: exit codes, JSON lines, pauses, budgets,
bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def _last(stdout: str) -> dict[str, object]:
    events = json_lines(stdout)
    assert events, "no JSON events on stdout"
    return events[-1]


def test_json_stdout_holds_only_json_lines_and_ends_with_run_finished(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("look", ("list_dir", {})),
        replay_line("done"),
    ])
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert {"step_started", "tool_call", "tool_result", "checkpoint"} <= set(kinds)
    assert len({e["run_id"] for e in events}) == 1


def test_step_budget_stops_with_exit_3(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line(f"s{i}", ("list_dir", {"path": str(i % 2 and "." or "")}))
                                         for i in range(5)] + [replay_line("done")],
                        toml_extra="[budget]\nmax_steps = 2\n")
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 3, result.stderr
    last = _last(result.stdout)
    assert last["status"] == "stopped" and last["exit_code"] == 3
    assert "step budget" in str(last["reason"])


def test_failed_gate_goes_back_to_the_model_and_the_run_continues(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("done?"),
        replay_line("fix", ("write_file", {"path": "ok.txt", "content": "yes"})),
        replay_line("done"),
    ], verify="test -f ok.txt")
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    gates = [e for e in json_lines(result.stdout) if e["kind"] == "verification"]
    assert [g["passed"] for g in gates] == [False, True]


def test_exhausted_replay_is_a_clear_error_with_exit_1(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("x", ("list_dir", {}))])
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 1
    last = _last(result.stdout)
    assert last["kind"] == "run_finished" and "replay" in str(last["reason"])
    assert "Traceback" not in result.stderr


def test_invalid_json_tool_arguments_become_an_observation(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    ws = make_workspace(tmp_path / "w", [
        json.dumps({"tool_calls": [{"name": "read_file", "arguments": "{not json"}]}),
        replay_line("done"),
    ])
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    results = [e for e in json_lines(result.stdout) if e["kind"] == "tool_result"]
    assert results[0]["is_error"] and "not a valid JSON object" in results[0]["output"]


def test_approval_without_a_terminal_pauses_with_exit_4_then_resume_approve(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("run it", ("exec", {"argv": ["touch", "made.txt"]})),
        replay_line("done"),
    ], toml_extra='[policy]\napproval = "ask"\n')
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 4, result.stderr
    last = _last(result.stdout)
    assert last["status"] == "paused" and last["exit_code"] == 4
    run_id = str(last["run_id"])
    assert not (ws / "made.txt").exists()
    # resuming without saying approve/deny is a usage error, and loses nothing
    bad = run_io(["resume", run_id, "-w", str(ws)])
    assert bad.returncode == 2 and "--approve" in bad.stderr
    good = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    assert good.returncode == 0, good.stderr
    assert (ws / "made.txt").exists()
    trace = run_io(["trace", run_id, "-w", str(ws), "--json"])
    events = json.loads(trace.stdout)["refusals"]
    assert events[-1]["verdict"] == "allow" and events[-1]["decided_by"] == "operator"
    assert events[-1]["layer"] == "tier"


def test_resume_deny_refuses_the_act_and_the_model_sees_it(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("run it", ("exec", {"argv": ["touch", "made.txt"]})),
        replay_line("done"),
    ], toml_extra='[policy]\napproval = "ask"\n')
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    run_id = str(_last(result.stdout)["run_id"])
    denied = run_io(["resume", run_id, "-w", str(ws), "--deny", "--json"])
    assert denied.returncode == 0
    results = [e for e in json_lines(denied.stdout) if e["kind"] == "tool_result"]
    assert results and results[0]["refused"] is not None
    assert not (ws / "made.txt").exists()


@pytest.mark.parametrize("args,code,needle", [
    (["run", "g", "-w", "/nonexistent/dir"], 2, "not a directory"),
    (["resume", "nope-no-such-run"], 2, "no run"),
    (["trace", "nope-no-such-run"], 2, "no run"),
    (["tool", "read_file", "--args", "{bad"], 2, "not valid JSON"),
    (["tool", "no_such_tool"], 2, "unknown tool"),
])
def test_bad_input_gets_one_clear_line_and_its_exit_code(
        tmp_path: Path, args: list[str], code: int, needle: str) -> None:
    result = run_io(args, cwd=tmp_path)
    assert result.returncode == code, result.stderr
    assert needle in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("io: error:")


def test_malformed_io_toml_exits_2_and_json_still_ends_with_run_finished(tmp_path: Path) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "io.toml").write_text("[provider\nkind = 1\n")
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 2
    last = _last(result.stdout)
    assert last["kind"] == "run_finished" and last["exit_code"] == 2
    assert "io.toml" in result.stderr and "Traceback" not in result.stderr


def test_store_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    bogus = tmp_path / "bogus.db"
    bogus.write_bytes(b"this is not a database at all" * 10)
    result = run_io(["run", "goal", "-w", str(ws)], env={"IO_STORE": str(bogus)})
    assert result.returncode == 1
    assert "not an io store" in result.stderr and "Traceback" not in result.stderr
    assert bogus.read_bytes() == b"this is not a database at all" * 10


def test_locked_store_is_a_clear_error(tmp_path: Path) -> None:
    import sqlite3

    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    db = tmp_path / "locked.db"
    assert run_io(["runs", "-w", str(ws)], env={"IO_STORE": str(db)}).returncode == 0
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = run_io(["run", "goal", "-w", str(ws)], env={"IO_STORE": str(db)})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 1
    assert "locked" in result.stderr and "Traceback" not in result.stderr


def _blocking_workspace(tmp_path: Path) -> Path:
    gate = tmp_path / "release"
    script = tmp_path / "wait.py"
    script.write_text(
        "import pathlib, time, sys\n"
        "pathlib.Path(sys.argv[2]).write_text('started')\n"
        "while not pathlib.Path(sys.argv[1]).exists():\n"
        "    time.sleep(0.02)\n")
    return make_workspace(tmp_path / "w", [
        replay_line("wait", ("exec", {"argv": [sys.executable, str(script), str(gate),
                                                str(tmp_path / "started")]})),
        replay_line("done"),
    ], toml_extra='[policy]\ntier = "full"\n')


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    import time

    deadline = time.monotonic() + 30
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the blocking tool never started"
        time.sleep(0.01)


def test_ctrl_c_checkpoints_exits_130_and_resume_continues(tmp_path: Path) -> None:
    ws = _blocking_workspace(tmp_path)
    proc = subprocess.Popen([*io_cmd(), "run", "goal", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "started", proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    last = _last(out)
    assert last["status"] == "interrupted" and last["exit_code"] == 130
    (tmp_path / "release").write_text("go")
    resumed = run_io(["resume", str(last["run_id"]), "-w", str(ws), "--json"])
    assert resumed.returncode == 0, resumed.stderr
    results = [e for e in json_lines(resumed.stdout) if e["kind"] == "tool_result"]
    assert "outcome is unknown" in results[0]["output"]


def test_two_drivers_one_proceeds_the_other_gets_run_in_use(tmp_path: Path) -> None:
    ws = _blocking_workspace(tmp_path)
    proc = subprocess.Popen([*io_cmd(), "run", "goal", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "started", proc)
    run_id = json.loads(proc.stdout.readline())["run_id"] if proc.stdout else ""
    second = run_io(["resume", run_id, "-w", str(ws)])
    assert second.returncode == 5 and "in use" in second.stderr  # busy, not a failed run
    (tmp_path / "release").write_text("go")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


def test_lock_of_a_killed_driver_is_reclaimed(tmp_path: Path) -> None:
    ws = _blocking_workspace(tmp_path)
    proc = subprocess.Popen([*io_cmd(), "run", "goal", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "started", proc)
    run_id = json.loads(proc.stdout.readline())["run_id"] if proc.stdout else ""
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    (tmp_path / "release").write_text("go")
    resumed = run_io(["resume", run_id, "-w", str(ws), "--json"])
    assert resumed.returncode == 0, resumed.stderr


def test_cost_budget_derived_from_prices_stops_with_exit_3(tmp_path: Path) -> None:
    lines = [json.dumps({"tool_calls": [{"name": "list_dir", "arguments": {"path": str(i % 2 and "." or "")}}],
                         "model": "m1", "usage": {"prompt_tokens": 500_000, "completion_tokens": 0}})
             for i in range(6)] + [replay_line("done")]
    ws = make_workspace(tmp_path / "w", lines, toml_extra=(
        '[budget]\nmax_cost_usd = 1.0\nmax_tokens = false\n'
        '[prices]\nas_of = "2026-11-01"\n[prices.models.m1]\ninput_per_mtok = 1.0\n'
        'output_per_mtok = 1.0\n'))
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 3, result.stderr
    last = _last(result.stdout)
    assert "cost budget" in str(last["reason"]) and last["steps"] == 2


def test_cost_budget_without_prices_is_a_config_error(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")],
                        toml_extra='[budget]\nmax_cost_usd = 1.0\n')
    result = run_io(["run", "goal", "-w", str(ws)])
    assert result.returncode == 2 and "[prices]" in result.stderr
