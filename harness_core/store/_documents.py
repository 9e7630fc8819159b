"""Content-addressed run documents: a run's settings, policy and sandbox description and
its snapshots' file manifests, each kept once in `documents` by the SHA-256 of its JSON
and referenced from `runs`, `drives` and `snapshots` (#40).

Every run of a project carries the same policy and sandbox (about 9 KB of JSON) in
`runs` and again in `drives` for every drive; a document identical to one already stored
is now written once, and so is a snapshot manifest another snapshot already recorded
(a step that changed no file; a run started at the commit another run started at). A reference is ``sha256:`` and 64 hex digits, which no JSON text
is, so a row written before migration `0018_run_documents` (JSON in place) and one
written after read alike: `resolved` gives the SQL that reads either. The hash is taken
of the text as stored (after redaction), so it says nothing about a secret that was
removed. Nothing here decides what a document means.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from typing import Any

from harness_core.store._codec import dumps

__all__ = ["DOCUMENT_SCHEMA_SQL", "PREFIX", "address_rows", "document_ref", "resolved"]

PREFIX = "sha256:"
"""How a reference starts (never the start of JSON text)."""

DOCUMENT_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS documents (
    hash TEXT PRIMARY KEY,
    body TEXT NOT NULL
)
"""
"""One row per distinct settings, policy or sandbox document, keyed by its reference."""

_ADDRESSED: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("runs", ("run_id",), ("settings", "policy", "sandbox")),
    ("drives", ("run_id", "seq"), ("policy", "sandbox")),
    ("snapshots", ("run_id", "seq"), ("manifest",)),
)
"""(table, key columns, document columns) that hold references."""

_BATCH = 500


def resolved(column: str) -> str:
    """SQL giving `column`'s document text, whether it holds a reference or JSON."""
    # A column name of this package's own statements, never a value.
    return (f"COALESCE((SELECT d.body FROM documents d WHERE d.hash = {column}),"  # noqa: S608
            f" {column})")


def document_ref(conn: Any, value: Any, redact: Callable[[str], str] | None) -> str | None:
    """Store `value`'s JSON once (inside the caller's transaction); its reference.

    Args:
        conn: The open write transaction's connection.
        value: The document (None: no document, no row).
        redact: The store's redactor, applied before hashing, so the hash is of what
            is stored.
    """
    if value is None:
        return None
    body = dumps(value)
    if redact is not None:
        body = redact(body)
    ref = PREFIX + hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
    conn.execute("INSERT OR IGNORE INTO documents(hash, body) VALUES (?, ?)", (ref, body))
    return ref


def address_rows(conn: sqlite3.Connection) -> None:
    """Migration `0018_run_documents`'s data step: move every JSON document still held
    in place in `runs` and `drives` into `documents`, leaving references (on SQLite and
    PostgreSQL alike, inside the migration's transaction). Pages of `_BATCH` rows in key
    order, so memory holds one page whatever the store's size."""
    for table, keys, columns in _ADDRESSED:
        after = " OR ".join(
            "(" + " AND ".join([*(f"{k} = ?" for k in keys[:i]), f"{keys[i]} > ?"]) + ")"
            for i in range(len(keys)))
        # Catalogue names from `_ADDRESSED` only; every value is a parameter.
        first = (f"SELECT {', '.join(keys + columns)} FROM {table}"  # noqa: S608
                 f" ORDER BY {', '.join(keys)} LIMIT {_BATCH}")
        page = (f"SELECT {', '.join(keys + columns)} FROM {table}"  # noqa: S608
                f" WHERE {after} ORDER BY {', '.join(keys)} LIMIT {_BATCH}")
        update = (f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in columns)}"  # noqa: S608
                  f" WHERE {' AND '.join(f'{k} = ?' for k in keys)}")
        rows = conn.execute(first).fetchall()
        while rows:
            for row in rows:
                texts = row[len(keys):]
                refs = [_address_text(conn, text) for text in texts]
                if refs != list(texts):
                    conn.execute(update, (*refs, *row[:len(keys)]))
            last = rows[-1][:len(keys)]
            params = [v for i in range(len(keys)) for v in (*last[:i], last[i])]
            rows = conn.execute(page, params).fetchall()


def _address_text(conn: Any, text: str | None) -> str | None:
    if text is None or text.startswith(PREFIX):
        return text
    ref = PREFIX + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    conn.execute("INSERT OR IGNORE INTO documents(hash, body) VALUES (?, ?)", (ref, text))
    return ref
