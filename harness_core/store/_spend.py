"""Spend queries: one row per completion (a step's, or a compaction's summary) with the
numbers as reported."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from harness_core._record import record
from harness_core.errors import StateError
from harness_core.messages import Usage

__all__ = ["SpendQueries", "SpendRow"]


@record
class SpendRow:
    """One completion as the store recorded it: who asked, which model served, the counts.

    Attributes:
        run_id: The run the completion belongs to.
        session_id: The session of that run, when it is a session turn.
        model: The model that actually served the call (not the one asked for).
        provider: The provider that served it.
        created_at: When it was recorded (timezone-aware UTC).
        prompt_tokens: As reported; None means not reported. The other counts likewise.
        root_run_id: The root of the run's tree (None: the run is its own root).
        runner: The machine (hostname) that made the call; None when not recorded.
        model_requested: The model the run asked for (None on a row made without it).
        estimated: The counts are io's estimate: the provider reported none
            (`Usage.estimated`).
    """

    run_id: str
    session_id: str | None
    model: str
    provider: str
    created_at: datetime
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    server_tool_requests: int | None = None
    root_run_id: str | None = None
    runner: str | None = None
    model_requested: str | None = None
    estimated: bool = False

    @staticmethod
    def from_usage(
        *,
        run_id: str,
        session_id: str | None,
        model: str,
        provider: str,
        created_at: datetime,
        usage: Usage,
    ) -> SpendRow:
        """A row from a completion's `Usage`."""
        return SpendRow(
            run_id,
            session_id,
            model,
            provider,
            created_at,
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.total_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens,
            usage.server_tool_requests,
            estimated=usage.estimated,
        )

    def usage(self) -> Usage:
        """The row's counts as a `Usage`."""
        return Usage(
            self.prompt_tokens,
            self.completion_tokens,
            self.total_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.reasoning_tokens,
            self.server_tool_requests,
            estimated=self.estimated,
        )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _stamp(value: object) -> datetime:
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _spend_row(r: tuple[Any, ...]) -> SpendRow:
    return SpendRow(
        run_id=str(r[0]), session_id=_text(r[1]), provider=str(r[2] or ""),
        model=str(r[3] or ""), model_requested=_text(r[4]), created_at=_stamp(r[5]),
        prompt_tokens=_count(r[6]), completion_tokens=_count(r[7]), total_tokens=_count(r[8]),
        cache_read_tokens=_count(r[9]), cache_write_tokens=_count(r[10]),
        reasoning_tokens=_count(r[11]), server_tool_requests=_count(r[12]),
        root_run_id=_text(r[13]), runner=_text(r[14]), estimated=bool(r[15]))


class SpendQueries:
    """Mixin of `Store`: rows for `io spend` (cost is derived later, never stored)."""

    _conn: sqlite3.Connection

    def spend_rows(self, since: str | None = None, until: str | None = None, *,
                   workspace: str | None = None) -> list[SpendRow]:
        """One `SpendRow` per completion (compaction summaries included), oldest first: the run and session, provider, the
        model served and the one requested, when (timezone-aware UTC), the counts (None
        when not reported), the root of the run's tree (the run itself when not a child)
        and the runner (the hostname that made the call; None before it was recorded).

        Args:
            since: Inclusive ISO timestamp lower bound.
            until: Exclusive ISO timestamp upper bound.
            workspace: Only the runs of this workspace (its path as recorded); None:
                every workspace's.
        """
        sql = (
            "SELECT c.run_id, r.session_id, c.provider, c.model_served, c.model_requested,"
            " c.created_at, c.prompt_tokens, c.completion_tokens, c.total_tokens,"
            " c.cache_read_tokens, c.cache_write_tokens, c.reasoning_tokens,"
            " c.server_tool_requests, COALESCE(r.root_run_id, c.run_id), c.host,"
            " c.usage_estimated"
            " FROM (SELECT run_id, provider, model_served, model_requested, created_at,"
            " prompt_tokens, completion_tokens, total_tokens, cache_read_tokens,"
            " cache_write_tokens, reasoning_tokens, server_tool_requests, host,"
            " usage_estimated FROM completions UNION ALL"
            " SELECT run_id, provider, model_served, model_requested, created_at,"
            " prompt_tokens, completion_tokens, total_tokens, cache_read_tokens,"
            " cache_write_tokens, reasoning_tokens, NULL, host, usage_estimated"
            " FROM compactions) c"
            " LEFT JOIN runs r ON r.run_id = c.run_id"
            " WHERE 1 = 1"
        )
        params: list[Any] = []
        if since is not None:
            sql += " AND c.created_at >= ?"
            params.append(since)
        if until is not None:
            sql += " AND c.created_at < ?"
            params.append(until)
        if workspace is not None:
            sql += " AND r.workspace = ?"
            params.append(workspace)
        try:
            rows = self._conn.execute(sql + " ORDER BY c.created_at", params).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"store failed while reading spend: {exc}") from exc
        return [_spend_row(r) for r in rows]
