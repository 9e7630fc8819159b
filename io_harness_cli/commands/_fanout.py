"""Run a batch's tasks: each task one `io run` (or `io resume`) process, on this machine
or as Ray tasks, all writing to one store.

A task's run id is fixed when the batch is created, so `execute` is idempotent: a run
that already finished is reported, not started; one that exists unfinished is resumed
under the policy it recorded (`--stored-policy`, so a task's narrowing survives); only
a task whose run does not exist starts one. That is what makes a retried Ray task (its
worker died) or `io batch --resume` safe: nothing runs twice, and a call already
recorded is never repeated (the ledger's rule). `execute` is a module-level function of
picklable dataclasses so Ray can ship it to workers.

A task's process dies with the process that launched it (the driver, or a Ray worker):
it is armed with Linux's parent-death signal before it runs. Where that signal is not
available, or for a process launched before it was, `end_orphans` ends, before a
resumed batch starts anything, every task process whose launcher is gone: each carries
its launcher's pid in `DRIVER_VARIABLE`, and a process whose parent is no longer that
pid was orphaned.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness_core import record, run_helper, safe_python_argv

__all__ = ["DRIVER_VARIABLE", "Job", "Result", "end_orphans", "execute", "run_local", "run_ray"]

_IN_USE_WAIT_SECONDS = 120.0  # a run driven by an orphan of a dead worker: wait this long
_POLL_SECONDS = 0.25
_END_WAIT_SECONDS = 10.0
"""Seconds an orphan has to stop after SIGTERM (it checkpoints, as on Ctrl-C) before it
and what it started are killed."""
DRIVER_VARIABLE = "IO_BATCH_DRIVER"
"""Names, in a task process's environment, the pid of the process that launched it."""


@record
class Job:
    """Everything a worker needs for one task (plain values: Ray pickles it)."""

    batch_id: str
    index: int
    run_id: str
    task: dict[str, Any]
    store: str
    config: str | None
    workdir: str
    python: str
    die_with_parent: bool = True


@record
class Result:
    """How one task ended."""

    index: int
    run_id: str
    status: str
    exit_code: int
    steps: int
    tokens: int
    host: str
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "run_id": self.run_id, "status": self.status,
                "exit_code": self.exit_code, "steps": self.steps, "tokens": self.tokens,
                "host": self.host, "error": self.error}


_EXIT_BY_STATUS = {"finished": 0, "failed": 1, "stopped": 3, "paused": 4, "interrupted": 130,
                   "errored": 1}


def execute(job: Job) -> Result:
    """Bring one task's run to an end (start, resume, or just report it)."""
    from harness_core import HarnessError, RunNotFound, Store

    host = socket.gethostname()
    try:
        workspace = _workspace(job)
        with Store(job.store) as store:
            try:
                record = store.run(job.run_id)
            except RunNotFound:
                record = None
            if record is not None and record.status.value in ("finished", "failed", "stopped",
                                                              "paused"):
                return _recorded(job, store, host)
            store.mark_batch_task(job.batch_id, job.index, "launched", host=host)
        deadline = time.monotonic() + _IN_USE_WAIT_SECONDS
        exists = record is not None
        while True:
            in_use, reason = _launch(job, workspace, resume=exists)
            if not in_use or time.monotonic() > deadline:
                break
            time.sleep(_POLL_SECONDS)  # another process still drives it: poll until it stops
            exists = True
        with Store(job.store) as store:
            return _recorded(job, store, host, reason)
    except HarnessError as exc:
        return Result(job.index, job.run_id, "errored", 1, 0, 0, host, exc.message)


def _recorded(job: Job, store: Any, host: str, reason: str = "") -> Result:
    from harness_core import RunNotFound

    try:
        record = store.run(job.run_id)
    except RunNotFound:
        store.mark_batch_task(job.batch_id, job.index, "done", exit_code=1, host=host)
        return Result(job.index, job.run_id, "errored", 1, 0, 0, host,
                      reason or "the run was not created")
    status = record.status.value
    code = _EXIT_BY_STATUS.get(status, 1)
    if record.exit_code is not None:  # recorded with the run: a failed gate round is 1
        code = int(record.exit_code)
    store.mark_batch_task(job.batch_id, job.index, "done", exit_code=code, host=host)
    return Result(job.index, job.run_id, status, code, record.steps_used, record.tokens_used,
                  host, record.reason if status != "finished" else None)


