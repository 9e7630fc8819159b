"""`io batch --engine ray` on a real local Ray cluster (loopback): a worker killed with
SIGKILL mid-run is retried by Ray, the retry resumes the run instead of repeating it,
and `io batch --resume` afterwards has nothing left to do."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from harness_core import Store
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

REPO = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def ray_cluster() -> Iterator[str]:
    import tempfile

    pytest.importorskip("ray")
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's sockets need a short path
    ray_bin = shutil.which("ray") or str(Path(sys.executable).with_name("ray"))
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    start = subprocess.run(
        [ray_bin, "start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.1",
         "--num-cpus", "2", "--include-dashboard=false", "--disable-usage-stats",
         "--temp-dir", temp], env=env, capture_output=True, text=True,
        timeout=180)
    assert start.returncode == 0, start.stdout + start.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray_bin, "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


def _kill_one_running_task(stop: threading.Event, killed: list[int]) -> None:
    """Poll for a Ray worker executing a task and SIGKILL it, once."""
    while not stop.is_set() and not killed:
        for proc in psutil.process_iter(["pid", "cmdline"]):
            cmdline = " ".join(proc.info["cmdline"] or [])
            if cmdline.startswith("ray::execute"):
                children = proc.children(recursive=True)
                if any("io_harness_cli" in " ".join(c.cmdline()) for c in children
                       if c.is_running()):
                    proc.kill()
                    killed.append(proc.pid)
                    return
        stop.wait(0.05)


def test_a_ray_batch_survives_a_killed_worker_and_runs_everything_once(
        tmp_path: Path, postgres_url: str, ray_cluster: str) -> None:
    count = 20
    for index in range(count):
        make_workspace(tmp_path / f"w{index}", [
            replay_line("append", ("exec", {"argv": ["sh", "-c", "echo x >> log.txt; sleep 1"]})),
            replay_line("done")], toml_extra='[policy]\ntier = "full"\n')
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"goal": f"t{i}", "workspace": f"w{i}"}) + "\n"
                             for i in range(count)))
    env = {"IO_STORE": postgres_url, "RAY_USAGE_STATS_ENABLED": "0"}
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_one_running_task, args=(stop, killed), daemon=True)
    killer.start()
    try:
        result = run_io(["batch", str(tasks), "--engine", "ray", "--address", ray_cluster,
                         "--parallel", "2", "--json", "-w", str(tmp_path / "w0")], env=env,
                        timeout=600)
    finally:
        stop.set()
        killer.join(timeout=10)
    assert killed, "no running task was found to kill"
    assert result.returncode == 0, result.stderr + result.stdout
    summary = [e for e in json_lines(result.stdout) if e["kind"] == "batch_finished"][0]
    assert summary["finished"] == count
    for index in range(count):
        lines = (tmp_path / f"w{index}" / "log.txt").read_text().splitlines()
        assert len(lines) <= 1  # the command ran at most once, even in the killed task
    with Store(postgres_url) as store:
        tasks_now = store.batch_tasks(summary["batch_id"])
        assert all(t.status == "finished" for t in tasks_now)
        assert max(t.attempts for t in tasks_now) >= 2  # the killed task was picked up again
        assert len(store.list_runs(limit=100)) == count
    again = run_io(["batch", "--resume", summary["batch_id"], "--json",
                    "-w", str(tmp_path / "w0")], env=env)
    assert again.returncode == 0, again.stderr
    with Store(postgres_url) as store:
        assert len(store.list_runs(limit=100)) == count


def test_ray_needs_a_shared_store(tmp_path: Path) -> None:
    make_workspace(tmp_path / "w", [replay_line("done")])
    (tmp_path / "t.jsonl").write_text('{"goal": "g", "workspace": "w"}\n')
    result = run_io(["batch", str(tmp_path / "t.jsonl"), "--engine", "ray",
                     "-w", str(tmp_path / "w")])
    assert result.returncode == 2 and "postgresql" in result.stderr
    assert "Traceback" not in result.stderr
