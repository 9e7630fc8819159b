"""Questions and plans through the real CLI: a question without a terminal pauses with
exit 4, survives the process, and resumes with the answer as text (never permission); a
plan is readable from another process while the run is blocked."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line
from tests.integration.session.helpers import Blocker, first_event, open_store


def test_a_paused_question_survives_exit_and_the_answer_does_not_authorize_a_write(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("ask", ("ask_question", {"question": "may I write secrets/key.txt?"})),
        replay_line("write", ("write_file", {"path": "secrets/key.txt", "content": "k"})),
        replay_line("done"),
    ], toml_extra='[policy]\ndeny_write = ["secrets/**"]\n')
    paused = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert paused.returncode == 4, paused.stderr
    last = json_lines(paused.stdout)[-1]
    assert last["status"] == "paused" and last["pause"]["kind"] == "question"
    assert last["pause"]["question"] == "may I write secrets/key.txt?"
    run_id = str(last["run_id"])

    missing = run_io(["resume", run_id, "-w", str(ws)])
    assert missing.returncode == 2 and "--answer" in missing.stderr

    resumed = run_io(["resume", run_id, "-w", str(ws), "--answer", "yes, write it", "--json"])
    assert resumed.returncode == 0, resumed.stderr
    events = json_lines(resumed.stdout)
    [answered] = [e for e in events if e["kind"] == "question"]
    assert answered["answer"] == "yes, write it" and answered["answered_by"] == "person"
    assert not any(e["kind"] == "tool_call" and e["name"] == "ask_question" for e in events)
    [write] = [e for e in events if e["kind"] == "tool_result" and e["name"] == "write_file"]
    assert write["is_error"] and write["refused"]["rule"] == "secrets/**"
    assert not (ws / "secrets" / "key.txt").exists()
    with open_store() as store:
        [question] = store.questions(run_id)
        assert (question.answer, question.answered_by) == ("yes, write it", "person")
        [asked] = store.ledger(run_id, 0)
        assert asked.observation == "The operator answered: yes, write it"


def test_the_plan_is_readable_from_another_process_while_the_run_is_blocked(
        tmp_path: Path) -> None:
    blocker = Blocker(tmp_path)
    plan = [{"content": "read the code", "status": "done"},
            {"content": "wait for the release", "status": "in_progress"},
            {"content": "finish", "status": "pending"}]
    ws = make_workspace(tmp_path / "w", [
        replay_line("plan", ("todo_write", {"todos": plan}), blocker.call()),
        replay_line("done"),
    ], toml_extra='[policy]\ntier = "full"\n')
    proc = subprocess.Popen([*io_cmd(), "run", "goal", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_id = first_event(proc)["run_id"]
        blocker.wait_started(proc)
        shown = run_io(["trace", run_id, "--plan", "--json", "-w", str(ws)])
        assert shown.returncode == 0, shown.stderr
        items = json.loads(shown.stdout)["plan"]
        assert [(i["content"], i["status"]) for i in items] == \
            [(p["content"], p["status"]) for p in plan]
        text = run_io(["trace", run_id, "--plan", "-w", str(ws)]).stdout.splitlines()
        assert text == ["[x] read the code", "[~] wait for the release", "[ ] finish"]
    finally:
        blocker.release()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    [event] = [e for e in json_lines(out) if e["kind"] == "plan"]
    assert event["items"] == plan