def _launch(job: Job, workspace: Path, *, resume: bool) -> tuple[bool, str]:
    """Run `io run`/`io resume` for the task: (another process drives the run, the reason
    the process gave for ending)."""
    base = [job.python, "-m", "io_harness_cli"]
    common = ["--json", "-w", str(workspace), *(["-c", job.config] if job.config else [])]
    if resume:
        argv = [*base, "resume", job.run_id, "--stored-policy", *common]
    else:
        narrow = ["--narrow", json.dumps(job.task["config"])] if job.task.get("config") else []
        argv = [*base, "run", "--run-id", job.run_id, *common, *narrow, *_what(job.task)]
    env = {**os.environ, "IO_STORE": job.store, DRIVER_VARIABLE: str(os.getpid())}
    # Through the host boundary: started in io's private folder (the task's workspace is
    # given with -w), this Python in safe-path mode, so no module in the operator's
    # current folder stands in for io's own.
    proc = run_helper(safe_python_argv(argv), env=env,
                      preexec_fn=(_die_with_parent(os.getpid())
                                  if job.die_with_parent else None))
    stdout = proc.stdout.decode("utf-8", "replace")
    finished = _finished_event(stdout)
    reason = (str((finished or {}).get("reason", ""))
              or proc.stderr.decode("utf-8", "replace").strip()[-500:])
    return proc.returncode == 5 or reason.startswith(f"run {job.run_id} is in use"), reason


def _what(task: dict[str, Any]) -> list[str]:
    if task.get("template"):
        pairs = [f"{k}={v}" for k, v in (task.get("vars") or {}).items()]
        return ["--template", str(task["template"]), *pairs, "--", *task.get("arguments", [])]
    return ["--", str(task["goal"])]


