"""Compaction queries: each summary that replaced older turns in what the model sees.

A compaction is a recorded step of its own: the summary completion (its text, the
model that served it, its usage) and where it cuts the conversation (`head` messages
kept at the start, the summary, then the messages from `cut` on). The conversation in
`messages` is never changed: the view is rebuilt from the last compaction on resume.
`CompactionQueries` is a mixin of `Store`.
"""

from __future__ import annotations

from typing import Any

from harness_core._record import record
from harness_core.messages import Usage
from harness_core.store._parts import HOST, StoreParts
from harness_core.store._parts import now as _now

__all__ = ["COMPACTION_SCHEMA_SQL", "CompactionQueries", "CompactionRecord"]

COMPACTION_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS compactions (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    step_index INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    head INTEGER NOT NULL,
    cut INTEGER NOT NULL,
    summary TEXT NOT NULL,
    size_before INTEGER NOT NULL,
    threshold INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model_requested TEXT NOT NULL,
    model_served TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    total_tokens INTEGER,
    cache_read_tokens INTEGER,
    cache_write_tokens INTEGER,
    reasoning_tokens INTEGER,
    latency_ms REAL NOT NULL,
    host TEXT,
    PRIMARY KEY (run_id, seq)
)
"""

_COLUMNS = ("seq, step_index, created_at, head, cut, summary, size_before, threshold, provider,"
            " model_requested, model_served, prompt_tokens, completion_tokens, total_tokens,"
            " cache_read_tokens, cache_write_tokens, reasoning_tokens, latency_ms,"
            " usage_estimated")


@record
class CompactionRecord:
    """One recorded compaction.

    Attributes:
        seq: Its number in the run (0 for the first).
        step_index: The step whose request it was made before.
        created_at: When it was recorded.
        head: Messages kept at the start of the conversation (system prompt, goal).
        cut: The index (in the run's whole conversation) of the first message kept after
            the summary; the messages between `head` and `cut` are what it summarises.
        summary: The summary the model wrote.
        size_before: The history's size in tokens when io decided to compact.
        threshold: The size in tokens that decided it.
        provider: The provider that served the summary.
        model_requested: The model asked.
        model_served: The model that answered.
        usage: The summary completion's token counts, as reported (or estimated, when
            the provider reported none: `Usage.estimated`).
        latency_ms: How long it took.
    """

    seq: int
    step_index: int
    created_at: str
    head: int
    cut: int
    summary: str
    size_before: int
    threshold: int
    provider: str
    model_requested: str
    model_served: str
    usage: Usage
    latency_ms: float

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "step": self.step_index, "created_at": self.created_at,
                "head": self.head, "cut": self.cut, "summary": self.summary,
                "size_before": self.size_before, "threshold": self.threshold,
                "provider": self.provider, "model": self.model_served,
                "usage": self.usage.to_json(), "latency_ms": self.latency_ms}


def _record(r: tuple[Any, ...]) -> CompactionRecord:
    usage = Usage(prompt_tokens=r[11], completion_tokens=r[12], total_tokens=r[13],
                  cache_read_tokens=r[14], cache_write_tokens=r[15], reasoning_tokens=r[16],
                  estimated=bool(r[18]))
    return CompactionRecord(int(r[0]), int(r[1]), str(r[2]), int(r[3]), int(r[4]), str(r[5]),
                            int(r[6]), int(r[7]), str(r[8]), str(r[9]), str(r[10]), usage,
                            float(r[17]))


class CompactionQueries(StoreParts):
    """Recording and reading compactions."""

    def record_compaction(
        self,
        run_id: str,
        step: int,
        *,
        head: int,
        cut: int,
        summary: str,
        size_before: int,
        threshold: int,
        provider: str,
        model_requested: str,
        model_served: str,
        usage: Usage,
        latency_ms: float,
    ) -> CompactionRecord:
        """Commit one compaction (before the loop applies it to what the model sees)."""
        created = _now()
        with self._tx() as conn:
            row = conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM compactions"
                               " WHERE run_id = ?", (run_id,)).fetchone()
            seq = int(row[0])
            conn.execute(
                f"INSERT INTO compactions(run_id, {_COLUMNS}, host) VALUES"  # noqa: S608
                " (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, seq, step, created, head, cut, summary, size_before, threshold,
                 provider, model_requested, model_served, usage.prompt_tokens,
                 usage.completion_tokens, usage.total_tokens, usage.cache_read_tokens,
                 usage.cache_write_tokens, usage.reasoning_tokens, latency_ms,
                 1 if usage.estimated else 0, HOST),
            )
        return CompactionRecord(seq, step, created, head, cut, summary, size_before,
                                threshold, provider, model_requested, model_served, usage,
                                latency_ms)

    def compactions(self, run_id: str) -> list[CompactionRecord]:
        """Every compaction of the run, oldest first."""
        rows = self._query(f"SELECT {_COLUMNS} FROM compactions WHERE run_id = ?"  # noqa: S608
                           " ORDER BY seq", (run_id,))
        return [_record(r) for r in rows]

    def opening_count(self, run_id: str) -> int:
        """How many messages the run opened with (system prompt, earlier turns, goal)."""
        rows = self._query("SELECT COUNT(*) FROM messages WHERE run_id = ? AND step_index = -1",
                           (run_id,))
        return int(rows[0][0])
