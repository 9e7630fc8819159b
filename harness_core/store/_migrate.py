"""Copy a SQLite store into a PostgreSQL one, whole and in one transaction.

`io store migrate --to postgresql://…` calls `copy_store`. Every table the source
holds is copied row by row with its SQLite `rowid` (the store's insertion order), in a
single transaction on the target: a failure leaves the target as it was. Run documents
(migration 0018) are copied by their hash: one the target already holds is kept once,
as the target's own runs keep it. A target that already holds one of the source's runs
is refused, so running the copy twice cannot duplicate anything. After the copy, each table's rows are counted on both sides.
"""

from __future__ import annotations

from typing import Any

from harness_core._record import record
from harness_core.errors import StateError
from harness_core.store._store import Store

__all__ = ["CopyReport", "copy_store"]

_SKIP = ("meta", "migrations")
_BATCH = 500


@record
class CopyReport:
    """What `copy_store` copied.

    Attributes:
        rows: Rows copied per table, in copy order.
        runs: How many runs the target holds now.
    """

    rows: dict[str, int]
    runs: int


def copy_store(source: Store, target: Store) -> CopyReport:
    """Copy every row of a SQLite `source` into a PostgreSQL `target`.

    Raises:
        StateError: The source is not SQLite, the target not PostgreSQL, the target
            already holds one of the source's runs, or a copy failed (nothing written).
    """
    if source.backend != "sqlite" or target.backend != "postgresql":
        raise StateError("io store migrate copies a SQLite store into a PostgreSQL one")
    tables = _tables(source)
    clash = _clashing_runs(source, target)
    if clash:
        raise StateError(
            f"the target store already holds run {clash[0]} (and {len(clash) - 1} more)",
            hint="migrate into an empty database or schema",
        )
    rows: dict[str, int] = {}
    with target._tx() as conn:
        for table, columns in tables:
            rows[table] = _copy_table(source, conn, table, columns)
        for table, _ in tables:
            _reset_identities(conn, table)
    for table, _ in tables:
        copied = target._query(f"SELECT COUNT(*) FROM {table}")[0][0]  # noqa: S608 (catalogue name)
        if int(copied) < rows[table]:
            raise StateError(f"copy of table {table} is short: {copied} of {rows[table]} rows")
    return CopyReport(rows, int(target._query("SELECT COUNT(*) FROM runs")[0][0]))


def _tables(source: Store) -> list[tuple[str, list[str]]]:
    names = [str(r[0]) for r in source._query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " ORDER BY rowid")]
    out: list[tuple[str, list[str]]] = []
    for name in names:
        if name in _SKIP:
            continue
        columns = [str(r[1]) for r in source._query(f"PRAGMA table_info({name})")]
        out.append((name, columns))
    return out


def _clashing_runs(source: Store, target: Store) -> list[str]:
    ids = [str(r[0]) for r in source._query("SELECT run_id FROM runs")]
    clash: list[str] = []
    for start in range(0, len(ids), _BATCH):
        chunk = ids[start:start + _BATCH]
        marks = ",".join("?" * len(chunk))
        clash += [str(r[0]) for r in target._query(
            f"SELECT run_id FROM runs WHERE run_id IN ({marks})", chunk)]  # noqa: S608
    return clash


def _copy_table(source: Store, conn: Any, table: str, columns: list[str]) -> int:
    names = ", ".join(["rowid", *columns])
    select = f"SELECT {names} FROM {table} ORDER BY rowid"  # noqa: S608 (catalogue names)
    insert = (f"INSERT INTO {table}({names}) OVERRIDING SYSTEM VALUE"  # noqa: S608
              f" VALUES ({', '.join('?' * (len(columns) + 1))})")
    if table == "documents":
        # Content-addressed: a document the target already holds is the same document.
        select = "SELECT hash, body FROM documents ORDER BY rowid"
        insert = "INSERT OR IGNORE INTO documents(hash, body) VALUES (?, ?)"
    rows = source._query(select)
    for start in range(0, len(rows), _BATCH):
        conn.executemany(insert, rows[start:start + _BATCH])
    return len(rows)


def _reset_identities(conn: Any, table: str) -> None:
    for (column,) in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(?)"
            " AND attidentity <> '' AND NOT attisdropped", (table,)).fetchall():
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence(?, ?),"  # noqa: S608
            f" GREATEST((SELECT COALESCE(MAX({column}), 0) FROM {table}), 1))",
            (table, column))
