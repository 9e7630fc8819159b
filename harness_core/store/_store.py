"""`Store`: every query `io` makes, over one SQLite file in WAL mode.

Nothing outside `store/` writes SQL. Every statement is parameterised; every payload
is JSON. `sqlite3.Error` is translated to `StateError` here and never escapes.
Durability: WAL with `synchronous=NORMAL`, so a committed transaction survives the
death of the process (kill -9); an operating-system crash may lose the last commits
but never corrupts the file.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness_core.errors import (
    CheckpointFormatError,
    RunInUse,
    RunNotFound,
    StateError,
    StoreDamaged,
    StoreUnavailable,
)
from harness_core.messages import Message, ToolCall, ToolResult, Usage, escape_surrogates
from harness_core.store._batches import BATCH_SCHEMA_SQL, BatchQueries
from harness_core.store._check import (
    StoreReport,
    inspect_file,
    readonly_uri,
    verify_log_owner,
    verify_schema,
)
from harness_core.store._check import check_store as _check_store
from harness_core.store._codec import dumps, loads, message_from_json, message_to_json
from harness_core.store._handles import HANDLE_SCHEMA_SQL, HandleQueries
from harness_core.store._postgres import is_postgres_url
from harness_core.store._questions import QUESTION_SCHEMA_SQL, QuestionQueries
from harness_core.store._records import (
    CheckpointRecord,
    CheckpointState,
    LedgerEntry,
    Pause,
    PolicyEventRecord,
    RunRecord,
    RunStatus,
    StepRecord,
    VerificationRecord,
)
from harness_core.store._schema import (
    CHECKPOINT_FORMAT,
    MIGRATIONS,
    RUNNER_HOST_SQL,
    VERIFICATION_REPORT_SQL,
)
from harness_core.store._sessions import SESSION_SCHEMA_SQL, SessionQueries
from harness_core.store._spend import SpendQueries
from harness_core.store._sweeps import SWEEP_SCHEMA_SQL, SweepQueries
from harness_core.store._todos import PLAN_SCHEMA_SQL, PlanQueries
from harness_core.store._tree import (
    RUN_COLUMNS,
    TREE_SCHEMA_SQL,
    TreePlace,
    TreeQueries,
    run_record,
)

__all__ = ["KNOWN_MIGRATIONS", "AliveCheck", "Store", "check_store"]

AliveCheck = Callable[[int, float | None], bool]
"""(pid, process start time) → whether that very process still lives."""

_BUSY_TIMEOUT_MS = 5000
_HOST = socket.gethostname()  # the runner, recorded per completion and per drive
_MIGRATIONS: tuple[tuple[str, str], ...] = (
    *MIGRATIONS, ("0002_handles", HANDLE_SCHEMA_SQL), ("0003_sessions", SESSION_SCHEMA_SQL),
    ("0004_todos", PLAN_SCHEMA_SQL), ("0005_questions", QUESTION_SCHEMA_SQL),
    ("0006_verification_report", VERIFICATION_REPORT_SQL),
    ("0007_store_id", ""),  # the row itself is written by `_migrate`, on every backend
    ("0008_agent_trees", TREE_SCHEMA_SQL),
    ("0009_runner_host", RUNNER_HOST_SQL),
    ("0010_sweeps", SWEEP_SCHEMA_SQL),
    ("0011_batches", BATCH_SCHEMA_SQL),
)
KNOWN_MIGRATIONS = frozenset(name for name, _ in _MIGRATIONS)
"""Every migration this version applies; a store recording another was written by a
newer io and is refused."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _translate(exc: sqlite3.Error, what: str, path: Path | None = None) -> StateError:
    text = str(exc)
    where = str(path) if path is not None else "the store"
    if "locked" in text or "busy" in text:
        return StoreUnavailable(where, f"it is locked by another process ({what})",
                                hint="another io process holds it; retry when it is done")
    if "readonly" in text or "read-only" in text or (
            "unable to open" in text and path is not None and _is_read_only(path)):
        return StoreUnavailable(where, f"it is read-only ({what})",
                                hint="make the file and its directory writable, or point"
                                     " IO_STORE or [store] path at a writable place")
    if "disk is full" in text or "disk full" in text or (
            "disk I/O error" in text and path is not None and _disk_is_full(path)):
        return StoreUnavailable(where, f"no space left on its disk ({what}); nothing was"
                                       " recorded by the failed write",
                                hint="free space on that disk, then retry")
    if "disk I/O error" in text:
        return StoreUnavailable(where, f"a disk I/O error ({what})",
                                hint="check the disk that holds the store")
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return StoreDamaged(where, f"{text} ({what})")
    if "unable to open" in text:
        return StoreUnavailable(where, f"it cannot be opened ({what}): {text}",
                                hint="check the path and its directory's permissions")
    return StateError(f"store failed while {what}: {text}")


