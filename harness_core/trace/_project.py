"""Build a `RunTrace` from the store: read-only, one run or a whole tree.

Nothing here writes: every value comes from a store query and is derived (cost from
the price table given, diffs from the ledger). Observations are cut to `output_limit`
characters so a page of a thousand steps stays light; the full length is kept beside.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness_core.prices import PriceTable
from harness_core.store import LedgerEntry, StepRecord, Store
from harness_core.tool_data import ChildRunData, ExecData, HandleData, PlanData, ShellData
from harness_core.trace._changes import changes_of
from harness_core.trace._model import (
    CallView,
    CostView,
    ModelCost,
    PlanRevision,
    RunTrace,
    StepView,
)

__all__ = ["OUTPUT_LIMIT", "load_trace", "load_tree"]

OUTPUT_LIMIT = 4000
"""Characters of one observation a trace keeps (about a screen); the store keeps all."""

_COMMANDS = ("exec", "shell", "shell_start")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _call(entry: LedgerEntry, limit: int) -> CallView:
    data = entry.data
    output = entry.observation
    ran = data if isinstance(data, ShellData | ExecData) else None
    return CallView(
        step=entry.step_index, index=entry.call_index, call_id=entry.call_id,
        name=entry.name, arguments=entry.arguments_json(),
        output=output[:limit] if output is not None else None,
        output_chars=len(output) if output is not None else 0,
        is_error=entry.is_error,
        exit_status=data.exit_status if isinstance(data, ShellData | ExecData | HandleData)
        else None,
        sandbox=ran.sandbox if ran is not None else None,
        refused=entry.refused.to_json() if entry.refused is not None else None,
        child_run_id=data.child_run_id if isinstance(data, ChildRunData) else None,
    )


def _cost(record: StepRecord, prices: PriceTable | None) -> float | None:
    if prices is None or record.model_served is None:
        return None
    price = prices.price_for(record.model_served)
    return price.cost_of(record.usage) if price is not None else None


def _add(a: int | None, b: int | None) -> int | None:
    return a if b is None else (a or 0) + b


def _cost_view(steps: Sequence[StepView], prices: PriceTable | None) -> CostView:
    by_model: dict[str, dict[str, Any]] = {}
    for step in steps:
        model = step.model or "(unknown)"
        row = by_model.setdefault(model, {"calls": 0, "prompt": None, "completion": None,
                                          "cost": None, "unpriced": 0})
        row["calls"] += 1
        row["prompt"] = _add(row["prompt"], step.usage.get("prompt_tokens"))
        row["completion"] = _add(row["completion"], step.usage.get("completion_tokens"))
        if step.cost_usd is None:
            row["unpriced"] += 1
        else:
            row["cost"] = (row["cost"] or 0.0) + step.cost_usd
    models = tuple(ModelCost(m, r["calls"], r["prompt"], r["completion"], r["cost"],
                             r["unpriced"]) for m, r in sorted(by_model.items()))
    priced = [s.cost_usd for s in steps if s.cost_usd is not None]
    return CostView(
        as_of=prices.as_of if prices is not None else None,
        total_usd=sum(priced) if priced else None,
        priced_calls=len(priced), unpriced_calls=len(steps) - len(priced), by_model=models,
    )


def _plan(ledger: Sequence[LedgerEntry]) -> tuple[PlanRevision, ...]:
    out: list[PlanRevision] = []
    for entry in ledger:
        data = entry.data
        if entry.name != "todo_write" or entry.is_error or not isinstance(data, PlanData):
            continue
        out.append(PlanRevision(entry.step_index, data.revision,
                                tuple(t.to_json() for t in data.todos)))
    return tuple(out)


def load_trace(store: Store, run_id: str, *, prices: PriceTable | None = None,
               output_limit: int = OUTPUT_LIMIT, depth: int = 0) -> RunTrace:
    """One run, projected for reading.

    Args:
        store: The store holding the run (only read).
        run_id: The run's full id.
        prices: The operator's price table; None leaves every call unpriced.
        output_limit: Characters of each observation to keep.
        depth: The run's depth in the tree being read (0 for a root).

    Raises:
        RunNotFound: No such run.
    """
    record = store.run(run_id)
    ledger = store.ledger(run_id)
    calls: dict[int, list[CallView]] = {}
    for entry in ledger:
        calls.setdefault(entry.step_index, []).append(_call(entry, output_limit))
    steps = tuple(
        StepView(step=s.step_index, created_at=s.created_at, text=s.text, provider=s.provider,
                 model=s.model_served, usage=s.usage.to_json(), latency_ms=s.latency_ms,
                 ttft_ms=s.ttft_ms, cost_usd=_cost(s, prices),
                 calls=tuple(calls.pop(s.step_index, [])))
        for s in store.steps(run_id))
    return RunTrace(
        run=record, depth=depth, steps=steps,
        policy_events=tuple(store.policy_events(run_id)), plan=_plan(ledger),
        questions=tuple(store.questions(run_id)), gates=tuple(store.verifications(run_id)),
        cost=_cost_view(steps, prices), changes=changes_of(ledger, store.edits(run_id)),
        commands_ran=sum(1 for e in ledger if e.name in _COMMANDS and e.data is not None
                         and e.refused is None),
        orphan_calls=tuple(c for rest in calls.values() for c in rest),
        drives=tuple(store.drives(run_id)),
        children=tuple(c.run_id for c in store.child_runs(run_id)),
        compactions=tuple(store.compactions(run_id)),
        operator_inputs=tuple(store.operator_inputs(run_id)),
    )


def load_tree(store: Store, run_id: str, *, prices: PriceTable | None = None,
              output_limit: int = OUTPUT_LIMIT) -> list[RunTrace]:
    """A run and every run below it, depth first (a parent before its children).

    A run with no children gives a list of one, so a renderer takes one shape.

    Raises:
        RunNotFound: No such run.
    """
    out: list[RunTrace] = []
    pending: list[tuple[str, int]] = [(run_id, 0)]
    seen: set[str] = set()
    while pending:
        current, depth = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        trace = load_trace(store, current, prices=prices, output_limit=output_limit,
                           depth=depth)
        out.append(trace)
        pending.extend((child, depth + 1) for child in reversed(trace.children))
    return out
