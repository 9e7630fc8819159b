"""Process-handle queries: one row per handle and what each poll read.

`HandleQueries` is a mixin of `Store`: it uses the store's connection (`self._conn`)
and its write transaction (`self._tx()`), and it never decides anything about a
process. In particular nothing here signals or inspects a pid: a recorded pid is a
fact about the past, not an identity (see `mark_orphaned_handles`). The tables are
additive; they do not change `CHECKPOINT_FORMAT`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from harness_core._record import record
from harness_core.errors import StateError
from harness_core.store._parts import StoreParts

__all__ = ["END_REASONS", "HANDLE_SCHEMA_SQL", "HandleOutputRecord", "HandleQueries", "HandleRecord"]

END_REASONS: tuple[str, ...] = ("exited", "killed", "swept", "orphaned")
"""How a handle can end: on its own, by `shell_kill`, by the run-end sweep, or left
behind by a process that died (never signalled afterwards)."""

HANDLE_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS process_handles (
    run_id TEXT NOT NULL,
    handle_id TEXT NOT NULL,
    line TEXT NOT NULL,
    pids TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    end_reason TEXT CHECK (end_reason IS NULL OR end_reason IN
        ('exited', 'killed', 'swept', 'orphaned')),
    exit_status INTEGER,
    owner_pid INTEGER NOT NULL,
    PRIMARY KEY (run_id, handle_id)
);
CREATE TABLE IF NOT EXISTS handle_output (
    run_id TEXT NOT NULL,
    handle_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    cursor INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (run_id, handle_id, seq)
);
"""
"""The two handle tables. Statements are separated by ``;`` and contain none inside."""


@record
class HandleRecord:
    """One row of `process_handles`, with how far polls have read.

    Attributes:
        run_id: The run that started it.
        handle_id: Its id within the run (``h1``, ``h2`` …).
        line: The command line as the model gave it.
        pids: The pids recorded at start (informational: never signalled after the
            starting process is gone).
        started_at: ISO timestamp.
        ended_at: ISO timestamp, or None while the starting process says it is live.
        end_reason: ``exited``, ``killed``, ``swept``, ``orphaned`` or None.
        exit_status: The line's exit status when it exited on its own.
        owner_pid: The pid of the `io` process that started it.
        cursor: Bytes of its output that polls have read (0 before the first poll).
    """

    run_id: str
    handle_id: str
    line: str
    pids: tuple[int, ...]
    started_at: str
    ended_at: str | None
    end_reason: str | None
    exit_status: int | None
    owner_pid: int
    cursor: int


@record
class HandleOutputRecord:
    """One row of `handle_output`: what one poll read.

    Attributes:
        seq: 1-based order of the poll within the handle.
        cursor: The byte cursor after this read.
        text: The text the poll returned.
    """

    seq: int
    cursor: int
    text: str


_SELECT = (
    "SELECT h.run_id, h.handle_id, h.line, h.pids, h.started_at, h.ended_at, h.end_reason,"
    " h.exit_status, h.owner_pid,"
    " COALESCE((SELECT MAX(o.cursor) FROM handle_output o"
    " WHERE o.run_id = h.run_id AND o.handle_id = h.handle_id), 0)"
    " FROM process_handles h"
)


def _record(row: Sequence[Any]) -> HandleRecord:
    pids = json.loads(row[3])
    return HandleRecord(
        run_id=str(row[0]),
        handle_id=str(row[1]),
        line=str(row[2]),
        pids=tuple(int(p) for p in pids) if isinstance(pids, list) else (),
        started_at=str(row[4]),
        ended_at=None if row[5] is None else str(row[5]),
        end_reason=None if row[6] is None else str(row[6]),
        exit_status=None if row[7] is None else int(row[7]),
        owner_pid=int(row[8]),
        cursor=int(row[9]),
    )


