"""The answer on stdout (issue 23): the final message goes to stdout and the trace to
stderr; `--output-last-message`, `--output-schema`, `-m`, `--max-steps`; a closed stdout
pipe never ends a run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}},
          "additionalProperties": False}


def test_the_final_answer_is_on_stdout_and_the_trace_on_stderr(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("looking", ("list_dir", {})),
                                         replay_line("the answer is 42")])
    result = run_io(["run", "goal", "-w", str(ws)])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "the answer is 42\n"
    assert "step 1" in result.stderr and "looking" in result.stderr


def test_output_last_message_writes_the_answer_also_with_json(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("final words")])
    out = tmp_path / "last.txt"
    result = run_io(["run", "goal", "-w", str(ws), "--json", "--output-last-message", str(out)])
    assert result.returncode == 0, result.stderr
    assert out.read_text() == "final words"
    assert json_lines(result.stdout)[-1]["answer"] == "final words"  # stdout stays JSON
    missing = run_io(["run", "goal", "-w", str(ws), "--output-last-message",
                      str(tmp_path / "no" / "dir" / "x.txt")])
    assert missing.returncode == 2 and "no directory" in missing.stderr


def test_an_answer_that_does_not_match_the_schema_is_sent_back_then_accepted(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("here you go: n is 3"),
                                         replay_line('{"n": "three"}'),
                                         replay_line('```json\n{"n": 3}\n```')])
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    result = run_io(["run", "count", "-w", str(ws), "--json", "--output-schema", str(schema)])
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    assert "JSON Schema" in events[0]["goal"] and '"required"' in events[0]["goal"]  # told
    # The fence is unwrapped: the answer is the JSON document validated, not the raw text.
    assert json.loads(str(events[-1]["answer"])) == {"n": 3} and events[-1]["steps"] == 3
    rejected = [e for e in events if e["kind"] == "answer_rejected"]
    assert [(e["step"], e["attempt"], e["retries_left"]) for e in rejected] == [
        (0, 1, 2), (1, 2, 1)]
    assert "not JSON" in str(rejected[0]["problem"])
    assert "'three' is not of type 'integer'" in str(rejected[1]["problem"])


def test_a_fenced_answer_reaches_stdout_and_the_file_as_one_json_document(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("n is three"),
                                         replay_line('```json\n{"n": 3}\n```')])
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    out = tmp_path / "last.json"
    result = run_io(["run", "count", "-w", str(ws), "--output-schema", str(schema),
                     "--output-last-message", str(out)])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"n": 3} and "```" not in result.stdout
    assert json.loads(out.read_text()) == {"n": 3}
    jq = subprocess.run(["jq", "-e", ".n"], input=result.stdout, capture_output=True, text=True,
                        check=False)
    assert jq.returncode == 0 and jq.stdout.strip() == "3", jq.stderr
    # The rejected first answer has its line in the live trace.
    assert "answer rejected by the output schema: the answer is not JSON" in result.stderr
    assert "sent back (2 retries left)" in result.stderr


def test_only_one_fenced_block_is_unwrapped(tmp_path: Path) -> None:
    two = '```json\n{"n": 1}\n```\nand\n```json\n{"n": 2}\n```'
    ws = make_workspace(tmp_path / "w", [replay_line(two)] * 3)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    result = run_io(["run", "count", "-w", str(ws), "--output-schema", str(schema), "--json"])
    assert result.returncode == 1, result.stderr
    last = json_lines(result.stdout)[-1]
    assert last["answer"] == "" and "not JSON" in str(last["reason"])


def test_an_answer_that_never_matches_the_schema_exits_1_with_the_reason(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("nope")] * 4, verify="true")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    result = run_io(["run", "count", "-w", str(ws), "--json", "--output-schema", str(schema)])
    last = json_lines(result.stdout)[-1]
    assert result.returncode == 1, result.stderr
    assert last["status"] == "failed" and last["steps"] == 3
    assert "does not match the output schema" in str(last["reason"])
    assert "not JSON" in str(last["reason"])
    assert last["answer"] == ""  # a refused answer is not the run's answer
    out = tmp_path / "answer.txt"
    plain = run_io(["run", "count", "-w", str(ws), "--output-schema", str(schema),
                    "--output-last-message", str(out)])
    assert plain.returncode == 1, plain.stderr
    assert plain.stdout == "" and out.read_text() == ""  # stdout: valid JSON or nothing
    assert "does not match the output schema" in plain.stderr


def test_a_bad_schema_file_is_a_usage_error(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("x")])
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "no-such-type"}')
    result = run_io(["run", "g", "-w", str(ws), "--output-schema", str(bad)])
    assert result.returncode == 2 and "not a valid JSON Schema" in result.stderr
    assert "Traceback" not in result.stderr


def test_model_and_max_steps_override_io_toml_for_one_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("s", ("list_dir", {}))] * 3
                        + [replay_line("done")],
                        toml_extra='[budget]\nmax_steps = 50\n')
    (ws / "io.toml").write_text((ws / "io.toml").read_text().replace(
        'script = "replay.jsonl"', 'script = "replay.jsonl"\nmodel = "from-toml"'))
    result = run_io(["run", "g", "-w", str(ws), "--json", "-m", "from-flag", "--max-steps", "2"])
    assert result.returncode == 3, result.stderr
    events = json_lines(result.stdout)
    assert {e["request_model"] for e in events if e["kind"] == "completion"} == {"from-flag"}
    assert events[-1]["steps"] == 2
    plain = run_io(["run", "g", "-w", str(ws), "--json"])
    assert {e["request_model"] for e in json_lines(plain.stdout)
            if e["kind"] == "completion"} == {"from-toml"}


def test_a_closed_stdout_pipe_does_not_end_the_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line(f"s{i}", ("write_file", {"path": f"f{i}.txt", "content": "x"}))
        for i in range(3)] + [replay_line("done")])
    for extra in (["--json"], []):
        proc = subprocess.Popen([*io_cmd(), "run", "g", "-w", str(ws), *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None
        proc.stdout.close()  # `io run … | head -0`: the reader is gone before anything is written
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        assert b"BrokenPipe" not in err and b"Traceback" not in err
    listed = json_lines(run_io(["runs", "-w", str(ws), "--json"]).stdout)
    assert [(r["status"], r["steps"]) for r in listed] == [("finished", 4)] * 2


def test_a_resumed_run_checks_its_answer_against_the_schema_it_started_with(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("making it", ("exec", {"argv": ["touch", "made.txt"]})),
        *[replay_line("nope")] * 3], toml_extra='[policy]\ntier = "workspace-write"\n'
                                                'approval = "ask"\n')
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    paused = run_io(["run", "count", "-w", str(ws), "--json", "--output-schema", str(schema)])
    assert paused.returncode == 4, paused.stderr
    run_id = str(json_lines(paused.stdout)[-1]["run_id"])
    # The resume names no schema: the run's own is checked, not forgotten (exit 0 with
    # "nope" as the answer before).
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    last = json_lines(resumed.stdout)[-1]
    assert resumed.returncode == 1, resumed.stderr
    assert (ws / "made.txt").exists()
    assert last["status"] == "failed" and last["answer"] == ""
    assert "does not match the output schema" in str(last["reason"])
    # Reported again once ended: still no answer, on stdout or in the JSON.
    again = run_io(["resume", run_id, "-w", str(ws)])
    assert again.returncode == 1 and again.stdout == "", again.stderr
    ended = json_lines(run_io(["resume", run_id, "-w", str(ws), "--json"]).stdout)[-1]
    assert ended["answer"] == "" and "does not match the output schema" in str(ended["reason"])


def test_a_resumed_run_keeps_the_model_and_step_budget_its_command_line_gave(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("making it", ("exec", {"argv": ["touch", "made.txt"]})),
        *[replay_line(f"file {i}", ("write_file", {"path": f"f{i}.txt", "content": "x"}))
          for i in range(4)], replay_line("done")],
        toml_extra='[policy]\ntier = "workspace-write"\napproval = "ask"\n\n'
                   '[budget]\nmax_steps = 50\n')
    (ws / "io.toml").write_text((ws / "io.toml").read_text().replace(
        'script = "replay.jsonl"', 'script = "replay.jsonl"\nmodel = "from-toml"'))
    paused = run_io(["run", "g", "-w", str(ws), "--json", "-m", "from-flag",
                     "--max-steps", "3"])
    assert paused.returncode == 4, paused.stderr
    run_id = str(json_lines(paused.stdout)[-1]["run_id"])
    # The approve job of a CI workflow resumes with no flags: the run's own budget and
    # model still hold (before, io.toml's 50 steps and model took over at the resume).
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    events = json_lines(resumed.stdout)
    assert resumed.returncode == 3, resumed.stderr
    assert events[-1]["steps"] == 3 and "step budget of 3" in str(events[-1]["reason"])
    assert {e["request_model"] for e in events if e["kind"] == "completion"} == {"from-flag"}


def test_a_resumed_run_reads_the_config_file_it_was_started_with(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("making it", ("exec", {"argv": ["touch", "made.txt"]})),
        replay_line("done")])
    toml = (ws / "io.toml").read_text()
    (ws / "io.toml").write_text(toml.replace(
        'script = "replay.jsonl"', 'script = "replay.jsonl"\nmodel = "from-toml"'))
    other = tmp_path / "other.toml"
    other.write_text(toml.replace(
        'script = "replay.jsonl"', f'script = "{ws / "replay.jsonl"}"\nmodel = "from-other"')
        + '[policy]\ntier = "workspace-write"\napproval = "ask"\n')
    paused = run_io(["run", "g", "-w", str(ws), "--json", "-c", str(other)])
    assert paused.returncode == 4, paused.stderr
    run_id = str(json_lines(paused.stdout)[-1]["run_id"])
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    assert resumed.returncode == 0, resumed.stderr
    models = {e["request_model"] for e in json_lines(resumed.stdout) if e["kind"] == "completion"}
    assert models == {"from-other"}  # not the workspace's io.toml
    # The file gone: the resume says so instead of falling back to io.toml.
    paused = run_io(["run", "g", "-w", str(ws), "--json", "-c", str(other)])
    run_id = str(json_lines(paused.stdout)[-1]["run_id"])
    other.unlink()
    gone = run_io(["resume", run_id, "-w", str(ws), "--approve"])
    assert gone.returncode == 2 and "which is gone" in gone.stderr, gone.stderr
    assert "Traceback" not in gone.stderr


def test_a_resumed_batch_task_keeps_its_narrowed_budget(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("making it", ("exec", {"argv": ["touch", "made.txt"]})),
        *[replay_line(f"file {i}", ("write_file", {"path": f"f{i}.txt", "content": "x"}))
          for i in range(4)], replay_line("done")],
        toml_extra='[policy]\ntier = "workspace-write"\napproval = "ask"\n')
    narrow = json.dumps({"budget": {"max_steps": 2}})  # what `io batch` passes for a task
    paused = run_io(["run", "g", "-w", str(ws), "--json", "--narrow", narrow])
    assert paused.returncode == 4, paused.stderr
    run_id = str(json_lines(paused.stdout)[-1]["run_id"])
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    last = json_lines(resumed.stdout)[-1]
    assert resumed.returncode == 3, resumed.stderr
    assert last["steps"] == 2 and "step budget of 2" in str(last["reason"])
