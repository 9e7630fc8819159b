"""Spend queries: per-group sums computed in the database (`spend_sums`, what `io spend`
and a batch's cost read), and one row per completion (a step's, or a compaction's
summary) with the numbers as reported (`spend_rows`).

`spend_sums` aggregates with ``GROUP BY`` over indexed columns, on SQLite and
PostgreSQL alike: memory holds one `SpendSums` per (group, model served), never a
record per completion. The sums are exactly what `ModelPrice.cost_of` needs to price
every call of a group at once (see `SpendSums`); this module prices nothing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

from harness_core._record import record
from harness_core.errors import StateError, UsageError
from harness_core.messages import Usage

__all__ = ["SPEND_KEYS", "SpendQueries", "SpendRow", "SpendSums"]


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


@record
class SpendSums:
    """The completions of one group served by one model, summed in the database.

    A call is *costable* when it reported both its prompt and its completion count
    (`ModelPrice.cost_of` gives None otherwise). The prompt tokens billed at the input
    price depend on which cache prices the model has, so the four ways are each summed,
    per call clamped at zero as `cost_of` clamps them.

    Attributes:
        key: The group's key (model, run, session, UTC day, tree root or runner); None
            for calls outside any session (by session) or with no runner recorded.
        model: The model that served them.
        calls: Completions in the group.
        prompt_tokens: Sums of the reported counts; None when no call reported one.
        costable: Calls that reported prompt and completion counts.
        completion_costable: Completion tokens of the costable calls.
        cache_read_costable: Cache-read tokens of the costable calls.
        cache_write_costable: Cache-write tokens of the costable calls.
        plain: Prompt tokens of the costable calls when the model has no cache price.
        plain_less_read: The same less cache reads (a cache-read price only).
        plain_less_write: The same less cache writes (a cache-write price only).
        plain_less_both: The same less both (both cache prices).
        estimated_calls: Calls whose counts are io's estimate (`Usage.estimated`).
    """

    key: str | None
    model: str
    calls: int
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    server_tool_requests: int | None = None
    costable: int = 0
    completion_costable: int = 0
    cache_read_costable: int = 0
    cache_write_costable: int = 0
    plain: int = 0
    plain_less_read: int = 0
    plain_less_write: int = 0
    plain_less_both: int = 0
    estimated_calls: int = 0


SPEND_KEYS: dict[str, str] = {
    "model": "c.model_served",
    "run": "c.run_id",
    "session": "r.session_id",
    "day": "substr(c.created_at, 1, 10)",
    "tree": "COALESCE(r.root_run_id, c.run_id)",
    "runner": "c.host",
}
"""Each grouping `spend_sums` knows, as the SQL of its key (the store writes every
timestamp in UTC, so its first ten characters are the UTC day)."""

_COSTABLE = "c.prompt_tokens IS NOT NULL AND c.completion_tokens IS NOT NULL"
_READ = "COALESCE(c.cache_read_tokens, 0)"
_WRITE = "COALESCE(c.cache_write_tokens, 0)"


def _when_costable(expr: str) -> str:
    return f"SUM(CASE WHEN {_COSTABLE} THEN {expr} ELSE 0 END)"


def _clamped(expr: str) -> str:
    return _when_costable(f"CASE WHEN {expr} > 0 THEN {expr} ELSE 0 END")


_SUMS: tuple[str, ...] = (
    "COUNT(*)",
    "SUM(c.prompt_tokens)", "SUM(c.completion_tokens)", "SUM(c.total_tokens)",
    "SUM(c.cache_read_tokens)", "SUM(c.cache_write_tokens)", "SUM(c.reasoning_tokens)",
    "SUM(c.server_tool_requests)",
    _when_costable("1"), _when_costable("c.completion_tokens"), _when_costable(_READ),
    _when_costable(_WRITE),
    _clamped("c.prompt_tokens"), _clamped(f"c.prompt_tokens - {_READ}"),
    _clamped(f"c.prompt_tokens - {_WRITE}"), _clamped(f"c.prompt_tokens - {_READ} - {_WRITE}"),
    "SUM(c.usage_estimated)",
)
"""The aggregates of one `SpendSums`, in its field order after key and model. A new
usage column (an `estimated` flag, another price) is one more aggregate here and one
more field there."""

_SOURCES = (
    "completions",
    "(SELECT run_id, created_at, model_served, host, prompt_tokens, completion_tokens,"
    " total_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,"
    " CAST(NULL AS INTEGER) AS server_tool_requests, usage_estimated FROM compactions)",
)
"""Where completions are recorded: the steps' and the compaction summaries'. Each is
summed by a statement of its own, so each uses its own indexes."""


_NULLABLE = ("prompt_tokens", "completion_tokens", "total_tokens", "cache_read_tokens",
             "cache_write_tokens", "reasoning_tokens", "server_tool_requests")
_SUMMED = tuple(f.name for f in fields(SpendSums))[2:]
"""`SpendSums`' fields after key and model: one per aggregate of `_SUMS`, in order."""


