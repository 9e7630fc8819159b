"""The system scope's `[requirements]` through the real CLI: flags that loosen exit 2,
`io resume` applies the requirements in force when it runs, `io config show` marks held
values and `io doctor` lists the floor."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.conftest import REPO, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def _system(requirements: str) -> Path:
    """Write the system scope's file (the fixture's `IO_SYSTEM_CONFIG`)."""
    path = Path(os.environ["IO_SYSTEM_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[requirements]\n{requirements}\n")
    return path


def _paused_run(tmp_path: Path, *flags: str, toml_extra: str = "") -> tuple[Path, str]:
    """A run paused on an approval at its first step; a second step would follow."""
    ws = make_workspace(tmp_path / "w", [
        replay_line("run it", ("exec", {"argv": ["touch", "made.txt"]})),
        replay_line("look", ("list_dir", {})),
        replay_line("done"),
    ], toml_extra='[policy]\napproval = "ask"\n' + toml_extra)
    result = run_io(["run", "goal", "-w", str(ws), "--json", *flags])
    assert result.returncode == 4, result.stderr
    return ws, str(json_lines(result.stdout)[-1]["run_id"])


def _one_error(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("io: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def test_a_flag_that_loosens_a_requirement_exits_2_naming_it(tmp_path: Path) -> None:
    system = _system('max_steps = 3\nmodels = ["scripted", "claude-*"]')
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    steps = run_io(["run", "goal", "-w", str(ws), "--max-steps", "50"])
    assert steps.returncode == 2
    line = _one_error(steps.stderr)
    assert "requirements.max_steps" in line and "the --max-steps flag" in line
    assert str(system) in line
    model = run_io(["run", "goal", "-w", str(ws), "-m", "gpt-5"])
    assert model.returncode == 2
    line = _one_error(model.stderr)
    assert "requirements.models" in line and "the -m/--model flag" in line
    tight = run_io(["run", "goal", "-w", str(ws), "--max-steps", "2", "-m", "claude-x"])
    assert tight.returncode == 0, tight.stderr


def test_a_project_file_that_loosens_a_requirement_stops_io_run_with_exit_2(
        tmp_path: Path) -> None:
    _system('max_tier = "workspace-write"')
    ws = make_workspace(tmp_path / "w", [replay_line("done")], toml_extra='[policy]\ntier = "full"\n')
    result = run_io(["run", "goal", "-w", str(ws)])
    assert result.returncode == 2
    line = _one_error(result.stderr)
    assert "requirements.max_tier" in line and f"project scope ({ws / 'io.toml'})" in line


def test_a_resume_after_the_system_scope_tightened_runs_under_the_tighter_value(
        tmp_path: Path) -> None:
    _system("max_steps = 10")
    ws, run_id = _paused_run(tmp_path)
    _system("max_steps = 1")
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    assert resumed.returncode == 3, resumed.stderr  # the budget of 1 step, not 10
    assert (ws / "made.txt").exists()
    last = json_lines(resumed.stdout)[-1]
    assert last["kind"] == "run_finished" and "budget" in json.dumps(last)


def test_the_same_resume_under_the_first_floor_finishes(tmp_path: Path) -> None:
    _system("max_steps = 10")
    ws, run_id = _paused_run(tmp_path)
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    assert resumed.returncode == 0, resumed.stderr


def test_a_recorded_flag_beyond_the_tightened_floor_refuses_the_resume(tmp_path: Path) -> None:
    _system("max_steps = 10")
    ws, run_id = _paused_run(tmp_path, "--max-steps", "8")
    _system("max_steps = 3")
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve"])
    assert resumed.returncode == 2
    line = _one_error(resumed.stderr)
    assert "--max-steps" in line and "recorded with the run" in line
    assert not (ws / "made.txt").exists()


def test_a_stored_policy_beyond_the_tightened_floor_refuses_the_resume(tmp_path: Path) -> None:
    _system('approval = ["ask", "deny"]')
    ws, run_id = _paused_run(tmp_path)
    _system('max_tier = "read-only"')
    stored = run_io(["resume", run_id, "-w", str(ws), "--approve", "--stored-policy"])
    assert stored.returncode == 2
    line = _one_error(stored.stderr)
    assert "--stored-policy" in line and "requirements.max_tier" in line
    assert not (ws / "made.txt").exists()


def test_config_show_marks_held_values_and_doctor_lists_the_floor(tmp_path: Path) -> None:
    system = _system('max_steps = 20\nsandbox_backends = ["floor", "native"]')
    ws = make_workspace(tmp_path / "w", [replay_line("done")], toml_extra="[budget]\nmax_steps = 5\n")
    shown = run_io(["config", "show", "-w", str(ws), "--json"])
    assert shown.returncode == 0, shown.stderr
    values = {v["key"]: v for v in json.loads(shown.stdout)["values"]}
    assert values["budget.max_steps"]["held"] == "requirements.max_steps"
    assert values["budget.max_steps"]["value"] == 5
    assert values["sandbox.backend"]["held"] == "requirements.sandbox_backends"
    assert values["provider.kind"]["held"] is None
    text = run_io(["config", "show", "-w", str(ws)])
    assert "held" in text.stdout.splitlines()[0] and "requirements.max_steps" in text.stdout
    doctor = run_io(["doctor", "-w", str(ws), "--json"])
    floor = json.loads(doctor.stdout)["requirements"]
    assert floor["file"] == str(system)
    assert floor["values"] == {"requirements.sandbox_backends": ["floor", "native"],
                               "requirements.max_steps": 20}
    plain = run_io(["doctor", "-w", str(ws)])
    assert "requirements.max_steps = 20" in plain.stdout


def test_the_org_floor_example_gives_the_documented_answers(tmp_path: Path) -> None:
    ws = tmp_path / "org-floor"
    shutil.copytree(REPO / "examples" / "org-floor", ws)
    env = {"IO_SYSTEM_CONFIG": str(ws / "system.toml")}
    doctor = run_io(["doctor", "-w", str(ws)], env=env)
    assert "requirements.max_steps = 10" in doctor.stdout, doctor.stdout
    shown = run_io(["config", "show", "-w", str(ws)], env=env)
    assert shown.returncode == 0 and "requirements.max_steps" in shown.stdout, shown.stderr
    ok = run_io(["run", "say hello", "-w", str(ws)], env=env)
    assert ok.returncode == 0, ok.stderr
    assert "hello from under the floor" in ok.stdout
    for flags, requirement in ((["--max-steps", "50"], "requirements.max_steps"),
                               (["-m", "gpt-5"], "requirements.models"),
                               (["-c", str(ws / "loose.toml")], "requirements.max_tier")):
        refused = run_io(["run", "say hello", "-w", str(ws), *flags], env=env)
        assert refused.returncode == 2, (flags, refused.stderr)
        assert requirement in _one_error(refused.stderr)


def test_a_session_turn_runs_under_the_floor_in_force_when_it_is_taken(tmp_path: Path) -> None:
    _system("max_steps = 10")
    ws = make_workspace(tmp_path / "w", [
        replay_line("look", ("list_dir", {})), replay_line("done"),
        replay_line("look again", ("list_dir", {})), replay_line("done again"),
    ])
    made = run_io(["session", "new", "-w", str(ws)])
    assert made.returncode == 0, made.stderr
    session = made.stdout.strip()
    first = run_io(["session", "turn", session, "one", "-w", str(ws), "--json"])
    assert first.returncode == 0, first.stderr
    _system("max_steps = 1")
    second = run_io(["session", "turn", session, "two", "-w", str(ws), "--json"])
    assert second.returncode == 3, second.stderr  # two steps needed, one allowed now
    _system('max_tier = "read-only"')
    (ws / "io.local.toml").write_text('[policy]\ntier = "full"\n')
    third = run_io(["session", "turn", session, "three", "-w", str(ws)])
    assert third.returncode == 2
    assert "requirements.max_tier" in _one_error(third.stderr)


def test_a_rewind_applies_the_floor_in_force_before_restoring_anything(tmp_path: Path) -> None:
    _system("max_steps = 10")
    ws = make_workspace(tmp_path / "w", [
        replay_line("edit", ("write_file", {"path": "a.txt", "content": "v1\n"})),
        replay_line("done"),
    ], files={"a.txt": "v0\n"})
    done = run_io(["run", "goal", "-w", str(ws), "--max-steps", "8", "--json"])
    assert done.returncode == 0, done.stderr
    run_id = str(json_lines(done.stdout)[-1]["run_id"])
    _system("max_steps = 3")
    refused = run_io(["rewind", run_id, "--to", "0", "-w", str(ws)])
    assert refused.returncode == 2
    line = _one_error(refused.stderr)
    assert "--max-steps" in line and "recorded with the run" in line
    assert (ws / "a.txt").read_text() == "v1\n"  # nothing was restored


def test_a_batch_task_whose_workspace_loosens_the_floor_fails_alone(tmp_path: Path) -> None:
    _system("max_steps = 10")
    done = [replay_line("writing", ("write_file", {"path": "a.txt", "content": "x\n"})),
            replay_line("done")]
    make_workspace(tmp_path / "a", done)
    make_workspace(tmp_path / "b", done, toml_extra="[budget]\nmax_steps = 500\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"goal": "ok", "workspace": "a"}\n{"goal": "loose", "workspace": "b"}\n')
    result = run_io(["batch", str(tasks), "--json", "-w", str(tmp_path / "a")])
    per_task = {e["index"]: e for e in json_lines(result.stdout) if e["kind"] == "batch_task"}
    assert per_task[0]["exit_code"] == 0, result.stdout
    assert per_task[1]["status"] == "errored", result.stdout  # batch's word for exit 2
    assert "requirements.max_steps" in per_task[1]["error"]
    assert f"project scope ({tmp_path / 'b' / 'io.toml'})" in per_task[1]["error"]
    assert (tmp_path / "a" / "a.txt").exists() and not (tmp_path / "b" / "a.txt").exists()
    assert result.returncode != 0


def test_a_template_sets_no_value_so_its_run_stays_under_the_floor(tmp_path: Path) -> None:
    _system('max_steps = 1\nmodels = ["scripted"]')
    ws = make_workspace(tmp_path / "w", [
        replay_line("look", ("list_dir", {})), replay_line("done"),
    ], files={".io/templates/wide.md": "---\ndescription: asks for more\nmax_steps: 50\n"
                                       "model: gpt-5\n---\nlook around {{where}}\n"})
    result = run_io(["run", "--template", "wide", "where=here", "-w", str(ws), "--json"])
    assert result.returncode == 3, result.stderr  # the floor's one step, not the 50 asked
    started = json_lines(result.stdout)[0]
    assert "gpt-5" not in json.dumps(started)
