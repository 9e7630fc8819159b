"""The store's run queries and its opening, pinned to exact values on a real SQLite file
(mutation testing's survivors in `store/_runs.py` and `store/_store.py`): a run's row,
lookups by prefix, who drives a run and which drive it is, status, the migrations and
pragmas a new store gets, transactions that commit whole or not at all, and the typed
error each SQLite failure becomes."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    AmbiguousId,
    CheckpointFormatError,
    DriveRecord,
    Message,
    Pause,
    RunInUse,
    RunNotFound,
    RunStatus,
    StateError,
    Store,
    StoreDamaged,
    StoreUnavailable,
)
from harness_core.store._store import KNOWN_MIGRATIONS, _translate
from harness_core.store._tree import TreePlace


def _create(store: Store, run_id: str, **extra: Any) -> None:
    fields: dict[str, Any] = {
        "goal": f"goal of {run_id}", "workspace": "/w", "model": "m",
        "settings": {"a": 1}, "policy": {"p": [1]}, "sandbox": None,
        "messages": [Message.system("s"), Message.user("g")]}
    fields.update(extra)
    store.create_run(run_id, **fields)


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_new_run_reads_back_every_field(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "r1", sandbox={"backend": "off"}, session_id="s1", parent_run_id="p",
                owner_pid=4321, owner_started=12.5)
        run = store.run("r1")
    assert (run.run_id, run.status, run.goal, run.workspace, run.model, run.session_id,
            run.parent_run_id, run.settings, run.policy, run.sandbox, run.exit_code,
            run.reason, run.pause, run.owner_pid, run.steps_used, run.tokens_used,
            run.wall_used, run.depth, run.root_run_id, run.agent) == (
        "r1", RunStatus.RUNNING, "goal of r1", "/w", "m", "s1", "p", {"a": 1}, {"p": [1]},
        {"backend": "off"}, None, None, None, 4321, 0, 0, 0.0, 0, "r1", None)
    assert run.created_at == run.updated_at
    assert _rows(tmp_path / "s.db", "SELECT seq, pid, p.body, s.body FROM drives"
                 " JOIN documents p ON p.hash = drives.policy"
                 " JOIN documents s ON s.hash = drives.sandbox") == [
        (0, 4321, '{"p":[1]}', '{"backend":"off"}')]
    assert _rows(tmp_path / "s.db", "SELECT owner_started, spawn_step, spawn_call FROM runs") \
        == [(12.5, None, None)]


def test_a_run_without_sandbox_or_owner_is_driven_by_this_process(tmp_path: Path) -> None:
    import os

    with Store(tmp_path / "s.db") as store:
        _create(store, "r1")
        run = store.run("r1")
        assert (run.sandbox, run.owner_pid) == (None, None)
        assert store.drives("r1") == [DriveRecord(0, run.created_at, os.getpid(), {"p": [1]},
                                                  None)]
    # no sandbox is SQL NULL, not the JSON text `null`; the opening messages are step -1
    assert _rows(tmp_path / "s.db", "SELECT sandbox IS NULL FROM runs") == [(1,)]
    assert _rows(tmp_path / "s.db", "SELECT sandbox IS NULL FROM drives") == [(1,)]
    assert _rows(tmp_path / "s.db", "SELECT seq, step_index FROM messages ORDER BY seq") == [
        (0, -1), (1, -1)]


def test_a_child_run_records_its_place_in_the_tree(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "root")
        _create(store, "kid", parent_run_id="root",
                tree=TreePlace(root_run_id="root", depth=1, spawn_step=2, spawn_call=1,
                               agent="helper"))
        kid = store.run("kid")
        assert (kid.depth, kid.root_run_id, kid.agent, kid.parent_run_id) == (
            1, "root", "helper", "root")
        assert [r.run_id for r in store.child_runs("root")] == ["kid"]
        assert store.child_runs("kid") == []
    assert _rows(tmp_path / "s.db", "SELECT spawn_step, spawn_call FROM runs"
                                    " WHERE run_id = 'kid'") == [(2, 1)]


def test_an_unknown_run_names_the_id_it_was_asked(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store, pytest.raises(RunNotFound) as info:
        store.run("nope")
    assert info.value.run_id == "nope"


def test_find_run_takes_a_unique_prefix_or_the_exact_id(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        for run_id in ("abc", "abcd", "abx9", "a_c", "a%c", "a!c"):
            _create(store, run_id)
        assert store.find_run("abx").run_id == "abx9"
        assert store.find_run("abc").run_id == "abc"  # exact, though "abcd" shares it
        assert store.find_run("abcd").run_id == "abcd"
        assert store.find_run("a_").run_id == "a_c"  # `_` is a character, not a wildcard
        assert store.find_run("a%").run_id == "a%c"
        assert store.find_run("a!").run_id == "a!c"
        for missing in ("zz", "", "  ", "b"):
            with pytest.raises(RunNotFound) as info:
                store.find_run(missing)
            assert info.value.run_id == missing
        for prefix, matches in (("ab", {"abc", "abcd", "abx9"}),
                                ("a", {"abc", "abcd", "abx9", "a_c", "a%c", "a!c"})):
            with pytest.raises(AmbiguousId) as ambiguous:  # listed, not "no run"
                store.find_run(prefix)
            assert set(ambiguous.value.matches) == matches and ambiguous.value.kind == "run"


def test_list_runs_is_newest_first_limited_and_filtered_by_session(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        for index, run_id in enumerate(("r0", "r1", "r2", "r3")):
            _create(store, run_id, session_id="s" if index % 2 else None)
            time.sleep(0.002)  # created_at has microseconds; keep them apart
        assert [r.run_id for r in store.list_runs()] == ["r3", "r2", "r1", "r0"]
        assert [r.run_id for r in store.list_runs(2)] == ["r3", "r2"]
        assert [r.run_id for r in store.list_runs(session_id="s")] == ["r3", "r1"]
        assert [r.run_id for r in store.list_runs(1, session_id="s")] == ["r3"]
        assert store.list_runs(session_id="none") == []


def test_list_runs_gives_twenty_by_default(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        for index in range(21):
            _create(store, f"r{index:02d}", messages=[])
        assert len(store.list_runs()) == 20
        assert len(store.list_runs(21)) == 21


def test_child_runs_come_oldest_first(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "root")
        for index, run_id in enumerate(("k2", "k1", "k3")):
            _create(store, run_id, parent_run_id="root",
                    tree=TreePlace("root", 1, 0, index))
            time.sleep(0.002)
        assert [r.run_id for r in store.child_runs("root")] == ["k2", "k1", "k3"]


def test_each_drive_is_numbered_and_a_dead_owner_is_reclaimed(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "r1", owner_pid=100, owner_started=1.0)
        seen: list[tuple[int, float | None]] = []

        def dead(pid: int, started: float | None) -> bool:
            seen.append((pid, started))
            return False

        assert store.acquire_run("r1", 200, 2.0, alive=dead) == 1
        assert seen == [(100, 1.0)]
        run = store.run("r1")
        assert run.owner_pid == 200
        assert _rows(tmp_path / "s.db", "SELECT owner_started FROM runs") == [(2.0,)]
        store.record_drive("r1", 1, 200, {"q": 2}, {"backend": "floor"})
        assert (store.run("r1").policy, store.run("r1").sandbox) == (
            {"q": 2}, {"backend": "floor"})
        assert store.acquire_run("r1", 200, 2.0, alive=lambda p, s: True) == 2  # its own
        store.record_drive("r1", 2, 200, {"q": 3}, None)
        drives = store.drives("r1")
        assert [(d.seq, d.pid, d.policy, d.sandbox) for d in drives] == [
            (0, 100, {"p": [1]}, None), (1, 200, {"q": 2}, {"backend": "floor"}),
            (2, 200, {"q": 3}, None)]
        run = store.run("r1")
        assert (run.policy, run.sandbox) == ({"q": 3}, None)
    assert _rows(tmp_path / "s.db", "SELECT sandbox IS NULL FROM runs") == [(1,)]


def test_a_live_owner_keeps_the_run_and_is_named(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "r1", owner_pid=100, owner_started=1.0)
        with pytest.raises(RunInUse) as info:
            store.acquire_run("r1", 200, 2.0, alive=lambda pid, started: True)
        assert (info.value.run_id, info.value.owner_pid) == ("r1", 100)
        assert store.run("r1").owner_pid == 100
        with pytest.raises(RunNotFound) as missing:
            store.acquire_run("nope", 200, 2.0, alive=lambda pid, started: False)
        assert missing.value.run_id == "nope"


def test_a_run_without_an_owner_is_taken_without_asking_who_lives(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "r1")

        def never(pid: int, started: float | None) -> bool:
            raise AssertionError("no owner to ask about")

        assert store.acquire_run("r1", 7, 0.5, alive=never) == 1


def test_release_lets_go_only_for_the_owner(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "r1", owner_pid=100, owner_started=1.0)
        store.release_run("r1", 999)
        assert store.run("r1").owner_pid == 100
        store.release_run("r1", 100)
        assert store.run("r1").owner_pid is None
    assert _rows(tmp_path / "s.db", "SELECT owner_pid, owner_started FROM runs") == [
        (None, None)]


def test_set_status_records_status_exit_code_reason_and_pause(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "r1")
        _create(store, "r2")
        before = store.run("r1").updated_at
        pause = Pause("question", step=1, call_index=0, call_id="c", tool="ask_question",
                      question="which?")
        store.set_status("r1", RunStatus.PAUSED, reason="paused for question", pause=pause)
        run = store.run("r1")
        assert (run.status, run.exit_code, run.reason, run.pause) == (
            RunStatus.PAUSED, None, "paused for question", pause)
        assert run.updated_at > before
        store.set_status("r1", RunStatus.FAILED, exit_code=3)
        run = store.run("r1")
        assert (run.status, run.exit_code, run.reason, run.pause) == (
            RunStatus.FAILED, 3, None, None)
        assert store.run("r2").status is RunStatus.RUNNING


def test_a_new_store_is_wal_with_every_migration_and_its_own_id(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "s.db"
    with Store(path) as store:
        assert store.backend == "sqlite" and store.location == str(path)
        assert store._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert store._conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        assert store._conn.execute("PRAGMA busy_timeout").fetchone() == (5000,)
        assert store.integrity_check() == "ok"
    names = {r[0] for r in _rows(path, "SELECT name FROM migrations")}
    assert names == set(KNOWN_MIGRATIONS) and len(KNOWN_MIGRATIONS) == 19
    meta = dict(_rows(path, "SELECT key, value FROM meta"))
    assert meta["checkpoint_format"] == "7"
    assert len(meta["store_id"]) == 32 and int(meta["store_id"], 16) >= 0
    with Store(path) as again:  # opening again keeps the id and applies nothing twice
        assert again._conn.execute("PRAGMA synchronous").fetchone() == (1,)
        assert again._conn.execute("PRAGMA busy_timeout").fetchone() == (5000,)
    assert dict(_rows(path, "SELECT key, value FROM meta"))["store_id"] == meta["store_id"]
    assert len(_rows(path, "SELECT name FROM migrations")) == len(KNOWN_MIGRATIONS)


def test_a_store_missing_a_migration_gets_it_on_open(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM migrations WHERE name = '0007_store_id'")
    conn.commit()
    conn.close()
    with Store(path) as store:
        assert store._is_current()
    assert len(_rows(path, "SELECT name FROM migrations")) == len(KNOWN_MIGRATIONS)


def test_a_twin_connection_sees_the_same_store_with_the_same_pragmas(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "r1")
        twin = store.reopen()
        try:
            assert (twin.backend, twin.location, twin.path) == (
                "sqlite", str(tmp_path / "s.db"), tmp_path / "s.db")
            assert twin.run("r1").goal == "goal of r1"
            assert twin._conn.execute("PRAGMA synchronous").fetchone() == (1,)
            assert twin._conn.execute("PRAGMA busy_timeout").fetchone() == (5000,)
            _create(twin, "r2")
        finally:
            twin.close()
        assert store.run("r2").goal == "goal of r2"
    store.close()  # closing twice is fine


def test_a_transaction_that_fails_leaves_nothing_behind(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "r1")
        with pytest.raises(StateError) as info:  # the second run's drive row is a duplicate
            with store._tx() as conn:
                conn.execute("UPDATE runs SET goal = 'changed'")
                conn.execute("INSERT INTO drives(run_id, seq, started_at, pid, policy) VALUES"
                             " ('r1', 0, 'x', 1, '{}')")
        assert str(info.value).startswith("store failed while writing: UNIQUE constraint")
        assert store.run("r1").goal == "goal of r1"
        with pytest.raises(KeyError), store._tx() as conn:
            conn.execute("UPDATE runs SET goal = 'changed'")
            raise KeyError("not sqlite")
        assert store.run("r1").goal == "goal of r1"
        stamp = dict(store._query("SELECT key, value FROM meta"))["last_write"]
        store.set_status("r1", RunStatus.STOPPED)
        assert dict(store._query("SELECT key, value FROM meta"))["last_write"] > stamp


def test_a_format_row_that_is_not_a_number_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        store._conn.execute("UPDATE meta SET value = ? WHERE key = 'checkpoint_format'",
                            ("x" * 50,))
        with pytest.raises(StoreDamaged) as info:
            store._check_format_row()
        assert str(info.value).startswith(
            f"store {path} is damaged: its checkpoint_format row holds {'x' * 40!r},"
            " not a number;")
        store._conn.execute("DELETE FROM meta WHERE key = 'checkpoint_format'")
        with pytest.raises(StoreDamaged) as info:
            store._check_format_row()
        assert "its checkpoint_format row holds '', not a number" in str(info.value)
        store._conn.execute("INSERT INTO meta(key, value) VALUES ('checkpoint_format', '70')")
        with pytest.raises(CheckpointFormatError) as fmt:
            store._check_format_row()
        assert (fmt.value.found, fmt.value.expected) == (70, 7)
        store._conn.execute("UPDATE meta SET value = '7' WHERE key = 'checkpoint_format'")
        store._check_format_row()


def test_sqlite_failures_become_typed_errors_with_what_to_do(tmp_path: Path) -> None:
    db = tmp_path / "s.db"

    def as_error(text: str, path: Path | None = db) -> StateError:
        return _translate(sqlite3.OperationalError(text), "writing", path)

    locked = as_error("database is locked")
    assert isinstance(locked, StoreUnavailable)
    assert str(locked) == f"store {db} cannot be used: it is locked by another process (writing)"
    assert locked.hint == "another io process holds it; retry when it is done"
    assert isinstance(as_error("database table is busy"), StoreUnavailable)
    assert str(as_error("database is locked", None)) == (
        "store the store cannot be used: it is locked by another process (writing)")
    read_only = as_error("attempt to write a readonly database")
    assert str(read_only) == f"store {db} cannot be used: it is read-only (writing)"
    assert read_only.hint == ("make the file and its directory writable, or point IO_STORE or"
                              " [store] path at a writable place")
    assert str(as_error("read-only file system")).endswith("it is read-only (writing)")
    full = as_error("database or disk is full")
    assert str(full) == (f"store {db} cannot be used: no space left on its disk (writing);"
                         " nothing was recorded by the failed write")
    assert full.hint == "free space on that disk, then retry"
    assert str(as_error("disk full")).endswith("no space left on its disk (writing); nothing"
                                               " was recorded by the failed write")
    io_error = as_error("disk I/O error")
    assert str(io_error) == f"store {db} cannot be used: a disk I/O error (writing)"
    assert io_error.hint == "check the disk that holds the store"
    for damaged in ("file is not a database", "database disk image is malformed",
                    "corrupt page"):
        error = as_error(damaged)
        assert isinstance(error, StoreDamaged)
        assert str(error).startswith(f"store {db} is damaged: {damaged} (writing);")
    missing = as_error("unable to open database file", tmp_path / "absent" / "s.db")
    assert isinstance(missing, StoreUnavailable)
    assert str(missing) == (f"store {tmp_path / 'absent' / 's.db'} cannot be used: it cannot"
                            " be opened (writing): unable to open database file")
    assert missing.hint == "check the path and its directory's permissions"
    assert str(as_error("disk I/O error", None)) == (
        "store the store cannot be used: a disk I/O error (writing)")
    assert str(as_error("unable to open database file", None)).startswith(
        "store the store cannot be used: it cannot be opened")
    other = as_error("no such table: x")
    assert type(other) is StateError
    assert str(other) == "store failed while writing: no such table: x"


def test_a_file_that_cannot_be_opened_read_only_is_told_apart(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    Store(db).close()
    db.chmod(0o444)
    try:
        error = _translate(sqlite3.OperationalError("unable to open database file"), "opening",
                           db)
        import os

        expected = "it is read-only" if os.geteuid() != 0 else "it cannot be opened"
        assert expected in str(error)
    finally:
        db.chmod(0o644)
    assert "cannot be opened" in str(_translate(
        sqlite3.OperationalError("unable to open database file"), "opening", db))


def test_a_read_on_a_closed_store_is_a_state_error_naming_the_read(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.close()
    with pytest.raises(StateError) as info:
        store.list_runs()
    assert type(info.value) is StateError
    assert str(info.value) == ("store failed while reading: Cannot operate on a closed"
                               " database.")


def test_a_directory_that_cannot_be_made_is_named_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "missing" / "deeper")
    with pytest.raises(StoreUnavailable) as info:
        Store(tmp_path / "dangling" / "s.db")
    assert str(info.value) == (f"store {tmp_path / 'dangling' / 's.db'} cannot be used:"
                               " cannot create its directory: File exists")


def test_the_store_and_its_twin_serve_other_threads(tmp_path: Path) -> None:
    import threading

    with Store(tmp_path / "s.db") as store:
        _create(store, "r1")
        twin = store.reopen()
        seen: list[str] = []

        def read() -> None:
            seen.append(store.run("r1").goal)
            seen.append(twin.run("r1").goal)

        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
        twin.close()
    assert seen == ["goal of r1", "goal of r1"]


def test_opening_an_up_to_date_store_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        _create(store, "r1")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with Store(path) as store:
        assert store.run("r1").goal == "goal of r1"
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_second_store_opens_beside_a_live_one_with_its_log(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as first:
        _create(first, "r1")
        assert (tmp_path / "s.db-wal").stat().st_size > 0  # the log is there, and is ours
        with Store(path) as second:
            assert second.run("r1").goal == "goal of r1"
            _create(second, "r2")
        assert first.run("r2").goal == "goal of r2"
