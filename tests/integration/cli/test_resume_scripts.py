"""Scripts resume without parsing English (issue 37): `io runs --json` carries the pause
object and the exact resume command; `io resume RUN --max-steps N` (and the other budget
flags) gives a stopped run more room, recorded as operator input; a stopped run has no
answer; every view counts the same steps."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

ASK = '[policy]\ntier = "workspace-write"\napproval = "ask"\n'


def _writes(n: int) -> list[str]:
    return [replay_line(f"working {i}", ("write_file", {"path": f"f{i}.txt", "content": "x"}))
            for i in range(n)]


def _only_run(ws: Path) -> dict[str, object]:
    listed = json_lines(run_io(["runs", "-w", str(ws), "--json"]).stdout)
    assert len(listed) == 1
    return listed[0]


def test_runs_json_carries_the_pause_and_the_resume_command_of_an_approval(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("make", ("exec", {"argv": ["touch", "m"]})),
                                         replay_line("done")], toml_extra=ASK)
    assert run_io(["run", "g", "-w", str(ws), "--json"]).returncode == 4
    row = _only_run(ws)
    pause = row["pause"]
    assert isinstance(pause, dict) and pause["kind"] == "approval"
    assert pause["target"] == "exec touch m"
    assert row["resume"] == f"io resume {row['run_id']} --approve"
    # The command runs as written (from the workspace: it names no -w).
    argv = shlex.split(str(row["resume"]))[1:]
    resumed = run_io([*argv, "--json"], cwd=ws)
    assert resumed.returncode == 0, resumed.stderr
    after = _only_run(ws)
    assert after["pause"] is None and after["resume"] is None and after["status"] == "finished"


def test_runs_json_carries_the_question_of_a_paused_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("asking", ("ask_question", {"question": "Which colour?"})),
        replay_line("blue it is")])
    assert run_io(["run", "g", "-w", str(ws), "--json"]).returncode == 4
    row = _only_run(ws)
    assert isinstance(row["pause"], dict)
    assert row["pause"]["kind"] == "question" and row["pause"]["question"] == "Which colour?"
    command = str(row["resume"]).replace("…", "blue")
    resumed = run_io([*shlex.split(command)[1:]], cwd=ws)
    assert resumed.returncode == 0 and resumed.stdout == "blue it is\n", resumed.stderr


def test_a_stopped_run_gets_more_steps_and_the_operator_input_is_recorded(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [*_writes(4), replay_line("all done")],
                        toml_extra="[budget]\nmax_steps = 2\n")
    stopped = run_io(["run", "g", "-w", str(ws), "--json"])
    assert stopped.returncode == 3, stopped.stderr
    last = json_lines(stopped.stdout)[-1]
    run_id = str(last["run_id"])
    # No answer: "working 1" was an in-between message, not a final one.
    assert last["answer"] == "" and last["resume"] == f'io resume {run_id} --max-steps "…"'
    assert _only_run(ws)["resume"] == last["resume"]
    plain = run_io(["resume", run_id, "-w", str(ws)])  # no room given: reported again
    assert plain.returncode == 3 and plain.stdout == "", plain.stderr
    none = run_io(["resume", run_id, "-w", str(ws), "--max-steps", "2"])
    assert none.returncode == 2 and "no room" in none.stderr and "Traceback" not in none.stderr
    more = run_io(["resume", run_id, "-w", str(ws), "--max-steps", "10", "--json"])
    assert more.returncode == 0, more.stderr
    done = json_lines(more.stdout)[-1]
    assert done["status"] == "finished" and done["answer"] == "all done" and done["steps"] == 5
    trace = json.loads(run_io(["trace", run_id, "-w", str(ws), "--json"]).stdout)
    budget = [o for o in trace["operator"] if o["kind"] == "budget"]
    assert len(budget) == 1 and budget[0]["content"] == {"max_steps": 10, "was": "stopped"}
    assert budget[0]["step"] == 2
    human = run_io(["trace", run_id, "-w", str(ws)]).stdout
    assert "more room: max_steps 10" in human
    ended = run_io(["resume", run_id, "-w", str(ws), "--max-steps", "20"])
    assert ended.returncode == 2 and "has finished" in ended.stderr


def test_the_raised_budget_holds_for_a_later_resume(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        *_writes(2), replay_line("make", ("exec", {"argv": ["touch", "m"]})), *_writes(1),
        replay_line("done")], toml_extra=ASK + "\n[budget]\nmax_steps = 2\n")
    first = run_io(["run", "g", "-w", str(ws), "--json"])
    run_id = str(json_lines(first.stdout)[-1]["run_id"])
    assert first.returncode == 3, first.stderr
    paused = run_io(["resume", run_id, "-w", str(ws), "--max-steps", "5", "--json"])
    assert paused.returncode == 4, paused.stderr  # step 2 waits for approval
    done = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    assert done.returncode == 0, done.stderr  # 5 steps, not io.toml's 2
    assert json_lines(done.stdout)[-1]["steps"] == 5


def test_other_budget_flags_name_what_they_raise(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [*_writes(3), replay_line("done")],
                        toml_extra="[budget]\nmax_tokens = 25\n")
    stopped = run_io(["run", "g", "-w", str(ws), "--json"])
    last = json_lines(stopped.stdout)[-1]
    assert stopped.returncode == 3 and "token budget" in str(last["reason"])
    assert last["resume"] == f'io resume {last["run_id"]} --max-tokens "…"'
    more = run_io(["resume", str(last["run_id"]), "-w", str(ws), "--max-tokens", "1000"])
    assert more.returncode == 0 and more.stdout == "done\n", more.stderr


def test_a_stopped_run_says_how_to_continue(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [*_writes(2), replay_line("done")])
    first = run_io(["run", "g", "-w", str(ws), "--max-steps", "1"])
    assert first.returncode == 3
    run_id = str(_only_run(ws)["run_id"])
    assert f'continue with: io resume {run_id} --max-steps "…"' in first.stderr
    assert first.stdout == ""  # stopped: no answer on stdout


def test_every_view_counts_the_same_steps_of_a_stalled_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line(f"looking {i}", ("list_dir", {}))
                                         for i in range(6)])
    result = run_io(["run", "g\twith a tab", "-w", str(ws), "--json"])
    assert result.returncode == 3, result.stderr
    last = json_lines(result.stdout)[-1]
    assert "stalled" in str(last["reason"]) and last["answer"] == ""
    run_id = str(last["run_id"])
    trace = json.loads(run_io(["trace", run_id, "-w", str(ws), "--json"]).stdout)
    listed = [s["step"] for s in trace["steps"]]
    assert listed == list(range(len(listed)))
    assert last["steps"] == len(listed) == trace["run"]["steps"] == _only_run(ws)["steps"]
    page = run_io(["trace", run_id, "-w", str(ws), "--html", "-o", "-"]).stdout
    assert f'<span class="step-count">{len(listed)} steps</span>' in page
    human = run_io(["trace", run_id, "-w", str(ws)]).stdout
    assert f"steps {len(listed)} " in human.splitlines()[0]
    # A tab in the goal stays inside its column of the TSV table.
    table = run_io(["runs", "-w", str(ws)]).stdout.splitlines()
    assert all(len(line.split("\t")) == 7 for line in table), table
