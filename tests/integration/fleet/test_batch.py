"""`io batch`: many runs from one tasks file, locally, on SQLite and PostgreSQL, resumed
after a crash with nothing run twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness_core import Store
from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def _ws(root: Path, *lines: str) -> Path:
    return make_workspace(root, list(lines) or [
        replay_line("writing", ("write_file", {"path": "a.txt", "content": "x\n"})),
        replay_line("done"),
    ])


def _tasks(path: Path, *tasks: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def _finished(stdout: str) -> dict[str, Any]:
    return [e for e in json_lines(stdout) if e.get("kind") == "batch_finished"][0]


def test_a_batch_runs_every_task_and_reports_each(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        _ws(tmp_path / name)
    tasks = _tasks(tmp_path / "tasks.jsonl", *[{"goal": f"task {n}", "workspace": n}
                                               for n in ("a", "b", "c")])
    result = run_io(["batch", str(tasks), "--parallel", "2", "--json", "-w", str(tmp_path / "a")])
    assert result.returncode == 0, result.stderr
    summary = _finished(result.stdout)
    assert summary["runs"] == 3 and summary["finished"] == 3 and summary["exit_code"] == 0
    per_task = [e for e in json_lines(result.stdout) if e["kind"] == "batch_task"]
    assert sorted(e["index"] for e in per_task) == [0, 1, 2]
    assert all(e["run_id"].startswith(summary["batch_id"]) for e in per_task)
    for name in ("a", "b", "c"):
        assert (tmp_path / name / "a.txt").read_text() == "x\n"
    runs = json_lines(run_io(["runs", "--json", "--all", "-w", str(tmp_path / "a")]).stdout)
    assert sorted(r["goal"] for r in runs) == ["task a", "task b", "task c"]


def test_a_task_may_only_narrow_the_policy(tmp_path: Path) -> None:
    _ws(tmp_path / "a")
    tasks = _tasks(tmp_path / "tasks.jsonl",
                   {"goal": "narrowed", "workspace": "a",
                    "config": {"policy": {"deny_write": ["a.txt"]}, "budget": {"max_steps": 5}}})
    result = run_io(["batch", str(tasks), "--json", "-w", str(tmp_path / "a")])
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "a" / "a.txt").exists()
    run_id = [e for e in json_lines(result.stdout) if e["kind"] == "batch_task"][0]["run_id"]
    trace = run_io(["trace", run_id, "-w", str(tmp_path / "a")])
    assert "layer batch" in trace.stdout

    widening = _tasks(tmp_path / "wide.jsonl", {"goal": "ok", "workspace": "a"},
                      {"goal": "wider", "workspace": "a",
                       "config": {"policy": {"allow_exec": ["rm*"]}}})
    before = run_io(["runs", "--json", "--all", "-w", str(tmp_path / "a")]).stdout
    refused = run_io(["batch", str(widening), "-w", str(tmp_path / "a")])
    assert refused.returncode == 2
    assert "wide.jsonl line 2" in refused.stderr and "allow_exec" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert run_io(["runs", "--json", "--all", "-w", str(tmp_path / "a")]).stdout == before


@pytest.mark.parametrize("line", [
    "not json", '{"goal": "a", "template": "t"}', '{"goal": ""}', '{"goal": "a", "x": 1}',
    '{"goal": "a", "workspace": "nowhere"}', '{"goal": "a", "config": {"sandbox": {}}}',
    '{"goal": "a", "config": {"budget": {"max_steps": -1}}}', '[1, 2]',
])
def test_a_bad_tasks_line_is_a_usage_error_naming_the_line(tmp_path: Path, line: str) -> None:
    _ws(tmp_path / "a")
    (tmp_path / "t.jsonl").write_text('{"goal": "fine"}\n' + line + "\n")
    result = run_io(["batch", str(tmp_path / "t.jsonl"), "-w", str(tmp_path / "a")])
    assert result.returncode == 2, result.stderr
    assert "t.jsonl line 2" in result.stderr and "Traceback" not in result.stderr


def test_resume_finishes_a_batch_and_reruns_nothing(tmp_path: Path) -> None:
    _ws(tmp_path / "good")
    broken = make_workspace(tmp_path / "broken", [
        replay_line("writing", ("write_file", {"path": "a.txt", "content": "x\n"}))])
    tasks = _tasks(tmp_path / "tasks.jsonl", {"goal": "good", "workspace": "good"},
                   {"goal": "broken", "workspace": "broken"})
    first = run_io(["batch", str(tasks), "--json", "-w", str(tmp_path / "good")])
    assert first.returncode == 1
    summary = _finished(first.stdout)
    assert summary["finished"] == 1 and summary["errored"] == 1
    (broken / "replay.jsonl").write_text(
        (broken / "replay.jsonl").read_text() + replay_line("done") + "\n")
    again = run_io(["batch", "--resume", summary["batch_id"], "--json",
                    "-w", str(tmp_path / "good")])
    assert again.returncode == 0, again.stderr
    assert _finished(again.stdout)["finished"] == 2
    with Store(os.environ["IO_STORE"]) as store:
        tasks_now = store.batch_tasks(summary["batch_id"])
        assert [t.status for t in tasks_now] == ["finished", "finished"]
        assert len(store.steps(tasks_now[0].run_id)) == 2  # the finished run was not rerun
        assert len(store.list_runs()) == 2
        edits = store.ledger(tasks_now[1].run_id)
        assert [e.name for e in edits].count("write_file") == 1  # recorded call not repeated


def test_a_killed_batch_is_finished_by_resume_with_every_run_once(tmp_path: Path) -> None:
    slow = ("exec", {"argv": [sys.executable, "-c", "import time; time.sleep(0.4)"]})
    for index in range(4):
        make_workspace(tmp_path / f"w{index}", [
            replay_line("appending", ("write_file", {"path": "mark.txt", "content": "1\n"}),
                        slow),
            replay_line("done")], toml_extra='[policy]\ntier = "full"\n')
    tasks = _tasks(tmp_path / "tasks.jsonl", *[{"goal": f"t{i}", "workspace": f"w{i}"}
                                               for i in range(4)])
    with subprocess.Popen([*io_cmd(), "batch", str(tasks), "--parallel", "1", "--json",
                           "-w", str(tmp_path / "w0")], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())  # one task done, the next under way
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    with Store(os.environ["IO_STORE"]) as store:
        batch_id = store.list_runs()[-1].run_id.split("-")[0]
    assert first["run_id"].startswith(batch_id)
    result = run_io(["batch", "--resume", batch_id, "--json", "-w", str(tmp_path / "w0")])
    assert result.returncode == 0, result.stderr
    assert _finished(result.stdout)["finished"] == 4
    with Store(os.environ["IO_STORE"]) as store:
        runs = store.list_runs(limit=100)
        assert sorted(r.goal for r in runs) == ["t0", "t1", "t2", "t3"]  # one run per task
        for run in runs:
            assert [e.name for e in store.ledger(run.run_id)].count("exec") == 1


def test_a_task_can_check_out_a_git_ref_and_render_a_template(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _ws(repo)
    (repo / ".io" / "templates").mkdir(parents=True)
    (repo / ".io" / "templates" / "fix.md").write_text("Fix {{module}}: $ARGUMENTS\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "tag", "v1"], check=True)
    (repo / "io.toml").write_text("not = [valid")  # the later commit is broken on purpose
    subprocess.run([*git, "commit", "-qam", "two"], check=True)
    tasks = _tasks(tmp_path / "tasks.jsonl",
                   {"template": "fix", "vars": {"module": "billing"}, "arguments": ["quickly"],
                    "git": {"url": str(repo), "ref": "v1"}})
    result = run_io(["batch", str(tasks), "--json", "-w", str(tmp_path)])
    assert result.returncode == 0, result.stderr + result.stdout
    with Store(os.environ["IO_STORE"]) as store:
        (run,) = store.list_runs()
        assert run.goal.strip() == "Fix billing: quickly"
        assert Path(run.workspace).name == "0000" and "batches" in run.workspace


def test_a_batch_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    for name in ("a", "b"):
        _ws(tmp_path / name)
    tasks = _tasks(tmp_path / "tasks.jsonl", *[{"goal": n, "workspace": n} for n in ("a", "b")])
    env = {"IO_STORE": postgres_url}
    result = run_io(["batch", str(tasks), "-p", "2", "--json", "-w", str(tmp_path / "a")],
                    env=env)
    assert result.returncode == 0, result.stderr
    assert _finished(result.stdout)["finished"] == 2
    spend = run_io(["spend", "--by", "runner", "--json", "--all"], env=env)  # both workspaces
    assert json.loads(spend.stdout)["total"]["calls"] == 4


def test_a_task_process_whose_worker_died_before_it_was_armed_does_not_run(
        tmp_path: Path) -> None:
    # PR_SET_PDEATHSIG only holds from the child's prctl on: a worker killed just before
    # it left the task's `io run` running as an orphan, beside the run `io batch
    # --resume` started again. The child now checks its parent once armed.
    from io_harness_cli.commands._fanout import _die_with_parent

    marker = tmp_path / "ran"
    argv = ["sh", "-c", f"touch {marker}"]
    orphan = subprocess.run(argv, preexec_fn=_die_with_parent(-1), check=False)  # noqa: PLW1509
    assert orphan.returncode == -signal.SIGKILL and not marker.exists()
    child = subprocess.run(argv, preexec_fn=_die_with_parent(os.getpid()),  # noqa: PLW1509
                           check=False)
    assert child.returncode == 0 and marker.exists()
