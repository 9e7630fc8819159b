"""The store's contract on both backends: a SQLite file and a real PostgreSQL server.

Each test takes `location` (a path or a ``postgresql://`` URL on a private schema) and
holds on both. Ownership across processes is proven with real processes: a holder that
is killed with SIGKILL frees its run for the next driver.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_core import (
    CHECKPOINT_FORMAT,
    CheckpointFormatError,
    CheckpointState,
    Message,
    RunInUse,
    RunNotFound,
    RunStatus,
    SessionInUse,
    StateError,
    Store,
    TodoItem,
    ToolCall,
    ToolResult,
    Usage,
)


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "s.db")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(location: str) -> Iterator[Store]:
    with Store(location) as opened:
        opened.create_run("r1", goal="g", workspace="/w", model="m", settings={"a": 1},
                          policy={"p": True}, sandbox=None,
                          messages=[Message.system("s"), Message.user("g")])
        yield opened


def _step(store: Store, step: int, call: ToolCall) -> None:
    store.record_completion("r1", step, text=f"t{step}", tool_calls=[call], provider="p",
                            model_requested="m", model_served="m2",
                            usage=Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12,
                                        cache_read_tokens=4),
                            latency_ms=1.5, ttft_ms=0.5, stop_reason="tool_use")


def test_intent_observation_checkpoint_round_trip(store: Store) -> None:
    call = ToolCall("c1", "read_file", {"path": "a"})
    _step(store, 0, call)
    store.record_intent("r1", 0, 0, call)
    (entry,) = store.ledger("r1", 0)
    assert not entry.has_observation
    store.record_observation("r1", 0, 0, ToolResult("c1", "read_file", "ok\x00bytes"))
    store.record_checkpoint("r1", 0, CheckpointState(0, done=True, verified=False), tokens=12,
                            wall_seconds=0.25)
    (entry,) = store.ledger("r1", 0)
    assert entry.has_observation and entry.observation.startswith("ok")
    assert [m.role.value for m in store.messages("r1")] == ["system", "user", "assistant", "tool"]
    step = store.step("r1", 0)
    assert step is not None and step.model_served == "m2" and step.ttft_ms == 0.5
    checkpoint = store.last_checkpoint("r1")
    assert checkpoint is not None and checkpoint.state == CheckpointState(0, done=True, verified=False)
    record = store.run("r1")
    assert record.settings == {"a": 1} and record.policy == {"p": True}


def test_checkpoint_rows_of_another_format_are_refused(store: Store) -> None:
    store.record_checkpoint("r1", 0, CheckpointState(0), tokens=1, wall_seconds=0.1)
    with store._tx() as conn:
        conn.execute("UPDATE checkpoints SET format = ?", (CHECKPOINT_FORMAT + 1,))
    with pytest.raises(CheckpointFormatError):
        store.last_checkpoint("r1")


def test_a_store_of_another_checkpoint_format_is_refused(location: str) -> None:
    with Store(location) as store, store._tx() as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'checkpoint_format'", ("6",))
    with pytest.raises(CheckpointFormatError):
        Store(location)


def test_duplicate_run_is_a_state_error_and_the_store_goes_on(store: Store) -> None:
    with pytest.raises(StateError):
        store.create_run("r1", goal="dup", workspace="/w", model=None, settings={},
                         policy={}, sandbox=None, messages=[])
    assert store.run("r1").goal == "g"
    with pytest.raises(RunNotFound):
        store.run("nope")
    assert store.find_run("r").run_id == "r1"


def test_runs_list_newest_first_and_status_sticks(store: Store) -> None:
    store.create_run("r2", goal="second", workspace="/w", model=None, settings={}, policy={},
                     sandbox=None, messages=[])
    store.set_status("r1", RunStatus.FINISHED, exit_code=0, reason="done")
    assert [r.run_id for r in store.list_runs()] == ["r2", "r1"]
    assert store.run("r1").status is RunStatus.FINISHED


def test_spend_rows_keep_unreported_numbers_none(store: Store) -> None:
    _step(store, 0, ToolCall("c1", "read_file", {"path": "a"}))
    (row,) = store.spend_rows()
    assert row.prompt_tokens == 10 and row.cache_read_tokens == 4
    assert row.cache_write_tokens is None
    assert (row.run_id, row.provider, row.model, row.model_requested) == ("r1", "p", "m2", "m")
    assert row.created_at.tzinfo is not None and row.runner is not None


def test_sessions_todos_and_questions(store: Store) -> None:
    store.create_session("s1", workspace="/w", title="t")
    assert store.session("s1").title == "t"
    assert store.replace_todos("r1", [TodoItem("do", "pending")]) == 1
    assert store.replace_todos("r1", [TodoItem("do", "done")]) == 2
    assert store.todos("r1") == [TodoItem("do", "done", 2)]


_HOLDER = textwrap.dedent("""
    import os, sys
    from harness_core import Store
    store = Store(sys.argv[1])
    store.acquire_run("r1", os.getpid(), 0.0, alive=lambda pid, started: False)
    backend = 0
    if store.backend == "postgresql":
        backend = store._conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    print("held", backend, flush=True)
    sys.stdin.read()