_NULLABLE_AT = tuple(name in _NULLABLE for name in _SUMMED)
_MAKE: Any = SpendSums  # called positionally with every field: a record's fast path


def _sums(row: tuple[Any, ...]) -> SpendSums:
    # One per group and model, and a whole-store report by tree has one group per
    # tree: no per-field dict, the values straight into the record. PostgreSQL sums
    # integers as numeric, SQLite as int: both become int.
    values = [None if v is None else int(v) if nullable else int(v or 0)
              for v, nullable in zip(row[2:], _NULLABLE_AT, strict=True)]
    return _MAKE(_text(row[0]), str(row[1] or ""), *values)  # type: ignore[no-any-return]


def _merge(a: SpendSums, b: SpendSums) -> SpendSums:
    values: dict[str, Any] = {}
    for name in _SUMMED:
        x, y = getattr(a, name), getattr(b, name)
        values[name] = x if y is None else y if x is None else x + y
    return SpendSums(a.key, a.model, **values)


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

    def spend_sums(self, by: str, *, since: str | None = None, until: str | None = None,
                   workspace: str | None = None, batch_id: str | None = None
                   ) -> list[SpendSums]:
        """Completions (compaction summaries included) summed per group and model
        served, in the database; ordered by key (None last), then model.

        Args:
            by: A key of `SPEND_KEYS`: ``model``, ``run``, ``session``, ``day`` (UTC),
                ``tree`` (the root of the run's tree) or ``runner`` (the host).
            since: Inclusive ISO timestamp lower bound.
            until: Exclusive ISO timestamp upper bound.
            workspace: Only runs recorded in this workspace (its resolved path).
            batch_id: Only the runs of this batch's tasks.

        Raises:
            UsageError: `by` is not a key of `SPEND_KEYS`.
            StateError: The store failed.
        """
        key = SPEND_KEYS.get(by)
        if key is None:
            raise UsageError(f"cannot group spend by {by!r}: one of {', '.join(SPEND_KEYS)}")
        where, params = _filters(since, until, workspace, batch_id)
        merged: dict[tuple[str | None, str], SpendSums] = {}
        for source in _SOURCES:
            sql = _sum_statement(key, source, where, by_workspace=workspace is not None)
            try:
                rows = self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StateError(f"store failed while summing spend: {exc}") from exc
            for row in rows:
                sums = _sums(row)
                slot = (sums.key, sums.model)
                merged[slot] = _merge(merged[slot], sums) if slot in merged else sums
        return [merged[k] for k in sorted(merged, key=lambda k: (k[0] is None, k[0] or "", k[1]))]


def _sum_statement(key: str, source: str, where: str, *, by_workspace: bool) -> str:
    """The ``GROUP BY`` for one source. Only names and SQL of this module go in; every
    value is a parameter.

    A workspace's report starts from its runs (`runs_workspace`) and reads their
    completions by key. Grouping the whole store by a column of the run (session, tree)
    sums each run's completions first, in the order of their primary key, and joins
    the runs to those sums: one lookup per run and model, not one per completion
    (at 80,000 completions it took about a third of the time)."""
    if by_workspace:
        return (f"SELECT {key}, c.model_served, {', '.join(_SUMS)} FROM {source} c"  # noqa: S608
                f" JOIN runs r ON r.run_id = c.run_id{where} GROUP BY 1, 2")
    if "r." not in key:
        return (f"SELECT {key}, c.model_served, {', '.join(_SUMS)}"  # noqa: S608
                f" FROM {source} c{where} GROUP BY 1, 2")
    inner = ", ".join(f"{expr} AS a{i}" for i, expr in enumerate(_SUMS))
    outer = ", ".join(f"SUM(c.a{i})" for i in range(len(_SUMS)))
    return (f"SELECT {key}, c.model_served, {outer} FROM (SELECT c.run_id AS run_id,"  # noqa: S608
            f" c.model_served AS model_served, {inner} FROM {source} c{where}"
            f" GROUP BY c.run_id, c.model_served) c LEFT JOIN runs r ON r.run_id = c.run_id"
            " GROUP BY 1, 2")


def _filters(since: str | None, until: str | None, workspace: str | None,
             batch_id: str | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for clause, value in (("r.workspace = ?", workspace), ("c.created_at >= ?", since),
                          ("c.created_at < ?", until),
                          ("c.run_id IN (SELECT run_id FROM batch_tasks WHERE batch_id = ?)",
                           batch_id)):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params
