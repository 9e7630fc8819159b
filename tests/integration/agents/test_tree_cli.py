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

    runs = json_lines(run_io(["runs", "--json", "--all"]).stdout)
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

    spent = json_lines(run_io(["spend", "--by", "tree", "--json", "--all"]).stdout)[0]
    (group,) = spent["groups"]
    assert group["key"] == root
    by_run = json_lines(run_io(["spend", "--by", "run", "--json", "--all"]).stdout)[0]
    assert len(by_run["groups"]) == 4
    rolled = json_lines(run_io(["spend", "--by", "run", "--tree", "--json", "--all"]).stdout)[0]
    assert [g["key"] for g in rolled["groups"]] == [root]
    assert rolled["groups"][0]["calls"] == sum(g["calls"] for g in by_run["groups"])


def test_a_childs_deferred_approval_pauses_the_tree_and_resume_root_approve_reaches_it(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("", ("spawn_agent", {"goal": "make a file"})),
        replay_line("", ("exec", {"argv": ["touch", "made.txt"]})),
        replay_line("child made it"),
        replay_line("root done"),
    ], toml_extra='[policy]\napproval = "ask"\n')
    first = run_io(["run", "lead", "-w", str(ws), "--json"])
    assert first.returncode == 4, first.stderr
    last = json_lines(first.stdout)[-1]
    root, pause = str(last["run_id"]), last["pause"]
    assert pause["kind"] == "approval" and pause["waiting_run_id"] != root
    assert not (ws / "made.txt").exists()
    bad = run_io(["resume", root, "-w", str(ws)])
    assert bad.returncode == 2 and "--approve" in bad.stderr
    good = run_io(["resume", root, "-w", str(ws), "--approve", "--json"])
    assert good.returncode == 0, good.stderr
    assert (ws / "made.txt").exists()
    child = json_lines(run_io(["trace", str(pause["waiting_run_id"]), "-w", str(ws),
                               "--json"]).stdout)[0]
    assert child["refusals"][-1]["decided_by"] == "operator"


def test_stored_policy_resumes_every_run_of_the_tree_under_what_it_recorded(
        tmp_path: Path) -> None:
    lines = [
        replay_line("", ("spawn_agent", {"goal": "ask, then write"})),
        replay_line("", ("ask_question", {"question": "go?"})),
        replay_line("", ("write_file", {"path": "out.txt", "content": "written"})),
        replay_line("child done"),
        replay_line("root done"),
    ]
    for stored, expect in ((True, True), (False, False)):
        ws = make_workspace(tmp_path / f"w{stored}", lines)
        first = run_io(["run", "lead", "-w", str(ws), "--json"])
        assert first.returncode == 4, first.stderr
        root = str(json_lines(first.stdout)[-1]["run_id"])
        # the operator tightens the config after the tree started
        (ws / "io.toml").write_text((ws / "io.toml").read_text()
                                    + '\n[policy]\ndeny_write = ["out.txt"]\n')
        flag = ["--stored-policy"] if stored else []
        done = run_io(["resume", root, "-w", str(ws), "--answer", "yes", *flag])
        assert done.returncode == 0, done.stderr
        assert (ws / "out.txt").exists() is expect


def test_ctrl_c_during_parallel_children_exits_130_and_resume_finishes_the_tree(
        tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import io_cmd

    script = tmp_path / "wait.py"
    script.write_text(
        "import pathlib, time, sys\n"
        "pathlib.Path(sys.argv[2]).write_text('started')\n"
        "while not pathlib.Path(sys.argv[1]).exists():\n"
        "    time.sleep(0.02)\n"
        "with open(sys.argv[3], 'a') as f: f.write('ran\\n')\n")
    release, log = tmp_path / "release", tmp_path / "ran.log"

    def wait_call(name: str) -> tuple[str, dict[str, object]]:
        return ("exec", {"argv": [sys.executable, str(script), str(release),
                                  str(tmp_path / name), str(log)]})

    ws = make_workspace(tmp_path / "w", [
        replay_line("", ("spawn_agent", {"goal": "a"}), ("spawn_agent", {"goal": "b"})),
        replay_line("", wait_call("a.started")),
        replay_line("a done"),
        replay_line("", wait_call("b.started")),
        replay_line("b done"),
        replay_line("root done"),
    ], toml_extra='[policy]\ntier = "full"\n')
    proc = subprocess.Popen([*io_cmd(), "run", "lead", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not ((tmp_path / "a.started").exists() and (tmp_path / "b.started").exists()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the children never started their tools"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    release.write_text("go")  # the children's tools end; the children stop at their boundary
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    root = str(json_lines(out)[-1]["run_id"])
    resumed = run_io(["resume", root, "-w", str(ws), "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert log.read_text().splitlines() == ["ran", "ran"]  # each child's tool ran once
    runs = [r for r in json_lines(run_io(["runs", "--json", "--all"]).stdout) if r["root_run_id"] == root]
    assert sorted(r["status"] for r in runs) == ["finished"] * 3


@pytest.mark.parametrize("key", ["allow_write", "allow_net", "tier"])
def test_an_agent_definition_has_no_key_that_could_widen(tmp_path: Path, key: str) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")],
                        toml_extra=f'[agents.writer]\nrole = "w"\n{key} = ["**"]\n')
    result = run_io(["config", "check", "-w", str(ws)])
    assert result.returncode == 2
    assert f"agents.writer.{key}" in result.stderr and "Traceback" not in result.stderr
    ran = run_io(["run", "goal", "-w", str(ws)])
    assert ran.returncode == 2 and f"agents.writer.{key}" in ran.stderr


def test_io_interrupt_of_the_root_stops_its_running_children(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    from tests.conftest import io_cmd

    script = tmp_path / "wait.py"
    script.write_text(
        "import pathlib, time, sys\n"
        "pathlib.Path(sys.argv[2]).write_text('started')\n"
        "while not pathlib.Path(sys.argv[1]).exists():\n"
        "    time.sleep(0.02)\n")
    release, started = tmp_path / "release", tmp_path / "started"
    ws = make_workspace(tmp_path / "w", [
        replay_line("", ("spawn_agent", {"goal": "wait"})),
        replay_line("", ("exec", {"argv": [sys.executable, str(script), str(release),
                                            str(started)]})),
        replay_line("", ("exec", {"argv": ["true"]})),  # never reached: interrupted first
        replay_line("child done"),
        replay_line("root done"),
    ], toml_extra='[policy]\ntier = "full"\n')
    proc = subprocess.Popen([*io_cmd(), "run", "lead", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not started.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the child never started its tool"
        time.sleep(0.01)
    runs = json_lines(run_io(["runs", "--json", "--all"]).stdout)
    root = next(str(r["run_id"]) for r in runs if r["depth"] == 0)
    assert run_io(["interrupt", root]).returncode == 0
    release.write_text("go")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    statuses = {r["depth"]: r["status"] for r in json_lines(run_io(["runs", "--json", "--all"]).stdout)}
    assert statuses == {0: "interrupted", 1: "interrupted"}
    resumed = run_io(["resume", root, "-w", str(ws)])
    assert resumed.returncode == 0, resumed.stderr
