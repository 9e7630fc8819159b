"""The PostgreSQL backend of `Store`: a connection that speaks the store's SQL.

`Store` is written against one dialect (SQLite's, with `?` placeholders). This module
gives it a connection object with the same small surface the store uses (`execute`,
`executemany`, cursors with `fetchone`/`fetchall`/iteration, `close`) over psycopg 3,
and translates each statement once (cached):

- placeholders `?` become `%s` (a literal `%` is doubled first);
- `INSERT OR IGNORE` becomes `... ON CONFLICT DO NOTHING`, `INSERT OR REPLACE` an upsert
  on the table's primary key (read from the catalogue once per table);
- DDL types: `INTEGER` → `BIGINT`, `REAL` → `DOUBLE PRECISION`, an autoincrement key →
  an identity column; every table gets a `rowid` identity column, so the store's
  "in insertion order" (`ORDER BY rowid`) means the same on both backends;
- SQLite's `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')` becomes the same text from `now()`.

Write transactions are serialised store-wide by a transaction-scoped advisory lock, the
equivalent of SQLite's `BEGIN IMMEDIATE`: the store's read-then-write statements rely
on it. Run and session ownership use session-scoped advisory locks (`try_lock`): the
server drops them when the owner's connection dies, so a runner killed with `kill -9` on
any machine frees its runs at once, with no pid to compare across hosts.

psycopg errors are mapped at this boundary into `sqlite3.DatabaseError` subclasses,
so the store's one translation to `StateError` serves both backends; they never escape
`store/`. Text columns cannot hold NUL in PostgreSQL: a NUL in stored text becomes
U+2400 (␀), and a lone surrogate is written as its backslash escape (documented in
docs/guide/fleet.md). psycopg is imported only when a `postgresql://` store is opened.
"""

from __future__ import annotations

import re
import sqlite3
import zlib
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any

from harness_core.errors import ConfigError, StateError

__all__ = ["PgConnection", "PgError", "is_postgres_url", "redact_url"]

_STORE_LOCK = 0x10C5_70E0  # the advisory key that serialises a `public` store's writes
_DEAD_OWNER_GRACE_MS = 2000  # how long a held run lock is waited for before "in use"


class PgError(sqlite3.DatabaseError):
    """A PostgreSQL failure, in the store's own error vocabulary."""


def is_postgres_url(location: object) -> bool:
    """Whether a store location names a PostgreSQL database."""
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def redact_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (for messages and `io config show`)."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def advisory_key(kind: str, name: str, schema: str = "public") -> int:
    """A stable signed 64-bit advisory-lock key for (kind, name) in the store `schema`.

    Advisory locks are shared by the whole database, so two stores in two schemas of one
    database (a fleet's teams, each test of the suite) would take each other's run
    locks for equal run ids: the schema is part of the key. A store in ``public`` keeps
    the key earlier versions used, so drivers of both versions still see each other.
    """
    high = zlib.crc32(kind.encode())
    scoped = name if schema == "public" else f"{schema}\0{name}"
    low = zlib.crc32(scoped.encode("utf-8", "backslashreplace"))
    value = (high << 32) | low
    return value - (1 << 64) if value >= 1 << 63 else value


def store_lock_sql(schema: str) -> str:
    """The statement that takes `schema`'s store-wide writer lock (see the module doc)."""
    key = _STORE_LOCK if schema == "public" else advisory_key("store", "", schema)
    return f"SELECT pg_advisory_xact_lock({key})"