""")


def _wait_until_the_server_ends(location: str, backend: int) -> None:
    """PostgreSQL drops a killed client's advisory locks when its server process sees
    the closed socket and exits, a moment after the kill (seconds on a loaded machine):
    wait for that, polling the server, before asking for the run."""
    if not backend:
        return  # SQLite: the lock is the owner's pid, gone with the process
    import time

    import psycopg

    deadline = time.monotonic() + 60
    with psycopg.connect(location, autocommit=True) as conn:
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                           (backend,)).fetchone() != (0,):
            assert time.monotonic() < deadline, "the server kept the killed client's session"
            time.sleep(0.05)


def test_a_killed_driver_frees_its_run_on_every_backend(store: Store, location: str) -> None:
    with subprocess.Popen([sys.executable, "-c", _HOLDER, location], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None
            said, backend = holder.stdout.readline().split()
            assert said == "held"
            alive = holder.pid
            with pytest.raises(RunInUse):
                store.acquire_run("r1", 2, 0.0, alive=lambda pid, started: pid == alive)
        finally:
            holder.kill()
            holder.wait(timeout=30)
    _wait_until_the_server_ends(location, int(backend))
    assert store.acquire_run("r1", 2, 0.0, alive=lambda pid, started: False) >= 1


def test_session_lock_is_one_driver(store: Store, location: str) -> None:
    store.create_session("s1", workspace="/w")
    store.acquire_session("s1", 111, 0.0, alive=lambda pid, started: False)
    with Store(location) as other:
        with pytest.raises(SessionInUse):
            other.acquire_session("s1", 222, 0.0, alive=lambda pid, started: pid == 111)
        store.release_session("s1", 111)
        other.acquire_session("s1", 222, 0.0, alive=lambda pid, started: False)


def test_postgresql_commits_are_not_flushed_per_commit_and_writers_are_serialised(
        postgres_url: str) -> None:
    """The store's durability matches the SQLite file's (a commit outlives io, not the
    server's machine), and a second writer waits for the first, as on SQLite."""
    import threading

    import psycopg

    with Store(postgres_url) as first, Store(postgres_url) as second:
        assert first._conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
        done = threading.Event()

        def write() -> None:
            second.create_run("r2", goal="g", workspace="/w", model=None, settings={},
                              policy={}, sandbox=None, messages=[])
            done.set()

        with first._tx() as conn:
            # A write transaction is sent whole at its first read (or COMMIT), the writer
            # lock first: after this read, `first` holds the lock on the server.
            assert conn.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)
            writer = threading.Thread(target=write)
            writer.start()
            with psycopg.connect(postgres_url, autocommit=True) as watch:
                waiting: list[tuple[str]] = []
                for _ in range(400):  # poll until the second writer waits on the lock
                    waiting = watch.execute(  # this store's lock: other tests run beside
                        "SELECT wait_event_type FROM pg_stat_activity WHERE"
                        " wait_event = 'advisory' AND position(%s in query) > 0",
                        (second._conn._store_lock_sql,)).fetchall()
                    if waiting or done.wait(0.025):
                        break
            assert waiting and not done.is_set()  # blocked behind the open transaction
        writer.join(timeout=30)
        assert done.is_set() and second.run("r2").goal == "g"


