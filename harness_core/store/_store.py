"""`Store`: opening, checking, migrating and closing the store; the queries live in
mixins by concern (`_runs`, `_steps`, `_checkpoints`, `_oversight`, `_handles`,
`_sessions`, `_todos`, `_questions`, `_spend`, `_sweeps`, `_tree`, `_compactions`,
`_snapshots`, `_hooks`), over one SQLite file in
WAL mode (or PostgreSQL).

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
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness_core._held_files import File, Opening, opening, release
from harness_core.errors import (
    CheckpointFormatError,
    StateError,
    StoreDamaged,
    StoreUnavailable,
)
from harness_core.store._batches import BATCH_SCHEMA_SQL, BatchQueries
from harness_core.store._check import (
    StoreReport,
    inspect_file,
    readonly_uri,
    verify_log_owner,
    verify_schema,
)
from harness_core.store._check import check_store as _check_store
from harness_core.store._checkpoints import CheckpointQueries
from harness_core.store._clean import OpenMarker, needs_check, settle_unclean
from harness_core.store._compactions import COMPACTION_SCHEMA_SQL, CompactionQueries
from harness_core.store._documents import DOCUMENT_SCHEMA_SQL, address_rows
from harness_core.store._handles import HANDLE_SCHEMA_SQL, HandleQueries
from harness_core.store._hooks import HOOK_SCHEMA_SQL, HookQueries
from harness_core.store._locks import wait_for_flock
from harness_core.store._operator import OPERATOR_SCHEMA_SQL, OperatorQueries
from harness_core.store._oversight import OversightQueries
from harness_core.store._parts import AliveCheck
from harness_core.store._parts import now as _now
from harness_core.store._postgres import is_postgres_url
from harness_core.store._questions import QUESTION_SCHEMA_SQL, QuestionQueries
from harness_core.store._runs import RunQueries
from harness_core.store._schema import (
    CHECKPOINT_FORMAT,
    MIGRATIONS,
    REPORT_INDEXES_SQL,
    RESUME_STATE_SQL,
    RUNNER_HOST_SQL,
    USAGE_ESTIMATED_SQL,
    VERIFICATION_REPORT_SQL,
)
from harness_core.store._sessions import SESSION_SCHEMA_SQL, SessionQueries
from harness_core.store._snapshots import SNAPSHOT_SCHEMA_SQL, SnapshotQueries
from harness_core.store._spend import SpendQueries
from harness_core.store._steps import StepQueries
from harness_core.store._sweeps import SWEEP_SCHEMA_SQL, SweepQueries
from harness_core.store._todos import PLAN_SCHEMA_SQL, PlanQueries
from harness_core.store._tree import (
    TREE_SCHEMA_SQL,
    TreeQueries,
)

__all__ = ["KNOWN_MIGRATIONS", "AliveCheck", "Store", "check_store"]


_BUSY_TIMEOUT_MS = 5000
_MIGRATIONS: tuple[tuple[str, str], ...] = (
    *MIGRATIONS, ("0002_handles", HANDLE_SCHEMA_SQL), ("0003_sessions", SESSION_SCHEMA_SQL),
    ("0004_todos", PLAN_SCHEMA_SQL), ("0005_questions", QUESTION_SCHEMA_SQL),
    ("0006_verification_report", VERIFICATION_REPORT_SQL),
    ("0007_store_id", ""),  # the row itself is written by `_migrate`, on every backend
    ("0008_agent_trees", TREE_SCHEMA_SQL),
    ("0009_runner_host", RUNNER_HOST_SQL),
    ("0010_sweeps", SWEEP_SCHEMA_SQL),
    ("0011_batches", BATCH_SCHEMA_SQL),
    ("0012_resume_state", RESUME_STATE_SQL),
    ("0013_operator_inputs", OPERATOR_SCHEMA_SQL),
    ("0014_compactions", COMPACTION_SCHEMA_SQL),
    ("0015_snapshots", SNAPSHOT_SCHEMA_SQL),
    ("0016_hooks", HOOK_SCHEMA_SQL),
    ("0017_report_indexes", REPORT_INDEXES_SQL),
    ("0018_run_documents", DOCUMENT_SCHEMA_SQL),  # and `address_rows`, by `_migrate`
    ("0019_usage_estimated", USAGE_ESTIMATED_SQL),
)
KNOWN_MIGRATIONS = frozenset(name for name, _ in _MIGRATIONS)
"""Every migration this version applies; a store recording another was written by a
newer io and is refused."""




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


def _remaining(deadline: float) -> float:
    """Seconds left of an open's busy budget (at least 10 ms: SQLite reads 0 as none)."""
    return max(deadline - time.monotonic(), 0.01)


