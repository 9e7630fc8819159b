"""Session queries: the `sessions` table, and the turns that are runs of a session.

`SessionQueries` is a mixin of `Store`: it uses the store's connection (`self._conn`)
and its write transaction (`self._tx()`). A turn has no table of its own: a turn *is*
the `runs` row whose `session_id` names the session, its parent is that row's
`parent_run_id`, and its number is its place in insertion order. So a turn cannot be
half-recorded, and nothing here ever edits or deletes one: the tree is append-only.

The one mutable thing is the driver lock (`driver_pid`, `driver_started`): which live
process is taking a turn now. This module never signals or inspects a process itself;
the caller passes the liveness check.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from harness_core._record import record
from harness_core.errors import AmbiguousId, SessionInUse, StateError, UsageError
from harness_core.messages import Message
from harness_core.store._codec import loads, message_from_json
from harness_core.store._parts import StoreParts
from harness_core.store._records import RunStatus

__all__ = ["SESSION_SCHEMA_SQL", "SessionQueries", "SessionRecord", "TurnRecord"]

SESSION_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    title TEXT NOT NULL,
    workspace TEXT NOT NULL,
    driver_pid INTEGER,
    driver_started REAL
);
CREATE INDEX IF NOT EXISTS sessions_created ON sessions(created_at)
"""
"""The sessions table. Statements are separated by ``;`` and contain none inside."""

_AliveCheck = Callable[[int, float | None], bool]


_SELECT_SESSIONS = (
    "SELECT s.session_id, s.created_at, s.title, s.workspace,"
    " (SELECT COUNT(*) FROM runs r WHERE r.session_id = s.session_id),"
    " (SELECT r.run_id FROM runs r WHERE r.session_id = s.session_id ORDER BY r.rowid DESC"
    " LIMIT 1),"
    " (SELECT MAX(r.updated_at) FROM runs r WHERE r.session_id = s.session_id),"
    " (SELECT r.status FROM runs r WHERE r.session_id = s.session_id ORDER BY r.rowid DESC"
    " LIMIT 1)"
    " FROM sessions s"
)
_SESSIONS_FILTERED = _SELECT_SESSIONS + " WHERE (? = 0 OR s.workspace = ?)"
"""Sessions of one workspace (when the flag is 1), newest first; the status filter is
applied to the rows read."""


_SELECT_TURN = (
    "SELECT rowid, run_id, parent_run_id, goal, status, reason, created_at, steps_used,"
    " tokens_used FROM runs"
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


@record
class SessionRecord:
    """One conversation.

    Attributes:
        session_id: Its id.
        created_at: ISO timestamp.
        title: A free-text label (may be empty).
        workspace: The workspace its turns run in by default.
        turns: How many turns it has.
        latest_run_id: The run of its newest turn, or None before the first.
        updated_at: When its newest turn was last touched (or its creation time).
        status: The status of its newest turn's run (None before the first turn).
    """

    session_id: str
    created_at: str
    title: str
    workspace: str
    turns: int
    latest_run_id: str | None
    updated_at: str
    status: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object."""
        return dict(vars(self))


@record
class TurnRecord:
    """One turn of a session: a run, and where it hangs in the tree.

    Attributes:
        number: 1-based, in the order turns were taken (stable: turns are never removed).
        run_id: The run that is this turn (resumable by this id like any run).
        parent_run_id: The run of the turn it continues, or None for a first turn.
        message: The operator's message that started the turn (the run's goal).
        status: Where the run stands.
        reason: One line saying why the run ended where it did.
        created_at: ISO timestamp.
        steps: Steps committed.
        tokens: Tokens drawn.
    """

    number: int
    run_id: str
    parent_run_id: str | None
    message: str
    status: RunStatus
    reason: str | None
    created_at: str
    steps: int
    tokens: int

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object (the status as its string value)."""
        out = dict(vars(self))
        out["status"] = self.status.value
        return out


