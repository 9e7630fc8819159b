"""A batch's task processes die with their driver (issue 34, item 7): kill -9 of an
`io batch` driver left its `io run` children running with nothing watching them. Each
child is now armed with the parent-death signal, and `io batch --resume` ends, before it
resumes anything, a task process whose launcher is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness_core import Store, load_tasks
from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

_DEADLINE = 120.0  # a loaded CI machine starts two io runs slowly


def _poll(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.05)


def _slow_workspace(root: Path, marker: str) -> Path:
    # The exec sleeps long enough that a child left running would outlive every wait
    # here, then leaves a marker: a marker means an orphan ran on to the end.
    slow = ("exec", {"argv": [sys.executable, "-c",
                              f"import time; time.sleep(90); open({marker!r}, 'w')"]})
    return make_workspace(root, [replay_line("sleeping", slow), replay_line("done")],
                          toml_extra='[policy]\ntier = "full"\n')


def _task_processes(run_ids: set[str]) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "ppid"]):
        argv = proc.info.get("cmdline") or []
        if "io_harness_cli" in argv and run_ids.intersection(argv):
            found.append(proc)
    # A child io has just forked carries io's command line until it execs (a loaded
    # machine catches it there): the task process is the one whose parent is not io.
    pids = {proc.pid for proc in found}
    return [proc for proc in found if proc.info.get("ppid") not in pids]


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.Error:
            continue
    return out


def _sleeping(store_path: str, run_ids: list[str]) -> bool:
    """Whether every run has started its slow exec (a step with the call is recorded)."""
    with Store(store_path) as store:
        known = {r.run_id for r in store.list_runs(limit=100)}
        return all(rid in known and store.steps(rid) for rid in run_ids)


@pytest.fixture
def leftovers() -> Iterator[list[psutil.Process]]:
    """Processes a test started; any still alive at the end is killed (no leak)."""
    procs: list[psutil.Process] = []
    yield procs
    for proc in _alive(procs):
        for child in proc.children(recursive=True):
            child.kill()
        proc.kill()


def _tasks(tmp_path: Path, count: int) -> Path:
    for index in range(count):
        _slow_workspace(tmp_path / f"w{index}", str(tmp_path / f"w{index}" / "slept"))
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"goal": f"t{i}", "workspace": f"w{i}"}) + "\n"
                            for i in range(count)))
    return path


def _finished(stdout: str) -> dict[str, Any]:
    return [e for e in json_lines(stdout) if e.get("kind") == "batch_finished"][0]


def test_kill_9_of_the_driver_ends_its_children_and_resume_finishes_each_task_once(
        tmp_path: Path, leftovers: list[psutil.Process]) -> None:
    tasks = _tasks(tmp_path, 2)
    said = tmp_path / "driver.out"
    with said.open("wb") as sink:
        driver = subprocess.Popen([*io_cmd(), "batch", str(tasks), "--parallel", "2", "--json",
                                   "-w", str(tmp_path / "w0")], stdout=sink, stderr=sink)
    leftovers.append(psutil.Process(driver.pid))
    store_path = os.environ["IO_STORE"]

    def run_ids() -> list[str]:
        with Store(store_path) as store:
            return sorted(r.run_id for r in store.list_runs(limit=100))

    def both_sleep() -> bool:
        if driver.poll() is not None:  # the batch ended before its tasks slept: say why
            raise AssertionError(f"the driver ended ({driver.returncode}): "
                                 f"{said.read_text(errors='replace')[-2000:]}")
        return len(run_ids()) == 2 and _sleeping(store_path, run_ids())

    _poll(both_sleep, "both tasks are in their slow exec")
    children = _task_processes(set(run_ids()))
    assert len(children) == 2 and all(c.ppid() == driver.pid for c in children)
    leftovers.extend(children)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait(timeout=30)
    _poll(lambda: not _alive(children), "the driver's children have ended")

    batch_id = run_ids()[0].split("-")[0]
    result = run_io(["batch", "--resume", batch_id, "--json", "-w", str(tmp_path / "w0")])
    assert result.returncode == 0, result.stderr
    assert _finished(result.stdout)["finished"] == 2
    with Store(store_path) as store:
        runs = store.list_runs(limit=100)
        assert sorted(r.goal for r in runs) == ["t0", "t1"]
        for run in runs:
            assert [e.name for e in store.ledger(run.run_id)].count("exec") == 1
    assert not any((tmp_path / f"w{i}" / "slept").exists() for i in range(2))


def test_resume_ends_a_task_process_whose_driver_is_gone(
        tmp_path: Path, leftovers: list[psutil.Process]) -> None:
    # A task process launched without the parent-death signal (another platform, an
    # older io) outlives its driver: here a shell launches it and exits at once.
    tasks = _tasks(tmp_path, 1)
    ws = str(tmp_path / "w0")
    batch_id, store_path = "borphan00001", os.environ["IO_STORE"]
    run_id = f"{batch_id}-0000"
    with Store(store_path) as store:  # the batch as `io batch` records it, nothing run yet
        store.create_batch(batch_id, tasks_file=str(tasks), engine="local",
                           settings={"parallel": 1},
                           tasks=[(t.index, run_id, t.to_json()) for t in load_tasks(tasks)])
    argv = " ".join([*io_cmd(), "run", "--run-id", run_id, "--json", "-w", ws, "--", "t0"])
    subprocess.run(["sh", "-c", f"IO_BATCH_DRIVER=$$ {argv} >/dev/null 2>&1 &"], check=True)
    _poll(lambda: _sleeping(store_path, [run_id]), "the orphan is in its slow exec")
    [orphan] = _task_processes({run_id})
    leftovers.append(orphan)
    assert orphan.ppid() != int(orphan.environ()["IO_BATCH_DRIVER"])

    result = run_io(["batch", "--resume", batch_id, "--json", "-w", ws])
    assert result.returncode == 0, result.stderr
    assert not _alive([orphan])
    assert f"ended 1 task process(es) of a batch driver that is gone (pid {orphan.pid})" \
        in result.stderr
    assert _finished(result.stdout)["finished"] == 1
    with Store(store_path) as store:
        assert [e.name for e in store.ledger(run_id)].count("exec") == 1
    assert not (tmp_path / "w0" / "slept").exists()  # ended, not waited for


def test_a_run_driven_by_a_process_that_names_no_driver_is_left_alone(
        tmp_path: Path, leftovers: list[psutil.Process]) -> None:
    from io_harness_cli.commands._fanout import end_orphans

    ws = _slow_workspace(tmp_path / "w", str(tmp_path / "w" / "slept"))
    env = {k: v for k, v in os.environ.items() if k != "IO_BATCH_DRIVER"}
    by_hand = subprocess.Popen([*io_cmd(), "run", "--run-id", "byhand-0000", "--json",
                                "-w", str(ws), "--", "g"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    leftovers.append(psutil.Process(by_hand.pid))
    try:
        _poll(lambda: _sleeping(os.environ["IO_STORE"], ["byhand-0000"]), "the run sleeps")
        assert end_orphans(["byhand-0000"]) == []
        assert by_hand.poll() is None
    finally:
        for child in psutil.Process(by_hand.pid).children(recursive=True):
            child.kill()
        by_hand.kill()
        by_hand.wait(timeout=30)