def test_stores_in_two_schemas_of_one_database_lock_only_themselves(
        postgres_url: str) -> None:
    """Advisory locks belong to the whole database: a run id in one schema's store held
    the same id in another's ("in use"), and one store's write transaction held up the
    other's writes. Each store's locks are keyed by its schema."""
    import uuid

    import psycopg

    base, _, _ = postgres_url.partition("?")
    other = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {other}")
    try:
        with Store(postgres_url) as first, \
                Store(f"{base}?options=-csearch_path%3D{other}") as second:
            for store in (first, second):
                store.create_run("r1", goal="g", workspace="/w", model=None, settings={},
                                 policy={}, sandbox=None, messages=[])
            assert first.acquire_run("r1", 111, 0.0, alive=lambda pid, started: False) >= 0
            # The same run id in the other store is free, and taken at once (a held lock
            # would have cost the 2 s grace, then RunInUse).
            assert second.acquire_run("r1", 222, 0.0, alive=lambda pid, started: True) >= 0
            with first._tx() as conn:
                assert conn.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)
                # `first` holds its writer lock on the server: `second` writes anyway.
                second.create_run("r2", goal="g", workspace="/w", model=None, settings={},
                                  policy={}, sandbox=None, messages=[])
            assert second.run("r2").goal == "g"
            with pytest.raises(RunInUse):  # within one store the lock still holds
                with Store(postgres_url) as third:
                    third.acquire_run("r1", 333, 0.0, alive=lambda pid, started: True)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {other} CASCADE")


def test_postgresql_text_holds_no_nul_but_json_payloads_keep_it(postgres_url: str) -> None:
    with Store(postgres_url) as store:
        store.create_run("r1", goal="a\x00b", workspace="/w", model=None, settings={},
                         policy={}, sandbox=None, messages=[Message.user("x\x00y")])
        assert store.run("r1").goal == "a\u2400b"
        assert store.messages("r1")[0].content == "x\x00y"


def test_inbox_seen_by_the_driver_on_every_backend(store: Store, location: str) -> None:
    """A steer left by another connection reaches the driver's `has_inbox`: at once on
    SQLite, and through a LISTEN/NOTIFY on PostgreSQL (the driver then asks the server
    only after a notification)."""
    import threading

    store.create_run("r2", goal="g", workspace="/w", model=None, settings={},
                     policy={}, sandbox=None, messages=[])
    with Store(location) as operator:
        operator.post_inbox("r1", "steer", {"text": "before"})  # before the driver listens
        assert store.has_inbox("r1")
        assert store.take_inbox("r1", 0) == [("steer", {"text": "before"})]
        assert not store.has_inbox("r1")
        operator.post_inbox("r2", "steer", {"text": "other run"})
        operator.post_inbox("r1", "interrupt", {})
        seen = False
        for _ in range(2000):  # poll: a notification arrives a moment after its commit
            seen = store.has_inbox("r1")
            if seen or threading.Event().wait(0.005):
                break
        assert seen
        assert store.take_inbox("r1", 1) == [("interrupt", {})]
        assert not store.has_inbox("r1")
        assert store.take_inbox("r2", 1) == [("steer", {"text": "other run"})]


def test_a_failed_statement_in_a_queued_transaction_rolls_back_whole(store: Store) -> None:
    """A write transaction whose statements are queued (PostgreSQL) or sent one by one
    (SQLite) commits all or nothing: a duplicate key in its last statement loses the rest."""
    from harness_core.errors import StateError

    call = ToolCall("c1", "read_file", {"path": "a"})
    store.record_intent("r1", 0, 0, call)
    with pytest.raises(StateError):
        with store._tx() as conn:
            conn.execute("UPDATE runs SET goal = ? WHERE run_id = ?", ("changed", "r1"))
            conn.execute(
                "INSERT INTO ledger(run_id, step_index, call_index, call_id, name, arguments,"
                " intent_at) VALUES (?,?,?,?,?,?,?)", ("r1", 0, 0, "c1", "read_file", "{}", "t"))
    assert store.run("r1").goal == "g"
    assert [e.call_id for e in store.ledger("r1")] == ["c1"]
    store.record_observation("r1", 0, 0, ToolResult("c1", "read_file", "ok"))  # the store goes on
    assert store.ledger("r1")[0].observation == "ok"


