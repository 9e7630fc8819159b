"""`Store.spend_sums` + `summarize_sums`: spend summed in the database gives the report
that summing every row in Python gives, for every grouping, every way a model may be
priced, missing counts, compaction summaries, time bounds, a workspace and a batch; and
it returns one row per group and model, never one per call."""

from __future__ import annotations

import random
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from harness_core import Message, Store, UsageError
from harness_core.messages import Usage
from harness_core.spend import (
    ModelPrice,
    PriceTable,
    SpendBy,
    SpendReport,
    summarize,
    summarize_sums,
)
from harness_core.store import SpendSums

BYS: tuple[SpendBy, ...] = ("model", "run", "session", "day", "tree", "runner")
MODELS = ("plain-model", "read-priced", "write-priced", "both-priced", "unpriced-model")
PRICES = PriceTable(as_of=date(2026, 12, 1), models={
    "plain-model": ModelPrice(1.0, 2.0),
    "read-priced": ModelPrice(3.0, 15.0, cache_read_per_mtok=0.3),
    "write-priced": ModelPrice(3.0, 15.0, cache_write_per_mtok=3.75),
    "both-priced": ModelPrice(5.0, 25.0, cache_read_per_mtok=0.5, cache_write_per_mtok=6.25),
})


def _usage(rng: random.Random) -> Usage:
    def count(high: int) -> int | None:
        return None if rng.random() < 0.15 else rng.randint(0, high)

    return Usage(count(5000), count(800), count(6000), count(4000), count(3000), count(100),
                 count(3))


def _fill(path: Path) -> Store:
    """Runs in two workspaces, some in sessions, some children, with completions and
    compactions of every model, and a batch of three runs."""
    rng = random.Random(40)
    store = Store(path)
    for i in range(24):
        run_id = f"run{i:02d}"
        root = f"run{i - 1:02d}" if i % 4 == 1 else None
        store.create_run(run_id, goal="g", workspace="/ws/a" if i % 3 else "/ws/b", model="m",
                         settings={}, policy={}, sandbox=None, messages=[Message.user("hi")],
                         session_id=f"s{i % 2}" if i % 5 else None, parent_run_id=root)
        for step in range(rng.randint(0, 4)):
            store.record_completion(run_id, step, text="t", tool_calls=(), provider="p",
                                    model_requested="m", model_served=rng.choice(MODELS),
                                    usage=_usage(rng), latency_ms=1.0, ttft_ms=None,
                                    stop_reason="end")
        if i % 6 == 0:
            store.record_compaction(run_id, 1, head=1, cut=2, summary="s", size_before=9,
                                    threshold=5, provider="p", model_requested="m",
                                    model_served=rng.choice(MODELS), usage=_usage(rng),
                                    latency_ms=1.0)
    store.create_batch("b1", tasks_file="t.jsonl", engine="local", settings={},
                       tasks=[(0, "run03", {}), (1, "run07", {}), (2, "run10", {})])
    return store


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with _fill(tmp_path / "s.db") as opened:
        yield opened


def _same(sums: SpendReport, rows: SpendReport) -> None:
    assert len(sums.groups) == len(rows.groups)
    for got, want in zip([*sums.groups, sums.total], [*rows.groups, rows.total], strict=True):
        left, right = got.to_json(), want.to_json()
        cost, expected = left.pop("cost_usd"), right.pop("cost_usd")
        assert left == right
        assert cost == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("by", BYS)
@pytest.mark.parametrize("priced", [True, False])
def test_sums_give_the_report_every_row_gives(store: Store, by: SpendBy, priced: bool) -> None:
    prices = PRICES if priced else None
    _same(summarize_sums(store.spend_sums(by), prices, by=by),
          summarize(store.spend_rows(), prices, by=by))


def test_the_test_store_exercises_every_price_and_a_missing_count(store: Store) -> None:
    report = summarize(store.spend_rows(), PRICES, by="model")
    assert {g.key for g in report.groups} == set(MODELS)
    assert all(g.unpriced_calls for g in report.groups)  # a call without counts in each
    assert report.total.cost_usd and report.total.calls > 40


@pytest.mark.parametrize("by", BYS)
def test_a_workspace_counts_only_its_runs(store: Store, by: SpendBy) -> None:
    mine = {r.run_id for r in store.list_runs(100, workspace="/ws/b")}
    rows = [r for r in store.spend_rows() if r.run_id in mine]
    _same(summarize_sums(store.spend_sums(by, workspace="/ws/b"), PRICES, by=by),
          summarize(rows, PRICES, by=by))


def test_time_bounds_and_a_batch_filter_in_the_database(store: Store) -> None:
    stamps = sorted(r.created_at.isoformat(timespec="microseconds")
                    for r in store.spend_rows())
    since, until = stamps[10], stamps[30]
    _same(summarize_sums(store.spend_sums("day", since=since, until=until), PRICES, by="day"),
          summarize(store.spend_rows(since, until), PRICES, by="day"))
    batch = [r for r in store.spend_rows() if r.run_id in {"run03", "run07", "run10"}]
    _same(summarize_sums(store.spend_sums("run", batch_id="b1"), PRICES, by="run"),
          summarize(batch, PRICES, by="run"))


def test_one_sum_per_group_and_model_not_per_call(store: Store) -> None:
    sums = store.spend_sums("session")
    assert all(isinstance(s, SpendSums) for s in sums)
    pairs = {(r.session_id, r.model) for r in store.spend_rows()}
    assert len(sums) == len(pairs) < len(store.spend_rows())
    assert [s.key for s in sums][-1] is None  # calls outside a session come last


def test_an_unknown_grouping_is_a_usage_error(store: Store) -> None:
    with pytest.raises(UsageError, match="cannot group spend by 'week'"):
        store.spend_sums("week")


def test_the_workspace_report_reads_through_the_workspace_index(store: Store) -> None:
    plan = " ".join(str(r[-1]) for r in store._conn.execute(
        "EXPLAIN QUERY PLAN SELECT c.model_served, COUNT(*) FROM completions c"
        " JOIN runs r ON r.run_id = c.run_id WHERE r.workspace = ? GROUP BY 1", ("/ws/b",)))
    assert "runs_workspace" in plan and "SCAN" not in plan.replace("SCAN r USING", "")
