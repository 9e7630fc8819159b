"""Store faults a run recovers from (#22): a store locked by another process fails
fast and clearly; a run stopped by a full disk resumes once space is back.

The lock holders are real processes (SQLite's own exclusive locking mode, an exclusive
transaction on a rollback-journal store, a POSIX lock over the whole file, and `flock`,
which SQLite does not see: `io runs` used to read on, exit 0). The disk is
a real 4 MiB tmpfs inside a user + mount namespace (`unshare -rm`), filled by the run's
own command, so SQLite meets ENOSPC for real.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_core import Message, Store, StoreUnavailable
from tests.conftest import REPO, run_io
from tests.integration.cli.helpers import make_workspace, replay_line

BUSY_SECONDS = 5.0
"""`harness_core.store._store._BUSY_TIMEOUT_MS`, the budget a locked store is waited for."""
SLACK = 1.5
"""Seconds an open may take above the busy budget (polling, a loaded machine)."""

HOLDER = """
import fcntl, os, sqlite3, sys, time
path, mode = sys.argv[1], sys.argv[2]
if mode in ("posix", "flock"):
    fd = os.open(path, os.O_RDWR)
    (fcntl.lockf if mode == "posix" else fcntl.flock)(fd, fcntl.LOCK_EX)
else:
    conn = sqlite3.connect(path, isolation_level=None)
    if mode == "exclusive_mode":
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('held', '1')")
        conn.execute("COMMIT")  # the lock stays: exclusive locking mode never lets go
    else:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.read()
"""


def _populate(path: Path, runs: int = 2) -> Path:
    with Store(path) as store:
        for i in range(runs):
            store.create_run(f"run{i:03d}", goal="goal", workspace="/w", model="m",
                             settings={}, policy={}, sandbox=None, messages=[Message.user("x")])
    return path


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, list[subprocess.Popen[str]]]]:
    started: list[subprocess.Popen[str]] = []
    yield _populate(tmp_path / "state.db"), started
    for process in started:
        _release(process)


def _release(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.communicate()


def _hold(store: Path, mode: str) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(store), mode], text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"  # blocks until the lock is taken
    return process


@pytest.mark.parametrize("mode", ["exclusive_mode", "rollback_exclusive", "posix", "flock"])
@pytest.mark.parametrize("args", [["runs", "--all"], ["runs", "--all", "--json"],
                                  ["trace", "run000"]])
def test_a_store_another_process_locks_fails_clearly_within_the_busy_timeout(
    holder: tuple[Path, list[subprocess.Popen[str]]], mode: str, args: list[str]
) -> None:
    store, started = holder
    process = _hold(store, mode)
    started.append(process)
    began = time.monotonic()
    result = run_io(args, env={"IO_STORE": str(store)}, timeout=60)
    took = time.monotonic() - began
    assert result.returncode == 1, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("io: ")]
    assert len(errors) == 1 and str(store) in errors[0] and "locked" in errors[0], result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert took < 6 * BUSY_SECONDS, took  # a sanity bound; the budget is timed below

    # Negative control: the same store, let go, answers.
    _release(process)
    result = run_io(args, env={"IO_STORE": str(store)})
    assert result.returncode == 0, result.stderr
    assert "run000" in result.stdout


@pytest.mark.parametrize("mode", ["exclusive_mode", "rollback_exclusive", "posix", "flock"])
def test_opening_a_locked_store_gives_up_within_one_busy_budget(
    holder: tuple[Path, list[subprocess.Popen[str]]], mode: str
) -> None:
    """Timed in this process (an `io` start-up on a loaded machine varies by seconds)."""
    store, started = holder
    started.append(_hold(store, mode))
    began = time.monotonic()
    with pytest.raises(StoreUnavailable, match="locked by another process"):
        Store(store)
    assert time.monotonic() - began < BUSY_SECONDS + SLACK


def test_a_store_whose_checkpoint_was_half_written_opens(tmp_path: Path) -> None:
    """The state a full disk leaves: a checkpoint wrote the file's first page, then ran
    out of space; the file alone names pages only its write-ahead log holds. It was
    refused as malformed, so the run could never be resumed."""
    live = tmp_path / "live" / "state.db"
    writer = Store(live)  # held open: nothing is checkpointed into the file
    try:
        writer.create_run("kept", goal="g", workspace="/w", model="m", settings={},
                          policy={}, sandbox=None, messages=[Message.user("x")])
        for folder in ("copy", "whole"):
            (tmp_path / folder).mkdir()
            for suffix in ("", "-wal", "-shm"):
                shutil.copy(str(live) + suffix, str(tmp_path / folder / "state.db") + suffix)
    finally:
        writer.close()
    whole = sqlite3.connect(tmp_path / "whole" / "state.db")
    whole.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    whole.close()
    first_page = (tmp_path / "whole" / "state.db").read_bytes()[:4096]
    (tmp_path / "copy" / "state.db").write_bytes(first_page)  # the half-written checkpoint
    alone = sqlite3.connect(f"{(tmp_path / 'copy' / 'state.db').as_uri()}?mode=ro&immutable=1",
                            uri=True)
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):  # the precondition
        alone.execute("SELECT value FROM meta").fetchall()
    alone.close()
    with Store(tmp_path / "copy" / "state.db") as store:
        assert store.find_run("kept").goal == "g"
        assert store.integrity_check() == "ok"


FILL = """
import os, sys
marker, target = sys.argv[1], sys.argv[2]
if not os.path.exists(marker):
    open(marker, "w").close()
    with open(target, "wb") as handle:
        try:
            while True:
                handle.write(b"x" * 65536)
                handle.flush()
        except OSError:
            pass
