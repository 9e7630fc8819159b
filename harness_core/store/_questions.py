"""Question queries: what the agent asked the operator, the answer, and who gave it.

`QuestionQueries` is a mixin of `Store` (it uses `self._conn` and `self._tx()`). A row is
an audit fact for reconstructing a run; it is not how a paused run resumes (the answer
reaches the model as the asking call's observation in the ledger). `answered_by` keeps
a machine (a `Responder` in the run's own process) apart from a person (a terminal
prompt, or `io resume --answer`).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from harness_core._record import record
from harness_core.errors import StateError
from harness_core.store._parts import StoreParts

__all__ = ["ANSWERED_BY", "QUESTION_SCHEMA_SQL", "QuestionQueries", "QuestionRecord"]

ANSWERED_BY: tuple[str, ...] = ("machine", "person")
"""Who can answer a question: a program standing in for the operator, or a human."""

QUESTION_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS questions (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    call_index INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    question TEXT NOT NULL,
    asked_at TEXT NOT NULL,
    answer TEXT,
    answered_by TEXT CHECK (answered_by IS NULL OR answered_by IN ('machine', 'person')),
    answered_at TEXT,
    PRIMARY KEY (run_id, step_index, call_index)
)
"""
"""The questions table. Statements are separated by ``;`` and contain none inside."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


@record
class QuestionRecord:
    """One question the agent asked.

    Attributes:
        run_id: The run that asked.
        step_index: The step of the asking call.
        call_index: The asking call's place in its step.
        call_id: The asking call's id.
        question: The question's text.
        asked_at: ISO timestamp.
        answer: The answer's text, or None while unanswered.
        answered_by: ``machine`` or ``person``, or None while unanswered.
        answered_at: ISO timestamp, or None while unanswered.
    """

    run_id: str
    step_index: int
    call_index: int
    call_id: str
    question: str
    asked_at: str
    answer: str | None
    answered_by: str | None
    answered_at: str | None

    @property
    def is_answered(self) -> bool:
        """Whether an answer was recorded."""
        return self.answered_by is not None


class QuestionQueries(StoreParts):
    """Mixin of `Store`: record questions and answers; read them back."""

    _conn: sqlite3.Connection


    def record_question(
        self,
        run_id: str,
        step: int,
        call_index: int,
        call_id: str,
        question: str,
        *,
        answer: str | None = None,
        answered_by: str | None = None,
    ) -> None:
        """Record that the agent asked `question` (and, when known already, the answer).

        Asking again at the same call (a resumed drive) keeps the first record.
        """
        now = _now()
        with self._tx() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO questions(run_id, step_index, call_index, call_id, question,"
                " asked_at) VALUES (?,?,?,?,?,?)",
                (run_id, step, call_index, call_id, question, now),
            )
            if answered_by is not None:
                self._set_answer(conn, run_id, step, call_index, answer or "", answered_by, now)

    def answer_question(
        self, run_id: str, step: int, call_index: int, answer: str, answered_by: str
    ) -> None:
        """Record the answer to the question asked at (`step`, `call_index`)."""
        with self._tx() as conn:
            self._set_answer(conn, run_id, step, call_index, answer, answered_by, _now())

    @staticmethod
    def _set_answer(
        conn: sqlite3.Connection, run_id: str, step: int, call_index: int, answer: str,
        answered_by: str, now: str,
    ) -> None:
        conn.execute(
            "UPDATE questions SET answer = ?, answered_by = ?, answered_at = ?"
            " WHERE run_id = ? AND step_index = ? AND call_index = ?",
            (answer, answered_by, now, run_id, step, call_index),
        )

    def questions(self, run_id: str) -> list[QuestionRecord]:
        """Every question of the run, in the order asked."""
        return [QuestionRecord(*r) for r in self._question_rows(
            "SELECT run_id, step_index, call_index, call_id, question, asked_at, answer,"
            " answered_by, answered_at FROM questions WHERE run_id = ?"
            " ORDER BY step_index, call_index", (run_id,))]

    def answered_question(self, run_id: str, step: int, call_index: int) -> QuestionRecord | None:
        """The question asked at (`step`, `call_index`) once it has an answer, else None.

        For reconstructing a run; a paused run resumes through its ledger, not this.
        """
        rows = self._question_rows(
            "SELECT run_id, step_index, call_index, call_id, question, asked_at, answer,"
            " answered_by, answered_at FROM questions WHERE run_id = ? AND step_index = ?"
            " AND call_index = ? AND answered_by IS NOT NULL", (run_id, step, call_index))
        return QuestionRecord(*rows[0]) if rows else None

    def _question_rows(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn.execute(sql, params).fetchall())
        except sqlite3.Error as exc:
            raise StateError(f"store failed while reading questions: {exc}") from exc
