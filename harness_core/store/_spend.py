"""Spend queries: one row per completion with the numbers as reported."""

from __future__ import annotations

import sqlite3
from typing import Any

from harness_core.errors import StateError

__all__ = ["SpendQueries"]


class SpendQueries:
    """Mixin of `Store`: rows for `io spend` (cost is derived later, never stored)."""

    _conn: sqlite3.Connection

    def spend_rows(self, since: str | None = None, until: str | None = None) -> list[dict[str, Any]]:
        """One dict per completion: run_id, session_id, provider, model (served),
        model_requested, created_at (ISO UTC), the usage fields (None when not reported)
        root_run_id (the root of the run's tree; the run itself when not a child) and
        runner (the hostname that made the call; None before it was recorded).

        Args:
            since: Inclusive ISO timestamp lower bound.
            until: Exclusive ISO timestamp upper bound.
        """
        sql = (
            "SELECT c.run_id, r.session_id, c.provider, c.model_served, c.model_requested,"
            " c.created_at, c.prompt_tokens, c.completion_tokens, c.total_tokens,"
            " c.cache_read_tokens, c.cache_write_tokens, c.reasoning_tokens,"
            " c.server_tool_requests, COALESCE(r.root_run_id, c.run_id), c.host"
            " FROM completions c LEFT JOIN runs r ON r.run_id = c.run_id"
            " WHERE 1 = 1"
        )
        params: list[Any] = []
        if since is not None:
            sql += " AND c.created_at >= ?"
            params.append(since)
        if until is not None:
            sql += " AND c.created_at < ?"
            params.append(until)
        keys = ("run_id", "session_id", "provider", "model", "model_requested", "created_at",
                "prompt_tokens", "completion_tokens", "total_tokens", "cache_read_tokens",
                "cache_write_tokens", "reasoning_tokens", "server_tool_requests", "root_run_id",
                "runner")
        try:
            rows = self._conn.execute(sql + " ORDER BY c.created_at", params).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"store failed while reading spend: {exc}") from exc
        return [dict(zip(keys, r, strict=True)) for r in rows]
