"""Trees through the real CLI: a child's question pauses the root (exit 4), `io resume
ROOT --answer` finishes the tree, events carry run_id and root_run_id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def _tree_workspace(root: Path) -> Path:
    return make_workspace(root, [
        replay_line("", ("spawn_agent", {"goal": "ask the operator", "agent": "asker"})),
        replay_line("", ("ask_question", {"question": "which colour?"})),
        replay_line("child: blue it is"),
        replay_line("root done"),
    ], toml_extra='[agents]\nmax_depth = 2\n\n[agents.asker]\nrole = "Ask first."\n')


@pytest.mark.parametrize("store_backend", ["sqlite", "postgresql"], indirect=True)
def test_a_childs_question_pauses_the_root_and_resume_root_answer_finishes(
        tmp_path: Path, store_backend: str) -> None:
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


@pytest.mark.parametrize("store_backend", ["sqlite", "postgresql"], indirect=True)
def test_trace_shows_the_tree_and_spend_rolls_it_up(tmp_path: Path, store_backend: str) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("", ("spawn_agent", {"goal": "review it", "agent": "reviewer"}),
                    ("spawn_agent", {"goal": "plain child"})),
        replay_line("", ("spawn_agent", {"goal": "grandchild"}), tokens=20),
        replay_line("grandchild done", tokens=30),
        json.dumps({"text": "reviewed", "model": "m-small-2026",
                    "usage": {"prompt_tokens": 40, "completion_tokens": 1, "total_tokens": 41}}),
        replay_line("plain done", tokens=50),
        replay_line("root done", tokens=60),
    ], toml_extra='[agents.reviewer]\nmodel = "m-small"\nrole = "Review."\n')
    run = run_io(["run", "lead", "-w", str(ws), "--json"])
    assert run.returncode == 0, run.stderr
    root = str(json_lines(run.stdout)[-1]["run_id"])

    traced = json_lines(run_io(["trace", root, "-w", str(ws), "--json"]).stdout)[0]
    tree = traced["tree"]
    assert [(n["depth"], n["goal"]) for n in tree] == [
        (0, "lead"), (1, "review it"), (2, "grandchild"), (1, "plain child")]
    assert tree[1]["agent"] == "reviewer" and tree[1]["status"] == "finished"
    assert tree[1]["steps"] == 2 and tree[1]["tokens"] == 21 + 41
    assert tree[1]["models"] == ["m-small-2026", "scripted"]  # what served, per step
    assert tree[0]["models"] == ["scripted"]

    human = run_io(["trace", root, "-w", str(ws)], env={"NO_COLOR": "1"})
    assert human.returncode == 0, human.stderr
    text = human.stdout[human.stdout.index("tree:"):]
    lines = text.splitlines()[1:]
    assert lines[0].startswith(f"  {root}") and lines[1].startswith("    ")
    assert lines[2].startswith("      ") and "(reviewer)  finished  steps 2" in lines[1]

    spent = json_lines(run_io(["spend", "--by", "tree", "--json"]).stdout)[0]
    (group,) = spent["groups"]
    assert group["key"] == root
    by_run = json_lines(run_io(["spend", "--by", "run", "--json"]).stdout)[0]
    assert len(by_run["groups"]) == 4
