"""spend.summarize: grouping, derived cost, and unpriced calls counted, never costed at zero."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from harness_core.messages import Usage
from harness_core.spend import ModelPrice, PriceTable, SpendRow, summarize

PRICES = PriceTable(
    as_of=date(2026, 11, 1),
    models={
        "claude-sonnet-4-5": ModelPrice(3.0, 15.0, cache_read_per_mtok=0.3),
        "gpt-x": ModelPrice(1.0, 2.0),
    },
)
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def row(
    model: str, run: str = "r1", session: str | None = None, at: datetime = T0, **usage: int
) -> SpendRow:
    return SpendRow.from_usage(
        run_id=run,
        session_id=session,
        model=model,
        provider="p",
        created_at=at,
        usage=Usage(**usage),
    )


ROWS = [
    # 1M prompt of which 800k cache reads, 100k out: 200k*3 + 800k*0.3 + 100k*15 = 0.6+0.24+1.5 = 2.34
    row(
        "claude-sonnet-4-5",
        "r1",
        "s1",
        prompt_tokens=1_000_000,
        completion_tokens=100_000,
        cache_read_tokens=800_000,
    ),
    # 1M in, 1M out: 1 + 2 = 3.0
    row(
        "gpt-x",
        "r1",
        "s1",
        prompt_tokens=1_000_000,
        completion_tokens=1_000_000,
        total_tokens=2_000_000,
    ),
    # no price for this model
    row(
        "mystery-model",
        "r2",
        None,
        at=T0 + timedelta(days=1),
        prompt_tokens=50,
        completion_tokens=5,
    ),
    # priced model, but the provider reported nothing
    row("gpt-x", "r2", None, at=T0 + timedelta(days=1)),
]


def test_by_model_costs_priced_calls_and_counts_the_rest() -> None:
    report = summarize(ROWS, PRICES, by="model")
    groups = {g.key: g for g in report.groups}
    assert groups["claude-sonnet-4-5"].cost_usd == pytest.approx(2.34)
    assert groups["claude-sonnet-4-5"].cache_read_tokens == 800_000
    assert groups["gpt-x"].calls == 2
    assert groups["gpt-x"].cost_usd == pytest.approx(3.0)
    assert groups["gpt-x"].unpriced_calls == 1 and groups["gpt-x"].is_floor
    assert groups["mystery-model"].cost_usd is None  # unpriced, not zero
    assert groups["mystery-model"].unpriced_calls == 1
    assert report.total.calls == 4
    assert report.total.cost_usd == pytest.approx(5.34)
    assert report.total.unpriced_calls == 2 and report.is_floor
    assert report.as_of == date(2026, 11, 1)


def test_counts_nobody_reported_stay_none() -> None:
    report = summarize(ROWS, PRICES, by="model")
    groups = {g.key: g for g in report.groups}
    assert groups["mystery-model"].total_tokens is None
    assert groups["mystery-model"].reasoning_tokens is None
    assert groups["gpt-x"].total_tokens == 2_000_000
    assert report.total.prompt_tokens == 2_000_050


def test_by_run_session_and_day() -> None:
    by_run = summarize(ROWS, PRICES, by="run")
    assert [(g.key, g.calls) for g in by_run.groups] == [("r1", 2), ("r2", 2)]
    by_session = summarize(ROWS, PRICES, by="session")
    assert [(g.key, g.calls) for g in by_session.groups] == [("s1", 2), (None, 2)]
    by_day = summarize(ROWS, PRICES, by="day")
    assert [g.key for g in by_day.groups] == ["2026-11-02", "2026-11-03"]
    assert by_day.groups[0].cost_usd == pytest.approx(5.34) and not by_day.groups[0].is_floor


def test_day_is_the_utc_day() -> None:
    late_evening_east = datetime(2026, 11, 2, 1, 0, tzinfo=timezone(timedelta(hours=5)))
    report = summarize(
        [row("gpt-x", at=late_evening_east, prompt_tokens=1, completion_tokens=1)], PRICES, by="day"
    )
    assert report.groups[0].key == "2026-11-01"


def test_without_a_price_table_nothing_is_costed() -> None:
    report = summarize(ROWS, None, by="model")
    assert report.total.cost_usd is None
    assert report.total.unpriced_calls == 4
    assert report.as_of is None


def test_cache_reads_without_their_own_price_are_billed_as_input() -> None:
    prices = PriceTable(as_of=date(2026, 1, 1), models={"m": ModelPrice(2.0, 0.0)})
    report = summarize(
        [row("m", prompt_tokens=1_000_000, completion_tokens=0, cache_read_tokens=900_000)],
        prices,
        by="model",
    )
    assert report.total.cost_usd == pytest.approx(2.0)


def test_cache_writes_have_their_own_price_when_given() -> None:
    prices = PriceTable(
        as_of=date(2026, 1, 1), models={"m": ModelPrice(3.0, 0.0, cache_write_per_mtok=3.75)}
    )
    report = summarize(
        [row("m", prompt_tokens=1_000_000, completion_tokens=0, cache_write_tokens=1_000_000)],
        prices,
        by="model",
    )
    assert report.total.cost_usd == pytest.approx(3.75)


def test_empty_input_gives_an_empty_report() -> None:
    report = summarize([], PRICES, by="day")
    assert report.groups == () and report.total.calls == 0 and report.total.cost_usd is None


def test_json_form_carries_floor_marks() -> None:
    data = summarize(ROWS, PRICES, by="model").to_json()
    assert data["is_floor"] is True and data["prices_as_of"] == "2026-11-01"
    assert data["total"]["unpriced_calls"] == 2
    assert {g["key"] for g in data["groups"]} == {"claude-sonnet-4-5", "gpt-x", "mystery-model"}
