"""A PostgreSQL store shared by processes: kill -9 of one runner, resume by another,
nothing repeated; `io store migrate` copies a SQLite store losslessly.

The server is a real PostgreSQL on loopback (see `postgres_url` in tests/conftest.py).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from harness_core import INTERRUPTED_OBSERVATION, RunNotFound, RunStatus, Store
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line
from tests.integration.crash.test_crash_resume import RUNNER, _replay


def _spawn(tmp: Path, url: str, mode: str, point: str = "none",
           step: int = -1) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(RUNNER), url, str(tmp / "ws"), str(tmp / "replay.jsonl"), mode,
         point, str(step)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _resume_until_done(tmp: Path, url: str) -> None:
    said = []
    for _ in range(5):
        code, out, err = _finish(_spawn(tmp, url, "resume:run-crash"))
        assert code == 0, err
        if out.startswith("finished"):
            return
        said.append((out[-300:], err[-600:]))
    raise AssertionError(f"run did not finish after resuming: {said}")


def _has_run(url: str) -> bool:
    with Store(url) as store:
        try:
            store.run("run-crash")
        except RunNotFound:
            return False
    return True


@pytest.mark.parametrize("point", ["mid_commit", "after_effect"])
def test_a_runner_killed_mid_run_is_resumed_by_another_process(
        tmp_path: Path, postgres_url: str, point: str) -> None:
    (tmp_path / "ws").mkdir()
    _replay(tmp_path / "replay.jsonl", 4)
    code, _, _ = _finish(_spawn(tmp_path, postgres_url, "start", point, 2))
    assert code == -9
    _resume_until_done(tmp_path, postgres_url)
    lines = (tmp_path / "ws" / "log.txt").read_text().splitlines()
    assert lines == [f"{s}:line" for s in range(4)]  # each call exactly once
    with Store(postgres_url) as store:
        assert store.run("run-crash").status is RunStatus.FINISHED
        assert [s.step_index for s in store.steps("run-crash")] == list(range(5))
        if point == "after_effect":
            entry = [e for e in store.ledger("run-crash", 2) if e.name == "append_line"][0]
            assert entry.observation == INTERRUPTED_OBSERVATION


@pytest.mark.parametrize("seed", range(3))
def test_random_kills_on_postgresql_keep_at_most_once(
        tmp_path: Path, postgres_url: str, seed: int) -> None:
    rng = random.Random(seed)
    steps = 12
    (tmp_path / "ws").mkdir()
    _replay(tmp_path / "replay.jsonl", steps)
    mode = "start"
    for _ in range(5):
        proc = _spawn(tmp_path, postgres_url, mode)
        try:
            proc.wait(timeout=rng.uniform(0.2, 1.0))
        except subprocess.TimeoutExpired:
            proc.kill()
        out, _ = proc.communicate(timeout=60)
        if _has_run(postgres_url):
            mode = "resume:run-crash"
        if proc.returncode == 0 and out.startswith("finished"):
            break
    if _has_run(postgres_url):
        _resume_until_done(tmp_path, postgres_url)
    else:
        code, _, err = _finish(_spawn(tmp_path, postgres_url, "start"))
        assert code == 0, err
    lines = (tmp_path / "ws" / "log.txt").read_text().splitlines()
    for step in range(steps):
        assert lines.count(f"{step}:line") <= 1


def test_migrate_copies_a_sqlite_store_losslessly(tmp_path: Path, postgres_url: str) -> None:
    ws = make_workspace(tmp_path / "ws", [
        replay_line("look", ("list_dir", {"path": "."})),
        replay_line("write", ("write_file", {"path": "out.txt", "content": "héllo\n"})),
        replay_line("done"),
    ])
    sqlite_env = {"IO_STORE": str(tmp_path / "state.db")}
    for _ in range(2):
        assert run_io(["run", "-w", str(ws), "go"], env=sqlite_env).returncode == 0
        (ws / "out.txt").unlink()
    result = run_io(["store", "migrate", "--to", postgres_url, "-w", str(ws), "--json"],
                    env=sqlite_env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["runs"] == 2 and report["rows"]["ledger"] == 4
    assert "io-test" not in result.stdout  # the password never printed
    pg_env = {"IO_STORE": postgres_url}
    for command in (["runs", "--json"], ["spend", "--json"]):
        before = run_io([*command, "-w", str(ws)], env=sqlite_env)
        after = run_io([*command, "-w", str(ws)], env=pg_env)
        assert after.returncode == 0, after.stderr
        assert json_lines(after.stdout) == json_lines(before.stdout)
    for row in json_lines(run_io(["runs", "--json", "-w", str(ws)], env=sqlite_env).stdout):
        trace = ["trace", row["run_id"], "--json", "-w", str(ws)]
        assert run_io(trace, env=pg_env).stdout == run_io(trace, env=sqlite_env).stdout
    again = run_io(["store", "migrate", "--to", postgres_url, "-w", str(ws)], env=sqlite_env)
    assert again.returncode == 1 and "already holds run" in again.stderr
    assert "Traceback" not in again.stderr


def test_a_postgresql_store_that_cannot_be_reached_is_one_clear_error(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", [replay_line("done")])
    url = "postgresql://io:s3cret-canary@127.0.0.1:1/none"
    result = run_io(["runs", "-w", str(ws)], env={"IO_STORE": url})
    assert result.returncode == 1
    assert "cannot connect to the store" in result.stderr
    assert "s3cret-canary" not in result.stderr and "Traceback" not in result.stderr


def test_spend_by_runner_groups_by_the_host_that_made_each_call(
        tmp_path: Path, postgres_url: str) -> None:
    import socket

    ws = make_workspace(tmp_path / "ws", [replay_line("done", tokens=7)])
    env = {"IO_STORE": postgres_url}
    assert run_io(["run", "-w", str(ws), "go"], env=env).returncode == 0
    with Store(postgres_url) as store, store._tx() as conn:
        conn.execute("UPDATE completions SET host = ?", ("ci-runner-7",))
    assert run_io(["run", "-w", str(ws), "go again"], env=env).returncode == 0
    result = run_io(["spend", "--by", "runner", "--json", "-w", str(ws)], env=env)
    assert result.returncode == 0, result.stderr
    groups = {g["key"]: g for g in json.loads(result.stdout)["groups"]}
    assert set(groups) == {"ci-runner-7", socket.gethostname()}
    assert groups["ci-runner-7"]["calls"] == 1


def test_store_check_says_it_checks_files_not_a_postgresql_store(
        tmp_path: Path, postgres_url: str) -> None:
    ws = make_workspace(tmp_path / "ws", [replay_line("done")])
    result = run_io(["store", "check", "-w", str(ws)], env={"IO_STORE": postgres_url})
    assert result.returncode == 2
    assert "PostgreSQL" in result.stderr and "io-test" not in result.stderr
    assert "Traceback" not in result.stderr


def test_a_run_lock_asked_for_inside_a_write_transaction_never_deadlocks(
        postgres_url: str) -> None:
    """The lock-order cycle behind a flaky kill/resume test: the live owner of a run lock
    queues on the store-wide writer lock while another connection, holding that writer
    lock in its transaction, asks for the run lock. The server used to break the cycle
    by failing one of them ("deadlock detected"); now the asker answers "held elsewhere"
    once the grace ends, and the owner's transaction then goes through."""
    import threading

    from harness_core.store._postgres import PgConnection

    owner, asker = PgConnection(postgres_url), PgConnection(postgres_url)
    try:
        assert owner.try_lock("run", "shared")
        asker.execute("BEGIN")
        asker.execute("CREATE TABLE IF NOT EXISTS probe (n BIGINT)")
        asker.flush()  # the asker now holds the store-wide writer lock
        done: list[BaseException | None] = []

        def owner_writes() -> None:
            try:
                owner.execute("BEGIN")
                owner.execute("SELECT 1")
                owner.execute("COMMIT")  # queues on the writer lock the asker holds
                done.append(None)
            except BaseException as exc:  # recorded for the assertion below
                done.append(exc)

        writer = threading.Thread(target=owner_writes)
        writer.start()
        assert asker.try_lock("run", "shared") is False  # held by a live owner
        asker.execute("COMMIT")
        writer.join(timeout=30)
        assert done == [None]
    finally:
        owner.close()
        asker.close()
