"""Spend: token counts and derived cost, grouped; prices come from the operator.

A cost is derived at query time from a `PriceTable` and never stored. A call whose
model has no price (or whose token counts were not reported) is counted as unpriced,
never costed at zero, and a group holding one reports a floor rather than a total. A
call whose provider reported no counts holds io's estimate and is counted as estimated
(`SpendGroup.estimated_calls`). A
provider-executed request (a web search) is billed per request, not per token, so no
cost here includes it. This module does arithmetic only: no I/O, no terminal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from datetime import UTC, date
from typing import Any, Literal

from harness_core._record import record
from harness_core.prices import ModelPrice, PriceTable
from harness_core.store import SpendRow, SpendSums

__all__ = [
    "ModelPrice",
    "PriceTable",
    "SpendBy",
    "SpendGroup",
    "SpendReport",
    "SpendRow",
    "SpendSums",
    "summarize",
    "summarize_sums",
]

SpendBy = Literal["model", "run", "session", "day", "tree", "runner"]
"""How `summarize` groups rows: by served model, run id, session id, UTC day, the root
of the run's tree (a tree of runs rolled up into its root), or runner (the host)."""

_MTOK = 1_000_000.0


_COUNTS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "server_tool_requests",
)


@record
class SpendGroup:
    """Totals of one group. A count is None when no call in the group reported it.

    Attributes:
        key: The group's model, run id, session id or ISO day; None for calls outside
            any session when grouping by session, and for the report's grand total.
        calls: Completions in the group.
        cost_usd: Derived cost of the priced calls; None when no call could be priced.
        unpriced_calls: Calls no cost could be derived for (no price, or no counts).
        estimated_calls: Calls whose counts are io's estimate (the provider reported
            none): their tokens and cost are estimates too.
        is_floor: True when some calls are unpriced, so `cost_usd` understates.
    """

    key: str | None
    calls: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    server_tool_requests: int | None = None
    cost_usd: float | None = None
    unpriced_calls: int = 0
    estimated_calls: int = 0

    @property
    def is_floor(self) -> bool:
        return self.unpriced_calls > 0

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["is_floor"] = self.is_floor
        return out


@record
class SpendReport:
    """What `summarize` answers.

    Attributes:
        by: The grouping.
        as_of: The price table's date, or None when no table was given.
        groups: One per key, sorted by key (calls outside a session last).
        total: All rows together (its `key` is None).
    """

    by: SpendBy
    as_of: date | None
    groups: tuple[SpendGroup, ...]
    total: SpendGroup

    @property
    def is_floor(self) -> bool:
        return self.total.is_floor

    def to_json(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "prices_as_of": self.as_of.isoformat() if self.as_of else None,
            "groups": [g.to_json() for g in self.groups],
            "total": self.total.to_json(),
            "is_floor": self.is_floor,
        }


class _Tally:
    __slots__ = ("calls", "counts", "cost", "estimated", "priced", "unpriced")

    def __init__(self) -> None:
        self.calls = 0
        self.counts: dict[str, int | None] = dict.fromkeys(_COUNTS)
        self.cost = 0.0
        self.priced = 0
        self.unpriced = 0
        self.estimated = 0

    def add(self, row: SpendRow, cost: float | None) -> None:
        self.calls += 1
        self.estimated += row.estimated
        for name in _COUNTS:
            value = getattr(row, name)
            if value is not None:
                self.counts[name] = (self.counts[name] or 0) + value
        if cost is None:
            self.unpriced += 1
        else:
            self.priced += 1
            self.cost += cost

    def group(self, key: str | None) -> SpendGroup:
        return SpendGroup(
            key,
            self.calls,
            cost_usd=self.cost if self.priced else None,
            unpriced_calls=self.unpriced,
            estimated_calls=self.estimated,
            **self.counts,
        )


def _key(row: SpendRow, by: SpendBy) -> str | None:
    if by == "model":
        return row.model
    if by == "run":
        return row.run_id
    if by == "session":
        return row.session_id
    if by == "tree":
        return row.root_run_id or row.run_id
    if by == "runner":
        return row.runner
    when = row.created_at
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return when.date().isoformat()


def summarize(rows: Iterable[SpendRow], prices: PriceTable | None, *, by: SpendBy) -> SpendReport:
    """Group completions and derive their cost.

    Args:
        rows: The completions to count (the caller filters by time).
        prices: The operator's price table; None prices nothing.
        by: ``model`` (the model that served), ``run``, ``session``, ``day`` (UTC) or
            ``tree`` (every run of a tree under its root's id).

    Returns:
        A report whose groups and total count unpriced calls rather than costing them
        at zero.
    """
    tallies: dict[str | None, _Tally] = {}
    total = _Tally()
    for row in rows:
        price = prices.price_for(row.model) if prices is not None else None
        cost = price.cost_of(row.usage()) if price is not None else None
        key = _key(row, by)
        tally = tallies.get(key)
        if tally is None:
            tally = tallies[key] = _Tally()
        tally.add(row, cost)
        total.add(row, cost)
    ordered = sorted(tallies, key=lambda k: (k is None, k or ""))
    return SpendReport(
        by=by,
        as_of=prices.as_of if prices is not None else None,
        groups=tuple(tallies[k].group(k) for k in ordered),
        total=total.group(None),
    )


def _sums_cost(sums: SpendSums, price: ModelPrice) -> float:
    """What `ModelPrice.cost_of` gives summed over the costable calls of `sums`."""
    has_read = price.cache_read_per_mtok is not None
    has_write = price.cache_write_per_mtok is not None
    plain = (sums.plain_less_both if has_read and has_write else sums.plain_less_read
             if has_read else sums.plain_less_write if has_write else sums.plain)
    total = sums.completion_costable * price.output_per_mtok + plain * price.input_per_mtok
    if price.cache_read_per_mtok is not None:
        total += sums.cache_read_costable * price.cache_read_per_mtok
    if price.cache_write_per_mtok is not None:
        total += sums.cache_write_costable * price.cache_write_per_mtok
    return total / _MTOK


def _add_sums(tally: _Tally, sums: SpendSums, cost: float | None) -> None:
    tally.calls += sums.calls
    tally.estimated += sums.estimated_calls
    for name in _COUNTS:
        value = getattr(sums, name)
        if value is not None:
            tally.counts[name] = (tally.counts[name] or 0) + value
    priced = sums.costable if cost is not None else 0
    tally.unpriced += sums.calls - priced
    if priced:
        tally.priced += priced
        tally.cost += cost or 0.0


def summarize_sums(sums: Iterable[SpendSums], prices: PriceTable | None, *,
                   by: SpendBy) -> SpendReport:
    """The report `summarize` gives, from sums the store computed (`Store.spend_sums`):
    the same groups, counts and unpriced calls, the cost priced once per group and model.

    Args:
        sums: One per (group, model served), as `Store.spend_sums(by)` returns them.
        prices: The operator's price table; None prices nothing.
        by: The grouping the sums were made with.
    """
    tallies: dict[str | None, _Tally] = {}
    total = _Tally()
    for item in sums:
        price = prices.price_for(item.model) if prices is not None else None
        cost = _sums_cost(item, price) if price is not None else None
        tally = tallies.get(item.key)
        if tally is None:
            tally = tallies[item.key] = _Tally()
        _add_sums(tally, item, cost)
        _add_sums(total, item, cost)
    ordered = sorted(tallies, key=lambda k: (k is None, k or ""))
    return SpendReport(
        by=by,
        as_of=prices.as_of if prices is not None else None,
        groups=tuple(tallies[k].group(k) for k in ordered),
        total=total.group(None),
    )
