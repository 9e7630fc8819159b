"""Trees through the real CLI: a child's question pauses the root (exit 4), `io resume
ROOT --answer` finishes the tree, events carry run_id and root_run_id."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def _tree_workspace(root: Path) -> Path:
    return make_workspace(root, [
        replay_line("", ("spawn_agent", {"goal": "ask the operator", "agent": "asker"})),
        replay_line("", ("ask_question", {"question": "which colour?"})),
        replay_line("child: blue it is"),
        replay_line("root done"),
    ], toml_extra='[agents]\nmax_depth = 2\n\n[agents.asker]\nrole = "Ask first."\n')


def test_a_childs_question_pauses_the_root_and_resume_root_answer_finishes(
        tmp_path: Path) -> None:
    ws = _tree_workspace(tmp_path / "w")
    first = run_io(["run", "lead", "-w", str(ws), "--json"])
    assert first.returncode == 4, first.stderr
    events = json_lines(first.stdout)
    finished = events[-1]
    root = str(finished["run_id"])
    assert finished["kind"] == "run_finished" and finished["status"] == "paused"
    pause = finished["pause"]
    assert pause["question"] == "which colour?" and pause["waiting_run_id"] != root
    assert {e["root_run_id"] for e in events} == {root}
    assert {e["run_id"] for e in events} == {root, pause["waiting_run_id"]}

    wrong = run_io(["resume", str(pause["waiting_run_id"]), "-w", str(ws), "--answer", "x"])
    assert wrong.returncode == 2 and root in wrong.stderr

    second = run_io(["resume", root, "-w", str(ws), "--answer", "blue", "--json"])
    assert second.returncode == 0, second.stderr
    assert json_lines(second.stdout)[-1]["status"] == "finished"

    runs = json_lines(run_io(["runs", "--json"]).stdout)
    by_id = {r["run_id"]: r for r in runs}
    assert by_id[pause["waiting_run_id"]]["parent_run_id"] == root
    assert by_id[root]["parent_run_id"] is None
