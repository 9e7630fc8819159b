"""Several `Store`s on one file in one process (the batch driver's task threads, a report
written after a run) keep each other's SQLite locks.

POSIX record locks belong to the process: closing any descriptor of the file drops them
all. The checks a `Store` ran before connecting opened and closed the file, which
dropped a live connection's shared lock; another process closing its connection then
believed itself the last user and deleted the write-ahead log under the live one (the
"disk I/O error (writing)" a parallel `io batch` task met). Each test uses real SQLite
files, real threads and a real second process; the lock table is read from
``/proc/locks``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness_core import Store, StoreDamaged

pytestmark = pytest.mark.skipif(not Path("/proc/locks").exists(),
                                reason="reads the kernel's lock table (/proc/locks)")


def _make_run(store: Store, run_id: str) -> None:
    store.create_run(run_id, goal="g", workspace="/w", model=None, settings={}, policy={},
                     sandbox=None, messages=[])


def _my_locks_on(path: Path) -> list[str]:
    """This process's POSIX locks on `path`'s inode (READ/WRITE), from the kernel."""
    inode = os.stat(path).st_ino
    found = []
    with open("/proc/locks", encoding="ascii") as table:
        for line in table:
            fields = line.split()
            if fields[1] == "->":  # a waiter's line: ["1:", "->", "POSIX", ...]
                continue
            if (fields[1] == "POSIX" and fields[4] == str(os.getpid())
                    and int(fields[5].split(":")[2]) == inode):
                found.append(fields[3])
    return found


def _close_in_another_process(path: Path) -> None:
    """Another io process opens the store and closes it: its close checkpoints and
    deletes the log when it can take the exclusive lock (no other user holds one)."""
    subprocess.run([sys.executable, "-c", "import sys; from harness_core import Store;"
                    " Store(sys.argv[1]).close()", str(path)], check=True, timeout=60)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    made = tmp_path / "s.db"
    with Store(made) as store:
        _make_run(store, "r0")
    return made


def test_a_second_store_in_the_process_leaves_the_first_ones_lock(path: Path) -> None:
    with Store(path) as first:
        first.list_runs()
        assert "READ" in _my_locks_on(path)  # WAL mode: a shared lock while connected
        Store(path).close()
        assert "READ" in _my_locks_on(path)
        other_spelling = path.parent / "link.db"
        other_spelling.symlink_to(path)
        Store(other_spelling).close()  # the same file by another name
        first.reopen().close()
        assert "READ" in _my_locks_on(path)
        _make_run(first, "r1")
    assert _my_locks_on(path) == []


def test_another_process_never_deletes_the_log_under_a_live_connection(path: Path) -> None:
    wal = path.with_name(path.name + "-wal")
    with Store(path) as first:
        _make_run(first, "r1")
        Store(path).close()
        _close_in_another_process(path)
        assert wal.exists(), "the log was removed while a connection of this process used it"
        _make_run(first, "r2")
    with Store(path) as again:
        assert sorted(r.run_id for r in again.list_runs()) == ["r0", "r1", "r2"]


def test_threads_opening_the_store_side_by_side_keep_every_write(path: Path) -> None:
    # The batch driver: one connection per task thread, each opened while others write.
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def task(index: int) -> None:
        try:
            start.wait(timeout=30)
            for round_ in range(5):
                with Store(path) as store:
                    _make_run(store, f"t{index}-{round_}")
        except BaseException as exc:  # reported below, with the thread's name
            errors.append(exc)

    with Store(path) as driver:
        threads = [threading.Thread(target=task, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        assert "READ" in _my_locks_on(path)
        _close_in_another_process(path)
        _make_run(driver, "after")
    with Store(path) as again:
        assert len(again.list_runs(limit=100)) == 1 + 4 * 5 + 1


def test_once_every_connection_is_closed_the_next_open_checks_the_file_again(
        path: Path) -> None:
    with Store(path) as first:
        first.list_runs()
    with open(path, "r+b") as handle:  # no connection left: a damaged header is seen
        handle.write(b"not sqlite at all")
    with pytest.raises(StoreDamaged):
        Store(path)


def test_the_workspace_refuses_to_open_a_store_this_process_holds(tmp_path: Path) -> None:
    # A store kept in the workspace (`[store] path = ".io/state.db"`): a file tool that
    # read it inside io would close a descriptor of it and drop the run's locks.
    from harness_core import Workspace, WorkspaceError

    ws = Workspace(tmp_path)
    (tmp_path / ".io").mkdir()
    inside = tmp_path / ".io" / "state.db"
    with Store(inside) as store:
        _make_run(store, "r1")
        assert (tmp_path / ".io" / "state.db-wal").exists()
        for name in ("state.db", "state.db-wal", "state.db-shm"):
            with pytest.raises(WorkspaceError) as refused:
                ws.read_bytes(f".io/{name}")
            assert str(refused.value) == (
                f"cannot read '.io/{name}': it is the store io is writing to: reading it"
                " inside io would drop the store's locks")
        (tmp_path / "notes.txt").write_text("kept")
        assert ws.read_text("notes.txt") == "kept"  # every other file reads as before
        assert "READ" in _my_locks_on(inside)
    assert ws.read_bytes(".io/state.db").startswith(b"SQLite format 3")  # closed: a file


def test_a_shell_redirect_from_a_held_store_is_an_error_not_a_dropped_lock(
        tmp_path: Path) -> None:
    from harness_core.tools._shell_tools import Shell
    from tests.unit.shell.support import context

    inside = tmp_path / "state.db"
    with Store(inside) as store:
        _make_run(store, "r1")
        outcome = Shell().run({"line": "cat < state.db-shm; echo next"},  # type: ignore[arg-type]
                              context(tmp_path))
        data = outcome.data.to_json()  # type: ignore[union-attr]
        assert data["stdout"] == "next\n"
        assert ("state.db-shm: it is the store io is writing to: reading it inside io would"
                " drop the store's locks") in str(data["stderr"])
        assert "READ" in _my_locks_on(inside)


def test_checking_a_store_this_process_holds_keeps_its_lock(path: Path) -> None:
    from harness_core import check_store

    with Store(path) as store:
        _make_run(store, "r1")
        report = check_store(path)
        assert report.ok and report.runs == 2
        assert "READ" in _my_locks_on(path)


def test_the_count_follows_every_connection_until_the_last_closes(path: Path) -> None:
    from harness_core._held_files import opening

    def held_now() -> bool:
        with opening(path) as this:
            return this.held

    assert not held_now()  # the file exists, but no connection of this process holds it
    first = Store(path)
    second = Store(path)
    twin = first.reopen()
    assert held_now()
    second.close()
    twin.close()
    assert held_now()  # `first` is still open: a third open must not read the file
    Store(path).close()
    assert "READ" in _my_locks_on(path)
    first.close()
    assert not held_now()
    first.close()  # closing twice counts once
    assert not held_now()


def test_held_names_the_store_and_its_siblings_and_nothing_else(path: Path) -> None:
    from harness_core._held_files import held, opening

    journal = path.with_name(path.name + "-journal")  # not there: a redirect would make it
    other = path.with_name("other.db")
    other.write_bytes(b"x")
    assert not held(path.name, lambda name: os.lstat(path.parent / name))
    with Store(path):
        def lstat(name: str) -> os.stat_result:
            return os.lstat(path.parent / name)

        for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", journal.name):
            assert held(name, lstat), name
        for name in ("other.db", "other.db-wal", "missing.db", "missing.db-shm",
                     f"{path.name}-other"):
            assert not held(name, lstat), name
        with opening(path.parent / "missing.db") as this:
            assert not this.held and this.retain() is None


def test_a_forked_child_holds_nothing_and_can_let_go_of_what_it_inherited(
        path: Path) -> None:
    from harness_core import _held_files

    with Store(path) as store:
        pid = os.fork()
        if pid == 0:  # the child: report through the exit status only
            try:
                with _held_files.opening(path) as this:
                    code = 1 if this.held else 0
                _held_files.release(store._file)  # a Store object the child inherited
                os._exit(code)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        with _held_files.opening(path) as this:
            assert this.held  # the parent's count is its own