class _Cursor:
    """The part of a DB-API cursor the store reads (a statement sent at once)."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self.fetchall()
        return rows[0] if rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        if self._cursor.description is None:
            return []  # a statement without rows (INSERT, UPDATE)
        try:
            return [tuple(r) for r in self._cursor.fetchall()]
        except Exception as exc:  # psycopg.Error, mapped at the boundary
            raise _mapped(exc) from exc

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    def close(self) -> None:
        self._cursor.close()


class _Queued(_Cursor):
    """A statement queued in a write transaction: reading its answer sends the queue."""

    def __init__(self, owner: PgConnection) -> None:
        self._owner = owner
        self._answer: tuple[list[tuple[Any, ...]], int] | None = None

    @classmethod
    def empty(cls, owner: PgConnection) -> _Queued:
        queued = cls(owner)
        queued.settle([], 0)
        return queued

    def settle(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self._answer = (rows, rowcount)

    def _read(self) -> tuple[list[tuple[Any, ...]], int]:
        if self._answer is None:
            self._owner.flush()
        if self._answer is None:  # the queue failed before this statement's answer
            raise PgError("the transaction failed before this statement ran")
        return self._answer

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._read()[0])

    @property
    def rowcount(self) -> int:
        return self._read()[1]

    def close(self) -> None:
        return None


def _mapped(exc: Exception) -> sqlite3.DatabaseError:
    import psycopg

    if isinstance(exc, psycopg.errors.LockNotAvailable | psycopg.errors.DeadlockDetected):
        return PgError(f"database is locked: {exc}")
    if isinstance(exc, psycopg.Error):
        return PgError(str(exc).strip() or type(exc).__name__)
    raise exc


class PgConnection:
    """A psycopg 3 connection with the surface `Store` uses.

    Args:
        url: ``postgresql://user:password@host:port/dbname[?options]``.

    Raises:
        ConfigError: psycopg is not installed (names the extra).
        StateError: The server cannot be reached or refuses the login.
    """

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise ConfigError(
                "a postgresql:// store needs psycopg",
                hint="pip install 'io-harness[postgres]'",
            ) from exc
        self.url = url
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StateError(
                f"cannot connect to the store {redact_url(url)}: {str(exc).strip()}",
                hint="check [store] url (or IO_STORE), that the server runs, and the login",
            ) from exc
        _register_adapters(self._conn)
        # The same durability as the SQLite store (WAL, synchronous=NORMAL): a commit
        # survives the death of io (kill -9) at once; a crash of the database server or
        # its machine may lose the last moments of commits, never corrupt. Without it
        # every commit waits for a WAL flush: measured 48 ms a step here (bench/fleet.py).
        self._conn.execute("SET synchronous_commit = off")
        # The schema the store's tables live in: it scopes the advisory locks (locks are
        # the whole database's; a store is one schema of it).
        found = self._conn.execute("SELECT current_schema()").fetchone()
        self.schema = str(found[0]) if found and found[0] else "public"
        self._store_lock_sql = store_lock_sql(self.schema)
        self._keys: dict[str, tuple[str, ...]] = {}
        # A write transaction is queued, rendered client-side, and sent as one
        # multi-statement query when an answer is read or at COMMIT: one round trip
        # and one call into psycopg a transaction, where a statement each cost ~0.1 ms.
        self._client = psycopg.ClientCursor(self._conn)
        self._queue: list[str] = []
        self._waiting: list[_Queued] = []
        self._prepared: dict[str, str | None] = {}
        self.in_transaction = False
        self._listening: set[str] = set()
        self._notified: set[tuple[str, str]] = set()
        self._conn.add_notify_handler(
            lambda n: self._notified.add((n.channel, n.payload)))

    # ---- the sqlite3.Connection surface -------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Cursor:
        statement = sql.strip()
        word = statement.upper()
        if word.startswith("BEGIN"):
            return self._begin()
        if word in ("COMMIT", "ROLLBACK"):
            return self._end(word)
        text = self._translate(statement)
        if self.in_transaction:
            return self._enqueue(text, params)
        try:
            return _Cursor(self._conn.execute(text, tuple(params)))
        except Exception as exc:
            raise _mapped(exc) from exc

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        text = self._translate(sql.strip())
        if self.in_transaction:
            for row in rows:
                self._enqueue(text, row)
            return
        try:
            with self._conn.cursor() as cursor:
                cursor.executemany(text, [tuple(r) for r in rows])
        except Exception as exc:
            raise _mapped(exc) from exc

    def _enqueue(self, text: str, params: Sequence[Any] = ()) -> _Queued:
        try:
            name = self._prepared_name(text, params) if params else None
            if name is not None:  # the server has its plan: send only the values
                holes = ", ".join(["%s"] * len(params))
                rendered = self._client.mogrify(f"EXECUTE {name}({holes})", tuple(params))
            else:
                rendered = self._client.mogrify(text, tuple(params)) if params else text
        except Exception as exc:
            raise _mapped(exc) from exc
        queued = _Queued(self)
        self._queue.append(rendered)
        self._waiting.append(queued)
        return queued

    def _prepared_name(self, text: str, params: Sequence[Any]) -> str | None:
        """The server-side prepared statement for a queued write, made on first use.

        A write statement is parsed and planned once per connection (`PREPARE`, its
        parameter types inferred from the target columns), then queued as `EXECUTE`
        with its values: the server's work per statement falls by about half
        (bench/fleet.py). Reads, statements with byte values, and statements the
        server cannot prepare (a table the queued transaction itself creates) are
        sent whole.
        """
        if text in self._prepared:
            return self._prepared[text]
        head = text.lstrip()[:6].upper()
        writes = head in ("INSERT", "UPDATE", "DELETE") or (
            head.startswith("WITH") and "SELECT" not in text.upper())  # CTEs that only write
        if (not writes
                or any(isinstance(p, bytes | bytearray | memoryview) for p in params)):
            return None
        name = f"io_w{len(self._prepared)}"
        holes = iter(range(1, 1 + text.count("%s")))
        body = re.sub(r"%%|%s", lambda m: "%" if m.group() == "%%" else f"${next(holes)}",
                      text)
        import psycopg

        in_server_tx = (self._conn.info.transaction_status
                        != psycopg.pq.TransactionStatus.IDLE)
        try:
            if in_server_tx:  # a failed PREPARE must not abort the open transaction
                self._conn.execute("SAVEPOINT io_prepare")
            self._conn.execute(f"PREPARE {name} AS {body}")
            if in_server_tx:
                self._conn.execute("RELEASE SAVEPOINT io_prepare")
        except psycopg.Error:
            if in_server_tx:
                self._conn.execute("ROLLBACK TO SAVEPOINT io_prepare")
                self._conn.execute("RELEASE SAVEPOINT io_prepare")
            self._prepared[text] = None
            return None
        self._prepared[text] = name
        return name

    def flush(self) -> None:
        """Send the queued statements as one query; each queued cursor gets its answer."""
        if not self._queue:
            return
        sql, waiting = ";\n".join(self._queue), self._waiting
        self._queue, self._waiting = [], []
        cursor = self._client
        try:
            cursor.execute(sql)
            for queued in waiting:
                rows = [tuple(r) for r in cursor.fetchall()] if cursor.description else []
                queued.settle(rows, int(cursor.rowcount))
                if not cursor.nextset():
                    break
        except Exception as exc:
            raise _mapped(exc) from exc

    def close(self) -> None:
        self._conn.close()

    # ---- notifications ---------------------------------------------------------------

    def listening(self, channel: str) -> bool:
        """Whether this connection listens on `channel` (see `listen`)."""
        return channel in self._listening

    def listen(self, channel: str) -> None:
        """LISTEN on `channel`: notifications arriving from now on are kept."""
        try:
            self._conn.execute(f'LISTEN "{channel}"')
        except Exception as exc:
            raise _mapped(exc) from exc
        self._listening.add(channel)

    def take_notified(self, channel: str, payload: str) -> bool:
        """Whether (channel, payload) was notified since the last take; reads what has
        arrived on the socket without waiting and without a round trip."""
        pgconn = self._conn.pgconn
        try:
            pgconn.consume_input()
            while (notice := pgconn.notifies()) is not None:
                if pgconn.notify_handler is not None:
                    pgconn.notify_handler(notice)
        except Exception as exc:
            raise _mapped(exc) from exc
        if (channel, payload) in self._notified:
            self._notified.discard((channel, payload))
            return True
        return False

    # ---- ownership ------------------------------------------------------------------

    def try_lock(self, kind: str, name: str) -> bool:
        """Take the session-scoped advisory lock for (kind, name); False when held elsewhere.

        Re-entrant for this connection; the server drops it when the connection dies.
        When another connection holds it, waits up to `_DEAD_OWNER_GRACE_MS`: a driver
        killed a moment ago has a closed socket but a server process still exiting.
        """
        key = advisory_key(kind, name, self.schema)
        row = self.execute("SELECT pg_try_advisory_lock(?)", (key,)).fetchone()
        if row and row[0]:
            return True
        self.flush()  # the wait below talks to the server directly
        if self.in_transaction:
            return self._poll_lock(key)
        return self._wait_lock(key)

    def _poll_lock(self, key: int) -> bool:
        """Inside a write transaction (holding the store-wide lock): ask again until the
        grace ends instead of queueing on the lock. The live owner of a run may itself be
        queued on the store-wide lock this transaction holds; a blocking wait here was a
        lock-order cycle the server broke by failing one of the two transactions."""
        import time

        import psycopg

        deadline = time.monotonic() + _DEAD_OWNER_GRACE_MS / 1000
        while time.monotonic() < deadline:
            time.sleep(0.02)
            try:
                row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            except psycopg.Error as exc:
                raise _mapped(exc) from exc
            if row and row[0]:
                return True
        return False

    def _wait_lock(self, key: int) -> bool:
        """Outside a transaction: queue on the lock for up to the grace period."""
        import psycopg

        try:
            self._conn.execute("BEGIN")
            self._conn.execute("SELECT set_config('lock_timeout', %s, true)",
                               (f"{_DEAD_OWNER_GRACE_MS}ms",))
            self._conn.execute("SELECT pg_advisory_lock(%s)", (key,)).fetchall()  # syncs
            got = True
        except psycopg.errors.LockNotAvailable:
            got = False
        except psycopg.Error as exc:
            raise _mapped(exc) from exc
        finally:
            try:
                self._conn.execute("COMMIT")
            except Exception as exc:
                raise _mapped(exc) from exc
        return got

    def unlock(self, kind: str, name: str) -> None:
        """Give back one hold of the advisory lock for (kind, name) (no-op when not held)."""
        self.execute("SELECT pg_advisory_unlock(?)", (advisory_key(kind, name, self.schema),))

    def is_locked_elsewhere(self, kind: str, name: str) -> bool:
        """Whether another connection (a live driver somewhere) holds (kind, name)."""
        if not self.try_lock(kind, name):
            return True
        self.unlock(kind, name)
        return False

    # ---- translation ------------------------------------------------------------------

    def _begin(self) -> _Cursor:
        """BEGIN and the store-wide writer lock, queued with the transaction's statements
        (see `flush`): a step's transactions cost a round trip each (bench/fleet.py)."""
        self.in_transaction = True
        self._queue, self._waiting = [], []
        self._enqueue("BEGIN")
        return self._enqueue(self._store_lock_sql)

    def _end(self, word: str) -> _Cursor:
        self.in_transaction = False
        if word == "ROLLBACK":
            self._queue, self._waiting = [], []
            self._recover()
            return _Queued.empty(self)
        self._queue.append("COMMIT")
        self._waiting.append(_Queued(self))
        try:
            self.flush()
        except Exception:
            self._recover()
            raise
        return _Queued.empty(self)

    def _recover(self) -> None:
        """After a failure or a ROLLBACK: leave no transaction open on the connection."""
        import psycopg

        try:
            if self._conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                self._conn.execute("ROLLBACK")
        except psycopg.Error:
            return

    def _translate(self, sql: str) -> str:
        text = translate(sql)
        match = _REPLACE.match(text)
        if match is None:
            return text
        table = match.group(1)
        keys = self._primary_key(table)
        columns = [c.strip() for c in match.group(2).split(",")]
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in keys)
        action = f"DO UPDATE SET {updates}" if updates else "DO NOTHING"
        return (f"INSERT INTO {table}({match.group(2)}) {match.group(3)}"
                f" ON CONFLICT ({', '.join(keys)}) {action}")

    def _primary_key(self, table: str) -> tuple[str, ...]:
        if table not in self._keys:
            rows = self._conn.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a"
                " ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
                " WHERE i.indrelid = to_regclass(%s) AND i.indisprimary ORDER BY a.attnum",
                (table,),
            ).fetchall()
            self._keys[table] = tuple(str(r[0]) for r in rows)
        return self._keys[table]