class HandleQueries(StoreParts):
    """Mixin of `Store`: the `process_handles` and `handle_output` tables.

    Implements the `harness_core.shell.HandleStore` protocol.
    """

    _conn: sqlite3.Connection


    def _handle_rows(self, sql: str, params: Sequence[Any]) -> Iterator[Sequence[Any]]:
        try:
            rows = self._conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"store failed while reading process handles: {exc}") from exc
        return iter(rows)

    def record_handle_start(
        self,
        run_id: str,
        handle_id: str,
        line: str,
        pids: Sequence[int],
        started_at: str,
        owner_pid: int,
    ) -> None:
        """Record a handle that has just started.

        Raises:
            StateError: The store failed, or the handle id is already recorded.
        """
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO process_handles(run_id, handle_id, line, pids, started_at,"
                " owner_pid) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, handle_id, line, json.dumps(list(pids)), started_at, owner_pid),
            )

    def record_handle_output(self, run_id: str, handle_id: str, cursor: int, text: str) -> int:
        """Append what one poll read; returns its sequence number.

        Args:
            cursor: The byte cursor after the read.
            text: The text the poll returned.
        """
        with self._tx() as conn:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM handle_output"
                " WHERE run_id = ? AND handle_id = ?",
                (run_id, handle_id),
            ).fetchone()
            seq = int(row[0])
            conn.execute(
                "INSERT INTO handle_output(run_id, handle_id, seq, cursor, text)"
                " VALUES (?, ?, ?, ?, ?)",
                (run_id, handle_id, seq, cursor, text),
            )
        return seq

    def record_handle_end(
        self,
        run_id: str,
        handle_id: str,
        end_reason: str,
        exit_status: int | None,
        ended_at: str,
    ) -> None:
        """Record how a handle ended. The first recorded end wins; later calls do nothing.

        Raises:
            StateError: `end_reason` is not one of `END_REASONS`, or the store failed.
        """
        if end_reason not in END_REASONS:
            raise StateError(f"unknown handle end reason {end_reason!r}")
        with self._tx() as conn:
            conn.execute(
                "UPDATE process_handles SET ended_at = ?, end_reason = ?, exit_status = ?"
                " WHERE run_id = ? AND handle_id = ? AND ended_at IS NULL",
                (ended_at, end_reason, exit_status, run_id, handle_id),
            )

    def live_handles(self, run_id: str) -> list[HandleRecord]:
        """Handles of `run_id` with no recorded end, oldest first."""
        rows = self._handle_rows(
            _SELECT + " WHERE h.run_id = ? AND h.ended_at IS NULL ORDER BY h.started_at, h.rowid",
            (run_id,),
        )
        return [_record(r) for r in rows]

    def handles(self, run_id: str) -> list[HandleRecord]:
        """Every handle `run_id` started, oldest first."""
        rows = self._handle_rows(
            _SELECT + " WHERE h.run_id = ? ORDER BY h.started_at, h.rowid", (run_id,)
        )
        return [_record(r) for r in rows]

    def handle_record(self, run_id: str, handle_id: str) -> HandleRecord | None:
        """The record of one handle, or None when the run never started it."""
        rows = list(
            self._handle_rows(_SELECT + " WHERE h.run_id = ? AND h.handle_id = ?", (run_id, handle_id))
        )
        return _record(rows[0]) if rows else None

    def handle_output(self, run_id: str, handle_id: str) -> list[HandleOutputRecord]:
        """What each poll of one handle read, in order."""
        rows = self._handle_rows(
            "SELECT seq, cursor, text FROM handle_output WHERE run_id = ? AND handle_id = ?"
            " ORDER BY seq",
            (run_id, handle_id),
        )
        return [HandleOutputRecord(int(r[0]), int(r[1]), str(r[2])) for r in rows]

    def mark_orphaned_handles(self, run_id: str, at: str | None = None) -> int:
        """Mark every handle of `run_id` without a recorded end as orphaned.

        Called when a run is taken up by a new process: whatever an earlier process left
        running is never signalled, polled or re-attached, because its recorded pid may
        by now belong to something unrelated.

        Args:
            run_id: The run.
            at: The ISO timestamp to record; the database's clock when None.

        Returns:
            How many handles were marked.
        """
        with self._tx() as conn:
            cursor = conn.execute(
                "UPDATE process_handles SET end_reason = 'orphaned',"
                " ended_at = COALESCE(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"
                " WHERE run_id = ? AND ended_at IS NULL",
                (at, run_id),
            )
            return int(cursor.rowcount)