class SessionQueries(StoreParts):
    """Mixin of `Store`: sessions, their turns, and the one-driver lock."""

    _conn: sqlite3.Connection


    def _session_read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn.execute(sql, params).fetchall())
        except sqlite3.Error as exc:
            raise StateError(f"store failed while reading sessions: {exc}") from exc

    def create_session(self, session_id: str, *, workspace: str, title: str = "") -> SessionRecord:
        """Record a new, empty session."""
        now = _now()
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO sessions(session_id, created_at, title, workspace) VALUES (?,?,?,?)",
                (session_id, now, title, workspace),
            )
        return SessionRecord(session_id, now, title, workspace, 0, None, now)

    def session(self, session_id: str) -> SessionRecord:
        """The session whose id is `session_id` or uniquely starts with it.

        Raises:
            UsageError: No such session (or the prefix is ambiguous).
        """
        if not session_id.strip():
            raise UsageError("a session id must not be empty",
                             hint="`io session list` lists recorded sessions")
        escaped = session_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._session_read(
            _SELECT_SESSIONS + " WHERE s.session_id = ? OR s.session_id LIKE ? ESCAPE '\\'"
            " ORDER BY s.session_id = ? DESC, s.created_at DESC LIMIT 11",
            (session_id, escaped + "%", session_id),
        )
        if not rows:
            raise UsageError(f"no session {session_id!r} in the store",
                             hint="`io session list --all` lists recorded sessions")
        if len(rows) > 1 and rows[0][0] != session_id:
            raise AmbiguousId("session", session_id, [str(r[0]) for r in rows])
        return _session_record(rows[0])

    def list_sessions(self, limit: int = 50, *, workspace: str | None = None,
                      statuses: Sequence[str] = ()) -> list[SessionRecord]:
        """The most recently created sessions, newest first; only those of `workspace`
        and whose newest turn has one of `statuses`, when given."""
        if workspace is None and not statuses:
            rows = self._session_read(
                _SELECT_SESSIONS + " ORDER BY s.created_at DESC LIMIT ?", (limit,))
            return [_session_record(r) for r in rows]
        rows = self._session_read(_SESSIONS_FILTERED + " ORDER BY s.created_at DESC",
                                  (int(workspace is not None), workspace or ""))
        records = [_session_record(r) for r in rows]
        return [r for r in records if not statuses or r.status in statuses][:limit]

    def session_turns(self, session_id: str) -> list[TurnRecord]:
        """Every turn of the session, oldest first (numbered from 1)."""
        rows = self._session_read(_SELECT_TURN + " WHERE session_id = ? ORDER BY rowid",
                                  (session_id,))
        return [_turn_record(i, r[1:]) for i, r in enumerate(rows, start=1)]

    def latest_turn(self, session_id: str) -> TurnRecord | None:
        """The session's newest turn, or None before the first (reads one row)."""
        rows = self._session_read(
            _SELECT_TURN + " WHERE session_id = ? ORDER BY rowid DESC LIMIT 1", (session_id,))
        return self._numbered(session_id, rows[0]) if rows else None

    def find_turn(self, session_id: str, ref: str) -> TurnRecord | None:
        """The turn numbered `ref` (when `ref` is a number in range), else the turn whose
        run id is `ref` or uniquely starts with it; None when nothing matches."""
        text = ref.strip().lstrip("#")
        if text.isdigit() and int(text) >= 1:
            rows = self._session_read(
                _SELECT_TURN + " WHERE session_id = ? ORDER BY rowid LIMIT 1 OFFSET ?",
                (session_id, int(text) - 1))
            if rows:
                return self._numbered(session_id, rows[0])
        if not text:
            return None
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._session_read(
            _SELECT_TURN + " WHERE session_id = ? AND (run_id = ? OR run_id LIKE ? ESCAPE '\\')"
            " ORDER BY run_id = ? DESC LIMIT 2", (session_id, text, escaped + "%", text))
        if not rows or (len(rows) > 1 and rows[0][1] != text):
            return None
        return self._numbered(session_id, rows[0])

    def _numbered(self, session_id: str, row: tuple[Any, ...]) -> TurnRecord:
        number = self._session_read(
            "SELECT COUNT(*) FROM runs WHERE session_id = ? AND rowid <= ?", (session_id, row[0]))
        return _turn_record(int(number[0][0]), row[1:])

    def turn_ancestry(self, run_id: str) -> Iterator[str]:
        """`run_id`, its parent, its grandparent … up to a first turn, one at a time.

        One recursive statement, stepped lazily: a caller that stops early (because its
        context budget is full) never pays for the rest of a long branch.
        """
        try:
            cursor = self._conn.execute(
                "WITH RECURSIVE chain(run_id, parent) AS ("
                " SELECT run_id, parent_run_id FROM runs WHERE run_id = ?"
                " UNION ALL SELECT r.run_id, r.parent_run_id FROM runs r"
                " JOIN chain c ON r.run_id = c.parent)"
                " SELECT run_id FROM chain", (run_id,))
        except sqlite3.Error as exc:
            raise StateError(f"store failed while reading a session branch: {exc}") from exc
        try:
            for row in cursor:
                yield str(row[0])
        except sqlite3.Error as exc:
            raise StateError(f"store failed while reading a session branch: {exc}") from exc
        finally:
            cursor.close()  # a half-read statement must not pin a read snapshot

    def turn_messages(self, run_id: str) -> list[Message]:
        """What one turn added to its conversation: its goal message and everything after.

        The system prompt and the history the turn was shown are left out: they belong
        to earlier turns (or to no turn).
        """
        rows = self._session_read(
            "SELECT body FROM messages WHERE run_id = ? AND seq >= (SELECT COALESCE(MAX(seq), 0)"
            " FROM messages WHERE run_id = ? AND step_index = -1) ORDER BY seq",
            (run_id, run_id),
        )
        return [message_from_json(loads(r[0])) for r in rows]

    def acquire_session(
        self, session_id: str, pid: int, started: float, *, alive: _AliveCheck
    ) -> None:
        """Make the calling process the session's one driver, or refuse.

        Refused while another live process holds the lock, or while any turn of the
        session is driven by another live process (a turn resumed by its run id). A
        lock whose holder died is reclaimed.

        Raises:
            SessionInUse: A turn of the session is in flight elsewhere.
            UsageError: No such session.
        """
        with self._tx() as conn:
            row = conn.execute(
                "SELECT driver_pid, driver_started FROM sessions WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                raise UsageError(f"no session {session_id!r} in the store")
            holder, holder_started = row
            if holder is not None and holder != pid and self._held(
                    "session", session_id, int(holder), holder_started, alive):
                raise SessionInUse(session_id, _run_of(conn, session_id, int(holder)))
            for run_id, owner, owner_started in conn.execute(
                "SELECT run_id, owner_pid, owner_started FROM runs"
                " WHERE session_id = ? AND owner_pid IS NOT NULL AND status = ?",
                (session_id, RunStatus.RUNNING.value),
            ).fetchall():
                if owner != pid and self._held("run", str(run_id), int(owner), owner_started,
                                               alive):
                    raise SessionInUse(session_id, str(run_id))
            if not self._hold("session", session_id):
                raise SessionInUse(session_id, _run_of(conn, session_id, int(holder or 0)))
            conn.execute(
                "UPDATE sessions SET driver_pid = ?, driver_started = ? WHERE session_id = ?",
                (pid, started, session_id),
            )

    def release_session(self, session_id: str, pid: int) -> None:
        """Give up driving the session (only when the caller holds the lock)."""
        self._let_go("session", session_id)
        with self._tx() as conn:
            conn.execute(
                "UPDATE sessions SET driver_pid = NULL, driver_started = NULL"
                " WHERE session_id = ? AND driver_pid = ?",
                (session_id, pid),
            )


def _run_of(conn: sqlite3.Connection, session_id: str, pid: int) -> str:
    row = conn.execute(
        "SELECT run_id FROM runs WHERE session_id = ? AND owner_pid = ? ORDER BY rowid DESC"
        " LIMIT 1", (session_id, pid),
    ).fetchone()
    return str(row[0]) if row is not None else "not yet started"


def _turn_record(number: int, r: tuple[Any, ...]) -> TurnRecord:
    return TurnRecord(number, r[0], r[1], r[2], RunStatus(r[3]), r[4], r[5], int(r[6]),
                      int(r[7]))


def _session_record(r: tuple[Any, ...]) -> SessionRecord:
    return SessionRecord(
        session_id=r[0], created_at=r[1], title=r[2], workspace=r[3], turns=int(r[4]),
        latest_run_id=r[5], updated_at=r[6] or r[1], status=r[7] if len(r) > 7 else None,
    )