def check_store(path: str | os.PathLike[str]) -> StoreReport:
    """Check a store fully without writing it: the checks `Store` makes on open, then
    ``PRAGMA integrity_check`` (what `io store check` runs).

    Raises:
        StoreUnavailable: The path does not exist or is not a regular file.
    """
    return _check_store(path, expected=CHECKPOINT_FORMAT, known=KNOWN_MIGRATIONS)


def _is_read_only(path: Path) -> bool:
    # WAL needs the directory writable too (for the -wal and -shm files beside the store).
    return path.exists() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _disk_is_full(path: Path) -> bool:
    # SQLite reports a full disk met while sizing its shared-memory file as an I/O error.
    try:
        return shutil.disk_usage(path.parent).free == 0
    except OSError:
        return False


class Store(HandleQueries, SpendQueries, SessionQueries, PlanQueries, QuestionQueries,
            BatchQueries, SweepQueries,
            TreeQueries):
    """The run store.

    Opening checks the file first (see `harness_core.store._check`): a file that fails
    is never opened for writing.

    Args:
        path: The SQLite file; created with its parent directory when missing.

    Raises:
        StoreDamaged: The file fails its self-check (not SQLite, truncated, damaged).
        StoreUnavailable: Not a regular file, read-only, disk full, or locked.
        CheckpointFormatError: The store was written with another checkpoint format.
        StateError: It cannot be opened for another reason.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._opened_with = path  # may hold a password: never shown, only `reopen` reads it
        if is_postgres_url(path):
            self._open_postgres(str(path))
            return
        self.backend = "sqlite"
        self.location = str(path)
        self.path = Path(path)
        exists = inspect_file(self.path) > 0
        if exists:
            self._verify()
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(
                    str(self.path), f"cannot create its directory: {exc.strerror or exc}"
                ) from exc
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise _translate(exc, "opening", self.path) from exc
        try:
            self._conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            if not exists:
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
        except sqlite3.Error as exc:
            self._conn.close()
            raise _translate(exc, "opening", self.path) from exc
        except StateError:
            self._conn.close()
            raise

    def _open_postgres(self, url: str) -> None:
        from harness_core.store._postgres import PgConnection, redact_url

        self.backend = "postgresql"
        self.location = redact_url(url)
        self.path = Path("/nonexistent/io-postgresql-store")  # no file: nothing to protect
        self._conn = PgConnection(url)  # type: ignore[assignment]
        try:
            self._migrate()
        except sqlite3.Error as exc:
            self._conn.close()
            raise _translate(exc, f"opening {self.location}") from exc
        except StateError:
            self._conn.close()
            raise

    def _verify(self) -> None:
        """The self-check of an existing file, through a connection that cannot write."""
        try:
            conn = sqlite3.connect(readonly_uri(self.path), uri=True,
                                   timeout=_BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as exc:
            raise _translate(exc, "checking", self.path) from exc
        try:
            verify_schema(conn, self.path, expected=CHECKPOINT_FORMAT, known=KNOWN_MIGRATIONS)
            verify_log_owner(conn, self.path)
        except sqlite3.Error as exc:
            raise _translate(exc, "checking", self.path) from exc
        finally:
            conn.close()

    def _is_current(self) -> bool:
        """Whether this SQLite store has every migration (read only, no lock taken)."""
        tables = {r[0] for r in self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        if "migrations" not in tables or "meta" not in tables:
            return False
        done = {r[0] for r in self._conn.execute("SELECT name FROM migrations")}
        return KNOWN_MIGRATIONS <= done

    def _migrate(self) -> None:
        # Read first: a SQLite store that is up to date is not written at all (`io runs`
        # leaves its bytes alone, and needs no write lock).
        if self.backend == "sqlite" and self._is_current():
            return
        with self._tx():
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
            )
            # Only a new store lacks the row (an existing SQLite one without it failed
            # `_verify`); a PostgreSQL store is checked here.
            self._conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('checkpoint_format', ?)",
                (str(CHECKPOINT_FORMAT),),
            )
            self._check_format_row()
            self._conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('store_id', ?)",
                               (secrets.token_hex(16),))
            done = {r[0] for r in self._conn.execute("SELECT name FROM migrations")}
            for name, sql in _MIGRATIONS:
                if name in done:
                    continue
                for statement in sql.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._conn.execute(
                    "INSERT INTO migrations(name, applied_at) VALUES (?, ?)", (name, _now())
                )

    def _check_format_row(self) -> None:
        row = self._conn.execute(
            "SELECT value FROM meta WHERE key = 'checkpoint_format'").fetchone()
        value = str(row[0]) if row is not None else ""
        if not value.isdigit():
            raise StoreDamaged(self.location, f"its checkpoint_format row holds {value[:40]!r},"
                                              " not a number")
        if int(value) != CHECKPOINT_FORMAT:
            raise CheckpointFormatError(int(value), CHECKPOINT_FORMAT)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE), committed or rolled back whole."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _translate(exc, "starting a transaction", self.path) from exc
        try:
            yield self._conn
        except sqlite3.Error as exc:
            self._rollback()
            raise _translate(exc, "writing", self.path) from exc
        except BaseException:
            self._rollback()
            raise
        try:
            # Every commit rewrites the meta page (which holds `store_id`) into the log,
            # so a log copied beside another store is recognised as foreign on open.
            if self.backend == "sqlite":
                self._conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('last_write', ?)", (_now(),))
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise _translate(exc, "committing", self.path) from exc

    def _rollback(self) -> None:
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # SQLite already rolled back (a full disk does); nothing was committed

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn.execute(sql, tuple(params)).fetchall())
        except sqlite3.Error as exc:
            raise _translate(exc, "reading", self.path) from exc

    def reopen(self) -> Store:
        """Another connection to this store, for another thread (a parallel child).

        The store was checked and migrated when this one opened it, so the twin only
        connects: re-running the file self-check while other connections write (and
        checkpoint the WAL) could read a header ahead of the file's size.

        Raises:
            StateError: The connection cannot be made.
        """
        twin = Store.__new__(Store)
        twin._opened_with = self._opened_with
        twin.backend, twin.location, twin.path = self.backend, self.location, self.path
        if self.backend == "postgresql":
            from harness_core.store._postgres import PgConnection

            twin._conn = PgConnection(str(self._opened_with))  # type: ignore[assignment]
            return twin
        try:
            twin._conn = sqlite3.connect(str(self.path), timeout=_BUSY_TIMEOUT_MS / 1000,
                                         isolation_level=None, check_same_thread=False)
            twin._conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            twin._conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise _translate(exc, "opening", self.path) from exc
        return twin

    def close(self) -> None:
        """Close the connection (idempotent)."""
        try:
            self._conn.close()
        except sqlite3.Error as exc:
            raise _translate(exc, "closing", self.path) from exc

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def integrity_check(self) -> str:
        """`PRAGMA integrity_check`'s answer (``ok`` when sound)."""
        return str(self._query("PRAGMA integrity_check")[0][0])

    # ---- runs -------------------------------------------------------------------

    def create_run(
        self,
        run_id: str,
        *,
        goal: str,
        workspace: str,
        model: str | None,
        settings: dict[str, Any],
        policy: dict[str, Any],
        sandbox: dict[str, Any] | None,
        messages: Sequence[Message],
        session_id: str | None = None,
        parent_run_id: str | None = None,
        owner_pid: int | None = None,
        owner_started: float | None = None,
        tree: TreePlace | None = None,
    ) -> None:
        """Record a new run with its opening messages, owned by the calling process.

        `tree` places a spawned child in its tree (root, depth, the spawning call)."""
        now = _now()
        if owner_pid is not None:
            self._hold("run", run_id)
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO runs(run_id, created_at, updated_at, status, goal, workspace, model,"
                " session_id, parent_run_id, settings, policy, sandbox, owner_pid, owner_started,"
                " depth, root_run_id, spawn_step, spawn_call, agent)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, now, now, RunStatus.RUNNING.value, escape_surrogates(goal), workspace,
                 model, session_id, parent_run_id, dumps(settings), dumps(policy),
                 dumps(sandbox) if sandbox is not None else None, owner_pid, owner_started,
                 *(tree.row() if tree is not None else (0, run_id, None, None, None))),
            )
            self._insert_messages(conn, run_id, -1, messages)
            conn.execute(
                "INSERT INTO drives(run_id, seq, started_at, pid, policy, sandbox, host)"
                " VALUES (?, 0, ?, ?, ?, ?, ?)",
                (run_id, now, owner_pid or os.getpid(), dumps(policy),
                 dumps(sandbox) if sandbox is not None else None, _HOST),
            )

    def run(self, run_id: str) -> RunRecord:
        """The run's record.

        Raises:
            RunNotFound: No such run.
        """
        rows = self._query(_RUN_BY_ID, (run_id,))
        if not rows:
            raise RunNotFound(run_id)
        return run_record(rows[0])

    def find_run(self, prefix: str) -> RunRecord:
        """The run whose id is `prefix` or uniquely starts with it (an empty prefix names
        no run, however few the store holds)."""
        if not prefix.strip():
            raise RunNotFound(prefix)
        rows = self._query(
            _RUN_BY_PREFIX,
            (prefix, prefix.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%", prefix),
        )
        if not rows or (len(rows) > 1 and rows[0][0] != prefix):
            raise RunNotFound(prefix)
        return run_record(rows[0])

    def list_runs(self, limit: int = 20, *, session_id: str | None = None) -> list[RunRecord]:
        """The most recent runs, newest first."""
        if session_id is None:
            rows = self._query(_RUNS_RECENT, (limit,))
        else:
            rows = self._query(_RUNS_OF_SESSION, (session_id, limit))
        return [run_record(r) for r in rows]

    def child_runs(self, run_id: str) -> list[RunRecord]:
        """The runs whose parent is `run_id`, oldest first (one level of a tree)."""
        return [run_record(r) for r in self._query(_RUNS_OF_PARENT, (run_id,))]

    def acquire_run(self, run_id: str, pid: int, started: float, *, alive: AliveCheck) -> int:
        """Make the calling process the run's one driver; returns the drive number.

        A lock whose owner has died (or whose pid now belongs to another process) is
        reclaimed.

        Raises:
            RunInUse: A live process drives the run.
            RunNotFound: No such run.
        """
        with self._tx() as conn:
            row = conn.execute(
                "SELECT owner_pid, owner_started FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise RunNotFound(run_id)
            owner_pid, owner_started = row
            if owner_pid is not None and owner_pid != pid and self._held(
                    "run", run_id, owner_pid, owner_started, alive):
                raise RunInUse(run_id, int(owner_pid))
            if not self._hold("run", run_id):
                raise RunInUse(run_id, int(owner_pid or 0))
            conn.execute(
                "UPDATE runs SET owner_pid = ?, owner_started = ?, updated_at = ? WHERE run_id = ?",
                (pid, started, _now(), run_id),
            )
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM drives WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            return int(seq)

    def record_drive(
        self, run_id: str, seq: int, pid: int, policy: dict[str, Any], sandbox: dict[str, Any] | None
    ) -> None:
        """Record the policy and sandbox a resumed drive runs under (the audit of a resume)."""
        with self._tx() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO drives(run_id, seq, started_at, pid, policy, sandbox, host)"
                " VALUES (?,?,?,?,?,?,?)",
                (run_id, seq, _now(), pid, dumps(policy),
                 dumps(sandbox) if sandbox is not None else None, _HOST),
            )
            conn.execute(
                "UPDATE runs SET policy = ?, sandbox = ? WHERE run_id = ?",
                (dumps(policy), dumps(sandbox) if sandbox is not None else None, run_id),
            )

    def drives(self, run_id: str) -> list[dict[str, Any]]:
        """Each drive of the run: when, which process, under which policy and sandbox."""
        rows = self._query(
            "SELECT seq, started_at, pid, policy, sandbox FROM drives WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        return [
            {"seq": r[0], "started_at": r[1], "pid": r[2], "policy": loads(r[3]),
             "sandbox": loads(r[4])}
            for r in rows
        ]

    def _held(self, kind: str, name: str, pid: int, started: float | None,
              alive: AliveCheck) -> bool:
        """Whether a recorded owner still drives (kind, name).

        SQLite: the owner's (pid, start time) on this machine. PostgreSQL: whether some
        live connection, on any machine, holds the advisory lock for it.
        """
        if self.backend == "postgresql":
            return bool(self._conn.is_locked_elsewhere(kind, name))  # type: ignore[attr-defined]
        return alive(int(pid), started)

    def _hold(self, kind: str, name: str) -> bool:
        """Take (kind, name)'s advisory lock on PostgreSQL; always True on SQLite."""
        if self.backend == "postgresql":
            return bool(self._conn.try_lock(kind, name))  # type: ignore[attr-defined]
        return True

    def _let_go(self, kind: str, name: str) -> None:
        if self.backend == "postgresql":
            self._conn.unlock(kind, name)  # type: ignore[attr-defined]

    def release_run(self, run_id: str, pid: int) -> None:
        """Give up driving the run (only when the caller owns it)."""
        self._let_go("run", run_id)
        with self._tx() as conn:
            conn.execute(
                "UPDATE runs SET owner_pid = NULL, owner_started = NULL"
                " WHERE run_id = ? AND owner_pid = ?",
                (run_id, pid),
            )

    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        exit_code: int | None = None,
        reason: str | None = None,
        pause: Pause | None = None,
    ) -> None:
        """Record where the run stands."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE runs SET status = ?, exit_code = ?, reason = ?, pause = ?, updated_at = ?"
                " WHERE run_id = ?",
                (status.value, exit_code, reason, dumps(pause.to_json()) if pause is not None else None,
                 _now(), run_id),
            )

    # ---- conversation -------------------------------------------------------------

    def _insert_messages(
        self, conn: sqlite3.Connection, run_id: str, step: int, messages: Sequence[Message]
    ) -> None:
        if not messages:
            return
        # The next seq is computed by each INSERT itself: no answer to wait for, so on
        # PostgreSQL the whole transaction goes out in one pipeline.
        conn.executemany(
            "INSERT INTO messages(run_id, seq, step_index, role, body)"
            " SELECT ?, COALESCE(MAX(seq), -1) + 1, ?, ?, ? FROM messages WHERE run_id = ?",
            [(run_id, step, m.role.value, dumps(message_to_json(m)), run_id) for m in messages],
        )

    def append_messages(self, run_id: str, step: int, messages: Sequence[Message]) -> None:
        """Append messages the model will see (a steer, an answer) to the conversation."""
        with self._tx() as conn:
            self._insert_messages(conn, run_id, step, messages)

    def messages(self, run_id: str) -> list[Message]:
        """The whole conversation of the run, in order (the store keeps everything)."""
        rows = self._query(
            "SELECT body FROM messages WHERE run_id = ? ORDER BY seq", (run_id,)
        )
        return [message_from_json(loads(r[0])) for r in rows]

    # ---- steps and the ledger -----------------------------------------------------

    def record_completion(
        self,
        run_id: str,
        step: int,
        *,
        text: str,
        tool_calls: Sequence[ToolCall],
        provider: str,
        model_requested: str,
        model_served: str,
        usage: dict[str, int | None],
        latency_ms: float,
        ttft_ms: float | None,
        stop_reason: str | None,
        attempts: Sequence[dict[str, Any]] = (),
        citations: Sequence[dict[str, Any]] = (),
        server_tool_calls: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Commit a completion: the step, its numbers and the assistant message, at once."""
        now = _now()
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO steps(run_id, step_index, created_at, text, tool_calls)"
                " VALUES (?,?,?,?,?)",
                (run_id, step, now, escape_surrogates(text),
                 dumps([c.to_json() for c in tool_calls])),
            )
            conn.execute(
                "INSERT INTO completions(run_id, step_index, created_at, provider, model_requested,"
                " model_served, prompt_tokens, completion_tokens, total_tokens, cache_read_tokens,"
                " cache_write_tokens, reasoning_tokens, server_tool_requests, latency_ms, ttft_ms,"
                " stop_reason, host) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, step, now, provider, model_requested, model_served,
                 usage.get("prompt_tokens"), usage.get("completion_tokens"),
                 usage.get("total_tokens"), usage.get("cache_read_tokens"),
                 usage.get("cache_write_tokens"), usage.get("reasoning_tokens"),
                 usage.get("server_tool_requests"), latency_ms, ttft_ms, stop_reason, _HOST),
            )
            base = conn.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM provider_attempts"
                " WHERE run_id = ? AND step_index = ?", (run_id, step),
            ).fetchone()[0]
            for i, attempt in enumerate(attempts):
                conn.execute(
                    "INSERT INTO provider_attempts(run_id, step_index, seq, provider, model, ok,"
                    " error, status) VALUES (?,?,?,?,?,?,?,?)",
                    (run_id, step, base + i, attempt.get("provider", ""), attempt.get("model", ""),
                     1 if attempt.get("ok") else 0, attempt.get("error"), attempt.get("status")),
                )
            for cite in citations:
                conn.execute(
                    "INSERT INTO citations(run_id, step_index, url, title, cited_text)"
                    " VALUES (?,?,?,?,?)",
                    (run_id, step, cite.get("url", ""), cite.get("title"), cite.get("cited_text")),
                )
            for call in server_tool_calls:
                conn.execute(
                    "INSERT INTO server_tool_calls(run_id, step_index, name, input) VALUES (?,?,?,?)",
                    (run_id, step, call.get("name", ""), dumps(call.get("input", {}))),
                )
            self._insert_messages(conn, run_id, step, [Message.assistant(text, tuple(tool_calls))])

    def record_failed_attempts(
        self, run_id: str, step: int, attempts: Sequence[dict[str, Any]]
    ) -> None:
        """Record the attempts of a completion that failed after every retry and fallback."""
        if not attempts:
            return
        with self._tx() as conn:
            base = conn.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM provider_attempts"
                " WHERE run_id = ? AND step_index = ?", (run_id, step),
            ).fetchone()[0]
            conn.executemany(
                "INSERT INTO provider_attempts(run_id, step_index, seq, provider, model, ok,"
                " error, status) VALUES (?,?,?,?,?,?,?,?)",
                [(run_id, step, base + i, a.get("provider", ""), a.get("model", ""), 0,
                  a.get("error"), a.get("status")) for i, a in enumerate(attempts)],
            )

    def provider_attempts(self, run_id: str) -> list[dict[str, Any]]:
        """Every recorded attempt of the run (successful and failed), in order."""
        rows = self._query(
            "SELECT step_index, seq, provider, model, ok, error, status FROM provider_attempts"
            " WHERE run_id = ? ORDER BY step_index, seq", (run_id,),
        )
        keys = ("step", "seq", "provider", "model", "ok", "error", "status")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def step(self, run_id: str, step: int) -> StepRecord | None:
        """The committed completion of `step`, or None."""
        rows = self._query(
            "SELECT s.step_index, s.created_at, s.text, s.tool_calls, c.provider, c.model_served,"
            " c.prompt_tokens, c.completion_tokens, c.total_tokens, c.cache_read_tokens,"
            " c.cache_write_tokens, c.reasoning_tokens, c.server_tool_requests, c.latency_ms,"
            " c.ttft_ms FROM steps s LEFT JOIN completions c"
            " ON c.run_id = s.run_id AND c.step_index = s.step_index"
            " WHERE s.run_id = ? AND s.step_index = ?",
            (run_id, step),
        )
        return _step_record(rows[0]) if rows else None

    def steps(self, run_id: str) -> list[StepRecord]:
        """Every committed completion of the run, in order."""
        rows = self._query(
            "SELECT s.step_index, s.created_at, s.text, s.tool_calls, c.provider, c.model_served,"
            " c.prompt_tokens, c.completion_tokens, c.total_tokens, c.cache_read_tokens,"
            " c.cache_write_tokens, c.reasoning_tokens, c.server_tool_requests, c.latency_ms,"
            " c.ttft_ms FROM steps s LEFT JOIN completions c"
            " ON c.run_id = s.run_id AND c.step_index = s.step_index"
            " WHERE s.run_id = ? ORDER BY s.step_index",
            (run_id,),
        )
        return [_step_record(r) for r in rows]

    def record_intent(self, run_id: str, step: int, call_index: int, call: ToolCall) -> None:
        """Write a tool call's intent before it runs."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO ledger(run_id, step_index, call_index, call_id, name, arguments,"
                " intent_at) VALUES (?,?,?,?,?,?,?)",
                (run_id, step, call_index, call.id, call.name,
                 dumps(call.arguments if call.raw_arguments is None
                       else {"__raw__": call.raw_arguments}), _now()),
            )

    def record_observation(
        self,
        run_id: str,
        step: int,
        call_index: int,
        result: ToolResult,
        *,
        data: dict[str, Any] | None = None,
        edits: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Write a tool call's observation (and the tool message) after it ran."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE ledger SET observation = ?, is_error = ?, data = ?, observed_at = ?"
                " WHERE run_id = ? AND step_index = ? AND call_index = ?",
                (escape_surrogates(result.output), 1 if result.is_error else 0,
                 dumps(data) if data is not None else None, _now(), run_id, step, call_index),
            )
            for edit in edits:
                conn.execute(
                    "INSERT INTO edits(run_id, step_index, call_id, path, lines_added,"
                    " lines_removed, bytes_before, bytes_after) VALUES (?,?,?,?,?,?,?,?)",
                    (run_id, step, result.call_id, escape_surrogates(str(edit["path"])),
                     edit["lines_added"],
                     edit["lines_removed"], edit["bytes_before"], edit["bytes_after"]),
                )
            self._insert_messages(conn, run_id, step, [Message.tool(result)])

    def ledger(self, run_id: str, step: int | None = None) -> list[LedgerEntry]:
        """Ledger entries of the run (or of one step), in order."""
        sql = (
            "SELECT step_index, call_index, call_id, name, arguments, observation, is_error, data"
            " FROM ledger WHERE run_id = ?"
        )
        params: list[Any] = [run_id]
        if step is not None:
            sql += " AND step_index = ?"
            params.append(step)
        rows = self._query(sql + " ORDER BY step_index, call_index", params)
        return [
            LedgerEntry(r[0], r[1], r[2], r[3], loads(r[4]), r[5], bool(r[6]), loads(r[7]))
            for r in rows
        ]

    def edits(self, run_id: str) -> list[dict[str, Any]]:
        """Per-file edit sizes recorded for the run."""
        rows = self._query(
            "SELECT step_index, call_id, path, lines_added, lines_removed, bytes_before, bytes_after"
            " FROM edits WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        )
        keys = ("step", "call_id", "path", "lines_added", "lines_removed", "bytes_before",
                "bytes_after")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    # ---- checkpoints and budgets --------------------------------------------------

    def record_checkpoint(
        self,
        run_id: str,
        step: int,
        state: CheckpointState,
        *,
        tokens: int,
        wall_seconds: float,
    ) -> None:
        """Commit the step's checkpoint and its budget draw in one transaction."""
        with self._tx() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO checkpoints(run_id, step_index, format, created_at, state)"
                " VALUES (?,?,?,?,?)",
                (run_id, step, CHECKPOINT_FORMAT, _now(), dumps(state.to_json())),
            )
            conn.execute(
                "INSERT OR REPLACE INTO budget_draws(run_id, step_index, steps, tokens,"
                " wall_seconds) VALUES (?,?,?,?,?)",
                (run_id, step, 1, tokens, wall_seconds),
            )
            conn.execute(
                "UPDATE runs SET steps_used = ?, tokens_used = tokens_used + ?,"
                " wall_used = wall_used + ?, updated_at = ? WHERE run_id = ?",
                (step + 1, tokens, wall_seconds, _now(), run_id),
            )

    def update_checkpoint_state(self, run_id: str, step: int, state: CheckpointState) -> None:
        """Replace the state of an existing checkpoint (e.g. after the gates ran)."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE checkpoints SET state = ? WHERE run_id = ? AND step_index = ?",
                (dumps(state.to_json()), run_id, step),
            )

    def last_checkpoint(self, run_id: str) -> CheckpointRecord | None:
        """The newest checkpoint of the run.

        Raises:
            CheckpointFormatError: It was written in another format.
        """
        rows = self._query(
            "SELECT step_index, format, state FROM checkpoints WHERE run_id = ?"
            " ORDER BY step_index DESC LIMIT 1",
            (run_id,),
        )
        if not rows:
            return None
        step, fmt, state = rows[0]
        if int(fmt) != CHECKPOINT_FORMAT:
            raise CheckpointFormatError(int(fmt), CHECKPOINT_FORMAT)
        return CheckpointRecord(int(step), int(fmt), CheckpointState.from_json(loads(state)))

    def add_wall(self, run_id: str, seconds: float) -> None:
        """Draw wall-clock time spent outside a committed step (e.g. a final gate)."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE runs SET wall_used = wall_used + ? WHERE run_id = ?", (seconds, run_id)
            )

    # ---- policy, verification, inbox ----------------------------------------------

    def record_policy_event(
        self,
        run_id: str,
        step: int | None,
        *,
        act: str,
        target: str,
        verdict: str,
        reason: str,
        rule: str | None,
        layer: str | None,
        decided_by: str,
    ) -> None:
        """Record a refusal or an approver's decision (a silent allow records nothing)."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO policy_events(run_id, step_index, created_at, act, target, verdict,"
                " reason, rule, layer, decided_by) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, step, _now(), act, target, verdict, reason, rule, layer, decided_by),
            )

    def policy_events(self, run_id: str) -> list[PolicyEventRecord]:
        """Refusals and approver decisions of the run, in order."""
        rows = self._query(
            "SELECT step_index, created_at, act, target, verdict, reason, rule, layer, decided_by"
            " FROM policy_events WHERE run_id = ? ORDER BY id",
            (run_id,),
        )
        return [PolicyEventRecord(*r) for r in rows]

    def record_verification(
        self, run_id: str, step: int, criterion: str, passed: bool, exit_status: int | None,
        output: str, *, duration_seconds: float | None = None, sandbox: str | None = None,
        inputs: dict[str, Any] | None = None,
    ) -> None:
        """Record one gate's result (with how long it ran, where, and its inputs' fate)."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO verifications(run_id, step_index, created_at, criterion, passed,"
                " exit_status, output, duration_seconds, sandbox, inputs)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, step, _now(), escape_surrogates(criterion), 1 if passed else 0,
                 exit_status, escape_surrogates(output), duration_seconds, sandbox,
                 None if inputs is None else dumps(inputs)),
            )

    def verifications(self, run_id: str) -> list[VerificationRecord]:
        """Every gate result of the run, in order."""
        rows = self._query(
            "SELECT step_index, criterion, passed, exit_status, output, duration_seconds,"
            " sandbox, inputs FROM verifications WHERE run_id = ? ORDER BY id",
            (run_id,),
        )
        return [VerificationRecord(r[0], r[1], bool(r[2]), r[3], r[4], r[5], r[6],
                                   None if r[7] is None else loads(r[7])) for r in rows]

    def post_inbox(self, run_id: str, kind: str, body: dict[str, Any]) -> None:
        """Leave an operator message (steer, interrupt) for the run's next step boundary."""
        self.run(run_id)
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO run_inbox(run_id, kind, body, created_at) VALUES (?,?,?,?)",
                (run_id, kind, dumps(body), _now()),
            )

    def take_inbox(self, run_id: str, step: int) -> list[tuple[str, dict[str, Any]]]:
        """Consume pending operator messages at a step boundary, oldest first."""
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT id, kind, body FROM run_inbox WHERE run_id = ? AND consumed_step IS NULL"
                " ORDER BY id",
                (run_id,),
            ).fetchall()
            if rows:
                conn.executemany(
                    "UPDATE run_inbox SET consumed_step = ? WHERE id = ?",
                    [(step, r[0]) for r in rows],
                )
        return [(str(r[1]), loads(r[2])) for r in rows]

    def has_inbox(self, run_id: str) -> bool:
        """Whether an operator message waits (a cheap read, no transaction)."""
        rows = self._query(
            "SELECT 1 FROM run_inbox WHERE run_id = ? AND consumed_step IS NULL LIMIT 1", (run_id,)
        )
        return bool(rows)


