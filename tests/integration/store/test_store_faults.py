"""Store faults through the real `io` command: a damaged, foreign, special, read-only,
full or locked store gives one `io: error:` line naming the file, exit 1 (the code
docs/CONTRACT.md gives store failures), no traceback, and its bytes unchanged.

Read-only and disk-full run `io` inside a user + mount namespace (`unshare -rm`): a
read-only bind mount stops root where chmod would not, and a 256 KiB tmpfs fills up
for real. Where the kernel refuses user namespaces the two tests skip, saying so.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness_core import Message, Store
from tests.conftest import REPO, run_io
from tests.integration.cli.helpers import make_workspace

STORE_EXIT = 1


def _populate(path: Path, runs: int = 30) -> Path:
    with Store(path) as store:
        for i in range(runs):
            store.create_run(f"run{i:03d}", goal="goal " * 100, workspace="/w", model="m",
                             settings={}, policy={}, sandbox=None,
                             messages=[Message.user("x" * 3000)])
    return path


def _digest(paths: list[Path]) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "-"
            for p in paths}


def _files(store: Path) -> list[Path]:
    return [store, store.with_name(store.name + "-wal")]


def _assert_one_message(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == STORE_EXIT, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("io: ")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]


def _truncated(stores: Path) -> Path:
    store = _populate(stores / "state.db")
    os.truncate(store, store.stat().st_size // 2)
    return store


def _damaged_page(stores: Path) -> Path:
    store = _populate(stores / "state.db")
    with open(store, "r+b") as handle:  # garble the b-tree header of a page in the middle
        handle.seek(4096 * 5 + 8)
        handle.write(b"\xff" * 64)
    return store


def _foreign_wal(stores: Path) -> Path:
    mine = _populate(stores / "state.db", runs=3)
    other = _populate(stores / "other.db", runs=3)
    holder = sqlite3.connect(other)  # keeps the other store's log from being checkpointed
    try:
        holder.execute("SELECT count(*) FROM runs").fetchone()
        with Store(other) as writer:
            writer.create_run("late", goal="g", workspace="/w", model="m", settings={},
                              policy={}, sandbox=None, messages=[Message.user("y")])
        shutil.copy(other.with_name("other.db-wal"), mine.with_name("state.db-wal"))
    finally:
        holder.close()
    return mine


def _fifo(stores: Path) -> Path:
    os.mkfifo(stores / "state.db")
    return stores / "state.db"


def _directory(stores: Path) -> Path:
    (stores / "state.db").mkdir()
    return stores / "state.db"


def _garbage_format_row(stores: Path) -> Path:
    store = _populate(stores / "state.db", runs=1)
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE meta SET value = 'garbage' WHERE key = 'checkpoint_format'")
    return store


def _missing_format_row(stores: Path) -> Path:
    store = _populate(stores / "state.db", runs=1)
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'checkpoint_format'")
    return store


FAULTS: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "truncated": (_truncated, ("is damaged", "truncated")),
    "damaged_page": (_damaged_page, ("is damaged", "quick_check found")),
    "foreign_wal": (_foreign_wal, ("is damaged", "belongs to another store")),
    "fifo": (_fifo, ("cannot be used", "a FIFO")),
    "directory": (_directory, ("cannot be used", "a directory")),
    "garbage_format_row": (_garbage_format_row, ("checkpoint_format row holds 'garbage'",)),
    "missing_format_row": (_missing_format_row, ("checkpoint_format row is missing",)),
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws", ['{"text": "done"}'])


@pytest.mark.parametrize(("fault", "command"), [
    *((fault, command) for fault in sorted(FAULTS) for command in ("runs", "run")),
    ("damaged_page", "trace"), ("damaged_page", "spend"), ("fifo", "trace"),
])
def test_a_faulty_store_gives_one_message_and_keeps_its_bytes(
        tmp_path: Path, workspace: Path, fault: str, command: str) -> None:
    stores = tmp_path / "stores"
    stores.mkdir()
    make, needles = FAULTS[fault]
    store = make(stores)
    before = _digest(_files(store))
    args = {"runs": ["runs"], "run": ["run", "hello"], "trace": ["trace", "run000"],
            "spend": ["spend"]}[command]
    result = run_io([*args, "-w", str(workspace)], env={"IO_STORE": str(store)}, timeout=60)
    _assert_one_message(result, str(store), *needles)
    assert _digest(_files(store)) == before


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_store_check_reports_the_fault_and_keeps_the_bytes(tmp_path: Path, fault: str) -> None:
    stores = tmp_path / "stores"
    stores.mkdir()
    store = FAULTS[fault][0](stores)
    before = _digest(_files(store))
    result = run_io(["store", "check", str(store)], timeout=60)
    assert result.returncode == STORE_EXIT and "Traceback" not in result.stderr
    assert "damaged" in result.stdout or "cannot be used" in result.stderr
    assert _digest(_files(store)) == before


def test_store_check_of_a_sound_store_says_ok(tmp_path: Path) -> None:
    store = _populate(tmp_path / "state.db", runs=4)
    result = run_io(["store", "check", "--json"], env={"IO_STORE": str(store)})
    assert result.returncode == 0, result.stderr
    assert '"ok": true' in result.stdout and '"runs": 4' in result.stdout


def test_a_locked_store_gives_one_message_and_keeps_its_bytes(tmp_path: Path,
                                                             workspace: Path) -> None:
    store = _populate(tmp_path / "state.db", runs=2)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process's write transaction, held
    try:
        before = _digest([store])
        result = run_io(["run", "-w", str(workspace), "hello"], env={"IO_STORE": str(store)})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    _assert_one_message(result, str(store), "locked by another process")
    assert _digest([store]) == before


def _in_namespace(script: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def namespaces() -> Iterator[None]:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"the kernel refuses user + mount namespaces here: {probe.stderr.strip()}")
    yield


def _io_line(store: Path, args: str) -> str:
    return (f"IO_STORE={shlex.quote(str(store))} {shlex.quote(sys.executable)}"
            f" -m io_harness_cli {args}")


def test_a_read_only_store_gives_one_message_and_keeps_its_bytes(
        tmp_path: Path, workspace: Path, namespaces: None) -> None:
    stores = tmp_path / "stores"
    stores.mkdir()
    store = _populate(stores / "state.db", runs=2)
    before = _digest([store])
    mount = shlex.quote(str(stores))
    script = (f"mount --bind {mount} {mount} && mount -o remount,ro,bind {mount} && "
              + _io_line(store, f"run -w {shlex.quote(str(workspace))} hello"))
    result = _in_namespace(script)
    _assert_one_message(result, str(store))
    assert "read-only" in result.stderr or "cannot be opened" in result.stderr
    assert _digest([store]) == before


def test_a_full_disk_gives_one_message_and_keeps_the_store(
        tmp_path: Path, workspace: Path, namespaces: None) -> None:
    seed = _populate(tmp_path / "seed.db", runs=2)
    disk = tmp_path / "disk"
    disk.mkdir()
    store = disk / "state.db"
    copy = tmp_path / "after.db"
    quoted = shlex.quote(str(disk))
    script = (f"mount -t tmpfs -o size=1m tmpfs {quoted} && cp {seed} {store} && "
              f"(dd if=/dev/zero of={quoted}/fill bs=4k 2>/dev/null; true) && "
              + _io_line(store, f"run -w {shlex.quote(str(workspace))} hello")
              + f"; code=$?; cp {store} {copy}; exit $code")
    result = _in_namespace(script)
    _assert_one_message(result, str(store), "no space left")
    assert _digest([copy])["after.db"] == _digest([seed])["seed.db"]