_REPLACE = re.compile(r"INSERT OR REPLACE INTO (\w+)\s*\(([^)]*)\)\s*(VALUES\s*\(.*\))\s*$", re.S | re.I)
_NOW_TEXT = ("to_char(clock_timestamp() AT TIME ZONE 'UTC',"
             " 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")


@lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """One statement of the store's SQLite dialect in PostgreSQL's (pure, cached)."""
    text = sql
    if re.match(r"\s*(CREATE|ALTER)\s", text, re.I):
        return _translate_ddl(text)
    text = text.replace("strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", "\x00NOW\x00")
    text = text.replace("%", "%%").replace("?", "%s").replace("\x00NOW\x00", _NOW_TEXT)
    if text.lstrip().upper().startswith("INSERT OR IGNORE"):
        text = re.sub(r"INSERT OR IGNORE", "INSERT", text, count=1, flags=re.I)
        text += " ON CONFLICT DO NOTHING"
    return text


def _translate_ddl(sql: str) -> str:
    text = re.sub(r"INTEGER PRIMARY KEY AUTOINCREMENT",
                  "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", sql, flags=re.I)
    text = re.sub(r"\bINTEGER\b", "BIGINT", text)
    text = re.sub(r"\bREAL\b", "DOUBLE PRECISION", text)
    return re.sub(r"(CREATE TABLE IF NOT EXISTS \w+\s*\()",
                  r"\1 rowid BIGINT GENERATED ALWAYS AS IDENTITY,", text, flags=re.I)


def _register_adapters(conn: Any) -> None:
    """SQLite's loose typing, kept: bools are stored as 0/1, sums come back as numbers."""
    from decimal import Decimal  # here, not at import: a SQLite store never loads it

    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg.types import TypeInfo  # noqa: F401  (imported for its side effect: types loaded)

    class BoolAsInt(Dumper):
        oid = conn.adapters.types["int8"].oid
        format = Format.TEXT

        def dump(self, obj: Any) -> bytes:
            return b"1" if obj else b"0"

    class SafeText(Dumper):
        format = Format.TEXT

        def dump(self, obj: Any) -> bytes:
            return str(obj).replace("\x00", "\u2400").encode("utf-8", "backslashreplace")

    class NumberLoader(Loader):
        def load(self, data: Any) -> Any:
            value = Decimal(bytes(data).decode())
            return int(value) if value == value.to_integral_value() else float(value)

    conn.adapters.register_dumper(bool, BoolAsInt)
    conn.adapters.register_dumper(str, SafeText)
    conn.adapters.register_loader("numeric", NumberLoader)