def _finished_event(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and event.get("kind") == "run_finished":
            return event
    return None


def _workspace(job: Job) -> Path:
    from harness_core import UsageError

    task = job.task
    if task.get("workspace"):
        return Path(str(task["workspace"]))
    url, ref = str(task["git_url"]), task.get("git_ref")
    target = Path(job.workdir) / job.batch_id / f"{job.index:04d}"
    if not (target / ".git").is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        clone = run_helper(["git", "clone", "--quiet", "--", url, str(partial)])
        if clone.returncode != 0:
            last = clone.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
            raise UsageError(f"task {job.index}: git clone of {url} failed: {last}")
        if ref:
            checkout = run_helper(["git", "-C", str(partial), "checkout", "--quiet", ref,
                                   "--"])
            if checkout.returncode != 0:
                raise UsageError(f"task {job.index}: git checkout {ref} failed")
        partial.rename(target)  # a clone is either whole or absent
    return target


def _die_with_parent(parent: int) -> Callable[[], None]:
    """What a child runs before its program: SIGKILL when the worker `parent` that
    launched it dies (Linux prctl), and at once if `parent` is already gone.

    The signal is armed only from the child's `prctl` on: a worker killed between the
    fork and that call left the child running on, an orphan that went on driving its
    task's run while `io batch --resume` started the same run again beside it.
    """
    import ctypes
    import signal

    try:
        # Looked up here, before the fork: the batch forks from several threads at once,
        # and the child should only call into libc, not load anything.
        prctl = ctypes.CDLL(None).prctl
    except (AttributeError, OSError):
        prctl = None

    def arm() -> None:
        if prctl is None:
            return
        prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the worker died before the signal was armed
            os.kill(os.getpid(), signal.SIGKILL)

    return arm


def end_orphans(run_ids: Sequence[str]) -> list[int]:
    """End the task processes of `run_ids` whose launcher died (see the module docstring),
    with everything they started: SIGTERM, then SIGKILL after `_END_WAIT_SECONDS`.

    A process driving one of these runs that does not name its launcher (an `io resume`
    typed by hand) is left alone; `execute` waits for it as for any run in use.

    Returns:
        The pids of the task processes ended.
    """
    import psutil  # only a resumed batch lists processes

    wanted = set(run_ids)
    orphans: list[psutil.Process] = []
    for proc in psutil.process_iter(["pid", "cmdline", "ppid"]):
        argv = proc.info.get("cmdline") or []
        if "io_harness_cli" not in argv or not wanted.intersection(argv):
            continue
        try:
            launcher = proc.environ().get(DRIVER_VARIABLE)
        except psutil.Error:
            continue  # gone, or another user's: not ours to end
        if launcher is not None and launcher != str(proc.info.get("ppid")):
            orphans.append(proc)
    if not orphans:
        return []
    tree: list[psutil.Process] = list(orphans)
    for proc in orphans:
        with contextlib.suppress(psutil.Error):
            tree.extend(proc.children(recursive=True))
    for proc in orphans:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(orphans, timeout=_END_WAIT_SECONDS)
    for proc in [*alive, *tree]:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(tree, timeout=_END_WAIT_SECONDS)
    return [proc.pid for proc in orphans]


def run_local(jobs: Sequence[Job], parallel: int, on_result: Callable[[Result], None]) -> None:
    """Run `jobs` on this machine, `parallel` at a time, reporting each as it ends."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        futures = [pool.submit(execute, job) for job in jobs]
        for future in as_completed(futures):
            on_result(future.result())


def run_ray(jobs: Sequence[Job], address: str | None, parallel: int,
            on_result: Callable[[Result], None]) -> None:
    """Run `jobs` as Ray tasks on the cluster at `address` (a worker lost mid-task is
    retried by Ray, and `execute` makes the retry resume rather than repeat)."""
    from harness_core import ConfigError

    try:
        import ray
    except ImportError as exc:
        raise ConfigError("--engine ray needs the ray package",
                          hint="pip install 'io-harness[ray]'") from exc
    # Workers see the driver's import path, so a checkout that is not installed on the
    # cluster (a test, a development tree) runs the same code the driver does.
    path = os.environ.get("PYTHONPATH")
    runtime_env = {"env_vars": {"PYTHONPATH": path}} if path else None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            _connect(ray, address, runtime_env)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {address or 'auto'}: {exc}",
                          hint="start one with `ray start --head`, or pass --address") from exc
    real_stdout = sys.stdout
    try:
        # Ray prints cluster notices ("a worker died") from its own threads; stdout
        # belongs to io's results (JSON lines with --json), so they go to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            remote = ray.remote(num_cpus=1, max_retries=5, retry_exceptions=False)(execute)
            by_ref = {remote.remote(job): job for job in jobs}
            for ref in _as_completed(ray, list(by_ref)):
                result = _ray_result(ray, ref, by_ref[ref])
                with contextlib.redirect_stdout(real_stdout):
                    on_result(result)
    finally:
        with contextlib.redirect_stdout(sys.stderr):
            ray.shutdown()


def _connect(ray: Any, address: str | None, runtime_env: dict[str, Any] | None) -> None:
    ray.init(address=address or "auto", ignore_reinit_error=True, log_to_driver=False,
             logging_level=40, include_dashboard=False,  # 40: logging.ERROR
             runtime_env=runtime_env)


def _ray_result(ray: Any, ref: Any, job: Job) -> Result:
    """The task's result; a task Ray gave up on (retries spent) is reported, not raised."""
    try:
        result: Result = ray.get(ref)
        return result
    except ray.exceptions.RayError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Result(job.index, job.run_id, "errored", 1, 0, 0, "-", f"ray: {first}")


def _as_completed(ray: Any, pending: list[Any]) -> Iterator[Any]:
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        yield from done


def python_executable() -> str:
    """The interpreter workers launch `io` with (the one running now)."""
    return sys.executable