def test_postgresql_queued_writes_keep_every_value_exactly(postgres_url: str) -> None:
    """Writes in a transaction go out as prepared statements with their values rendered
    client-side: quotes, percent signs, backslashes, NUL, None, bools, big and float
    numbers all land as they were given, and a literal `%` in the statement survives."""
    odd = "it's 100% \\ done; DROP TABLE runs; -- \x00 \U0001f600"
    with Store(postgres_url) as store:
        store.create_run("r1", goal=odd, workspace="/w", model=None, settings={"k": odd},
                         policy={}, sandbox=None, messages=[Message.user(odd)])
        with store._tx() as conn:
            conn.execute("UPDATE runs SET goal = goal || '%' || ?, steps_used = ?,"
                         " wall_used = ? WHERE run_id = ?", ("!", 2**62, 0.1 + 0.2, "r1"))
            conn.execute("UPDATE runs SET model = ?, reason = ? WHERE run_id = ?",
                         (None, True, "r1"))
        run = store.run("r1")
        assert run.goal == odd.replace("\x00", "\u2400") + "%!"
        assert run.settings == {"k": odd}
        assert store.messages("r1")[0].content == odd
        assert run.steps_used == 2**62 and run.model is None
        row = store._query("SELECT wall_used, reason FROM runs WHERE run_id = ?", ("r1",))[0]
        assert row == (0.1 + 0.2, "1")


def test_sqlite_upserts_are_translated_whatever_their_case(store: Store) -> None:
    """`INSERT OR REPLACE` / `INSERT OR IGNORE` mean the same on both backends, written in
    any letter case (PostgreSQL has neither: they become ON CONFLICT clauses)."""
    with store._tx() as conn:
        conn.execute("insert or replace into meta(key, value) values (?, ?)", ("k", "1"))
        conn.execute("Insert Or Replace Into meta(key, value) VALUES (?, ?)", ("k", "2"))
        conn.execute("insert or ignore into meta(key, value) VALUES (?, ?)", ("k", "3"))
    assert store._query("SELECT value FROM meta WHERE key = ?", ("k",)) == [("2",)]


def test_a_steps_last_observation_carries_its_checkpoint(store: Store) -> None:
    """`record_observation(..., checkpoint=...)` writes the observation, the step's
    checkpoint, its budget draw and the run's counters in one transaction."""
    call = ToolCall("c1", "read_file", {"path": "a"})
    store.record_intent("r1", 0, 0, call)
    store.record_observation("r1", 0, 0, ToolResult("c1", "read_file", "ok"),
                             checkpoint=CheckpointState(0, done=False), tokens=12,
                             wall_seconds=0.5)
    assert store.ledger("r1")[0].observation == "ok"
    last = store.last_checkpoint("r1")
    assert last is not None and last.step_index == 0 and not last.state.done
    run = store.run("r1")
    assert (run.steps_used, run.tokens_used) == (1, 12)


def test_a_store_in_public_keeps_the_lock_keys_earlier_versions_used() -> None:
    """docs/CONTRACT.md: drivers of an earlier version and this one still exclude each
    other on a store in `public`; any other schema gets keys of its own."""
    import zlib

    from harness_core.store._postgres import advisory_key, store_lock_sql

    def earlier(kind: str, name: str) -> int:  # the formula before keys had a schema
        value = (zlib.crc32(kind.encode()) << 32) | zlib.crc32(name.encode())
        return value - (1 << 64) if value >= 1 << 63 else value

    for kind, name in (("run", "r1"), ("session", "s-1"), ("run", "b1a5544ef66e-0000")):
        assert advisory_key(kind, name, "public") == advisory_key(kind, name) == earlier(
            kind, name)
        assert advisory_key(kind, name, "team_a") not in (earlier(kind, name),
                                                          advisory_key(kind, name, "team_b"))
    assert store_lock_sql("public") == "SELECT pg_advisory_xact_lock(281374944)"
    assert store_lock_sql("team_a") not in (store_lock_sql("public"), store_lock_sql("team_b"))