print("disk filled")
"""


@pytest.fixture
def namespaces() -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"the kernel refuses user + mount namespaces here: {probe.stderr.strip()}")


def test_a_run_stopped_by_a_full_disk_resumes_once_space_is_back(
    tmp_path: Path, namespaces: None
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    store = disk / "state.db"
    (tmp_path / "fill.py").write_text(FILL)
    workspace = make_workspace(tmp_path / "ws", [
        replay_line("fill", ("exec", {"argv": [sys.executable, str(tmp_path / "fill.py"),
                                               str(tmp_path / "marker"),
                                               str(disk / "filler")]})),
        replay_line("after", ("exec", {"argv": ["echo", "second step"]})),
        replay_line("done"),
    ], toml_extra='[policy]\ntier = "full"\n')
    io = f"IO_STORE={shlex.quote(str(store))} {shlex.quote(sys.executable)} -m io_harness_cli"
    out = shlex.quote(str(tmp_path / "out"))
    ws = shlex.quote(str(workspace))
    script = "\n".join([
        f"mount -t tmpfs -o size=4m tmpfs {shlex.quote(str(disk))} || exit 99",
        f"{io} run -w {ws} --json 'fill the disk' > {out}.run 2> {out}.run.err",
        f"echo $? > {out}.run.rc",
        f"RUN=$({sys.executable} -c 'import json,sys; print(json.loads(sys.stdin.readline())"
        f"[\"run_id\"])' < {out}.run)",
        # Negative control: still full, the resume stops with the same clear error.
        f"{io} resume $RUN -w {ws} --json > {out}.full 2> {out}.full.err",
        f"echo $? > {out}.full.rc",
        f"rm {shlex.quote(str(disk / 'filler'))}",
        f"{io} resume $RUN -w {ws} --json > {out}.resume 2> {out}.resume.err",
        f"echo $? > {out}.resume.rc",
        f"{io} trace $RUN --json > {out}.trace 2> {out}.trace.err",
        f"cp {shlex.quote(str(store))}* {shlex.quote(str(tmp_path))}/",
    ])
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode != 99, done.stderr

    def read(name: str) -> str:
        return (tmp_path / f"out.{name}").read_text()

    assert read("run.rc").strip() == "1", read("run.err")
    assert "no space left" in read("run.err")
    assert read("full.rc").strip() == "1", read("full.err")
    assert "no space left" in read("full.err") and "damaged" not in read("full.err")
    assert read("resume.rc").strip() == "0", read("resume.err")
    assert "second step" in read("trace")
    with Store(tmp_path / "state.db") as opened:
        run = opened.list_runs()[0]
        assert run.status.value == "finished"
        assert opened.integrity_check() == "ok"
