"""Ray against Dask for `io batch`: task dispatch overhead, and what happens to a task
whose worker is killed. The figures behind docs/fan-out-engines.md.

    python bench/fanout_engines.py

Both clusters are local, on loopback, 2 worker processes of 1 CPU each:
- dispatch: 300 no-op tasks submitted at once, wall time to the last result, per task;
  and the round trip of one task submitted alone (median of 30);
- a lost worker: 2 tasks that each sleep 2 s; 0.5 s in, the worker process running one
  of them gets SIGKILL; reported is whether its task still completes (recovered by the
  engine, with no code of ours), how many times its body started, and the wall time.
"""

from __future__ import annotations

import os
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

N_TASKS = 300


def noop(x: int) -> int:
    return x


def sleepy(marker: str) -> int:
    with open(marker, "a") as handle:
        handle.write(f"{os.getpid()}\n")
    time.sleep(2.0)
    return os.getpid()


def _kill_first_starter(marker: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if marker.exists() and marker.read_text().strip():
            os.kill(int(marker.read_text().split()[0]), signal.SIGKILL)
            return
        time.sleep(0.01)


def bench_ray() -> dict[str, Any]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level=40, log_to_driver=False)
    try:
        remote_noop = ray.remote(num_cpus=1)(noop)
        ray.get([remote_noop.remote(i) for i in range(20)])  # warm the workers
        started = time.perf_counter()
        ray.get([remote_noop.remote(i) for i in range(N_TASKS)])
        per_task = (time.perf_counter() - started) / N_TASKS
        single = []
        for i in range(30):
            t = time.perf_counter()
            ray.get(remote_noop.remote(i))
            single.append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as tmp:
            marker = Path(tmp) / "m"
            remote_sleepy = ray.remote(num_cpus=1, max_retries=3)(sleepy)
            started = time.perf_counter()
            refs = [remote_sleepy.remote(str(marker)), remote_sleepy.remote(str(Path(tmp) / "o"))]
            _kill_first_starter(marker)
            try:
                ray.get(refs)
                recovered = True
            except Exception:  # the engine gave up on the task
                recovered = False
            lost = time.perf_counter() - started
            starts = len(marker.read_text().split())
        return {"per_task_ms": per_task * 1000, "single_ms": statistics.median(single) * 1000,
                "recovered": recovered, "starts": starts, "lost_wall_s": lost}
    finally:
        ray.shutdown()


def bench_dask() -> dict[str, Any]:
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, host="127.0.0.1") as cluster, Client(cluster) as client:
        client.gather(client.map(noop, range(20), pure=False))
        started = time.perf_counter()
        client.gather(client.map(noop, range(N_TASKS), pure=False))
        per_task = (time.perf_counter() - started) / N_TASKS
        single = []
        for i in range(30):
            t = time.perf_counter()
            client.submit(noop, i, pure=False).result()
            single.append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as tmp:
            marker = Path(tmp) / "m"
            started = time.perf_counter()
            futures = [client.submit(sleepy, str(marker), pure=False),
                       client.submit(sleepy, str(Path(tmp) / "o"), pure=False)]
            _kill_first_starter(marker)
            try:
                client.gather(futures, errors="raise")
                recovered = True
            except Exception:  # KilledWorker after allowed-failures
                recovered = False
            lost = time.perf_counter() - started
            starts = len(marker.read_text().split())
        return {"per_task_ms": per_task * 1000, "single_ms": statistics.median(single) * 1000,
                "recovered": recovered, "starts": starts, "lost_wall_s": lost}


if __name__ == "__main__":
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for name, bench in (("ray", bench_ray), ("dask", bench_dask)):
        r = bench()
        print(f"{name:5} dispatch {r['per_task_ms']:.2f} ms/task ({N_TASKS} at once),"
              f" single round trip {r['single_ms']:.2f} ms; killed worker: task"
              f" {'recovered' if r['recovered'] else 'LOST'}, body started {r['starts']}x,"
              f" {r['lost_wall_s']:.2f} s for the 2 tasks")