_RUN_BY_ID = (
    RUN_COLUMNS + " FROM runs WHERE run_id = ?"
)
_RUN_BY_PREFIX = (
    RUN_COLUMNS + " FROM runs WHERE run_id = ? OR run_id LIKE ?"
    " ESCAPE '!' ORDER BY run_id = ? DESC LIMIT 2"
)
_RUNS_RECENT = (
    RUN_COLUMNS + " FROM runs ORDER BY created_at DESC LIMIT ?"
)
_RUNS_OF_SESSION = (
    RUN_COLUMNS + " FROM runs WHERE session_id = ? ORDER BY cre"
    "ated_at DESC LIMIT ?"
)
_RUNS_OF_PARENT = (
    RUN_COLUMNS + " FROM runs WHERE parent_run_id = ? ORDER BY created_at, run_id"
)


def _step_record(r: tuple[Any, ...]) -> StepRecord:
    usage_keys = ("prompt_tokens", "completion_tokens", "total_tokens", "cache_read_tokens",
                  "cache_write_tokens", "reasoning_tokens", "server_tool_requests")
    return StepRecord(
        step_index=r[0], created_at=r[1], text=r[2],
        tool_calls=tuple(ToolCall.from_json(c) for c in loads(r[3])), provider=r[4],
        model_served=r[5], usage=Usage(**dict(zip(usage_keys, r[6:13], strict=True))),
        latency_ms=r[13], ttft_ms=r[14],
    )