def _is_read_only(path: Path) -> bool:
    # WAL needs the directory writable too (for the -wal and -shm files beside the store).
    return path.exists() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _disk_is_full(path: Path) -> bool:
    # SQLite reports a full disk met while sizing its shared-memory file as an I/O error.
    try:
        return shutil.disk_usage(path.parent).free == 0
    except OSError:
        return False


class _Redacting:
    """A connection whose `execute`/`executemany` redact every text parameter."""

    def __init__(self, conn: sqlite3.Connection, redact: Callable[[str], str]) -> None:
        self._conn = conn
        self._redact = redact

    def _clean(self, params: Sequence[Any] | Mapping[str, Any]) -> Any:
        redact = self._redact
        if isinstance(params, Mapping):
            return {k: redact(v) if isinstance(v, str) else v for k, v in params.items()}
        return tuple(redact(v) if isinstance(v, str) else v for v in params)

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        return self._conn.execute(sql, self._clean(params))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        return self._conn.executemany(sql, [self._clean(row) for row in rows])

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class Store(RunQueries, StepQueries, CheckpointQueries, OversightQueries, OperatorQueries,
            HandleQueries,
            SpendQueries, SessionQueries, PlanQueries, QuestionQueries, BatchQueries,
            SweepQueries, CompactionQueries, SnapshotQueries, HookQueries,
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
        # One busy budget for the whole open: a store another process holds locked
        # fails within `_BUSY_TIMEOUT_MS`, not once per connection and statement.
        deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
        self._marker: OpenMarker | None = None
        self._file: File | None = None
        with opening(self.path) as this:  # see `harness_core._held_files`
            self._open_sqlite(this, deadline)

    def _open_sqlite(self, this: Opening, deadline: float) -> None:
        # A file this process already holds open was checked then; its checks would
        # open and close the file, dropping the live connection's locks (`_held_files`).
        exists = this.held or inspect_file(self.path) > 0
        if exists and not this.held:
            wait_for_flock(self.path, deadline)
            self._verify(deadline)
        elif not exists:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(
                    str(self.path), f"cannot create its directory: {exc.strerror or exc}"
                ) from exc
        self._marker = OpenMarker(self.path)  # before any write: a crash from here is seen
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=_remaining(deadline), isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            self._marker.close(clean=False)
            raise _translate(exc, "opening", self.path) from exc
        self._file = this.retain()
        try:
            self._conn.execute(f"PRAGMA busy_timeout={int(_remaining(deadline) * 1000)}")
            if not exists:
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
            self._conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        except sqlite3.Error as exc:
            self._abandon()
            raise _translate(exc, "opening", self.path) from exc
        except StateError:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """Close a connection whose open failed; the next open checks the file."""
        self._conn.close()
        release(self._file)
        self._file = None
        if self._marker is not None:
            self._marker.close(clean=False)

    def _open_postgres(self, url: str) -> None:
        from harness_core.store._postgres import PgConnection, redact_url

        self.backend = "postgresql"
        self.location = redact_url(url)
        self.path = Path("/nonexistent/io-postgresql-store")  # no file: nothing to protect
        self._marker = None
        self._file = None
        self._conn = PgConnection(url)  # type: ignore[assignment]
        try:
            self._migrate()
        except sqlite3.Error as exc:
            self._conn.close()
            raise _translate(exc, f"opening {self.location}") from exc
        except StateError:
            self._conn.close()
            raise

    def _verify(self, deadline: float) -> None:
        """The self-check of an existing file, through a connection that cannot write;
        ``quick_check`` only after an unclean close (`harness_core.store._clean`)."""
        quick = needs_check(self.path)
        try:
            conn = sqlite3.connect(readonly_uri(self.path), uri=True,
                                   timeout=_remaining(deadline))
        except sqlite3.Error as exc:
            raise _translate(exc, "checking", self.path) from exc
        try:
            verify_schema(conn, self.path, expected=CHECKPOINT_FORMAT, known=KNOWN_MIGRATIONS,
                          quick=quick)
            verify_log_owner(conn, self.path)
        except sqlite3.Error as exc:
            raise _translate(exc, "checking", self.path) from exc
        finally:
            conn.close()
        if quick:
            settle_unclean(self.path)

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
                if name == "0018_run_documents":
                    address_rows(self._conn)
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

    def redact_with(self, redact: Callable[[str], str] | None) -> None:
        """Run every text this store writes (and its `reopen` twins write) through
        `redact`: the one place secrets are kept out of the store (#22). None: as is."""
        self._redact = redact

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE), committed or rolled back whole.

        Every write goes through here; with a redactor (`redact_with`) the connection
        handed out redacts each text parameter before it reaches the database.
        """
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _translate(exc, "starting a transaction", self.path) from exc
        redact = getattr(self, "_redact", None)
        try:
            yield self._conn if redact is None else _Redacting(self._conn, redact)  # type: ignore[misc]
        except sqlite3.Error as exc:
            self._rollback()
            raise _translate(exc, "writing", self.path) from exc
        except BaseException:
            self._rollback()
            raise
        try:
            # Every commit rewrites the meta page (which holds `store_id`) into the log,
            # so a log copied beside another store is recognised as foreign on open. An
            # update in place: the row keeps its rowid and its key's index entry, so only
            # the table's page is written (a replace deleted and inserted the row, and
            # wrote the index's page too).
            if self.backend == "sqlite":
                self._conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('last_write', ?)"
                    " ON CONFLICT(key) DO UPDATE SET value = excluded.value", (_now(),))
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
        twin._redact = getattr(self, "_redact", None)
        twin.backend, twin.location, twin.path = self.backend, self.location, self.path
        twin._marker, twin._file = None, None
        if self.backend == "postgresql":
            from harness_core.store._postgres import PgConnection

            twin._conn = PgConnection(str(self._opened_with))  # type: ignore[assignment]
            return twin
        twin._marker = OpenMarker(self.path)
        try:
            with opening(self.path) as this:
                twin._conn = sqlite3.connect(str(self.path), timeout=_BUSY_TIMEOUT_MS / 1000,
                                             isolation_level=None, check_same_thread=False)
                twin._file = this.retain()
            twin._conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            twin._conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            release(twin._file)
            twin._marker.close(clean=False)
            raise _translate(exc, "opening", self.path) from exc
        return twin

    def close(self) -> None:
        """Close the connection (idempotent); the last io connection to close a SQLite
        store records its clean-close fingerprint."""
        try:
            self._conn.close()
        except sqlite3.Error as exc:
            if self._marker is not None:
                self._marker.close(clean=False)
            raise _translate(exc, "closing", self.path) from exc
        release(getattr(self, "_file", None))
        self._file = None
        if self._marker is not None:
            self._marker.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    def integrity_check(self) -> str:
        """`PRAGMA integrity_check`'s answer (``ok`` when sound)."""
        return str(self._query("PRAGMA integrity_check")[0][0])
