"""Every way a run is stopped, through the real loop with an injected `ManualClock`: the
step, token, wall-clock and cost budgets, and both stall signals. Each test pins the
step the stop lands on and the reason, so a budget check that is removed, moved or
off by one fails here. Also the budget defaults: no token ceiling, and tokens counted
as billed (cache reads at a fraction)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    Budget,
    CompletionRequest,
    CompletionResponse,
    Policy,
    Runner,
    RunStatus,
    Store,
    ToolCall,
    Usage,
)
from tests.fakes.clock import ManualClock
from tests.unit.session.support import spec_for


class MeteredProvider:
    """Asks for one `list_dir` of a new path each step (so nothing stalls), reports
    `usage` for every completion, and lets `seconds` pass on the clock while it thinks."""

    name = "metered"

    def __init__(self, clock: ManualClock, usage: Usage, seconds: float = 0.0,
                 calls: list[tuple[str, dict[str, Any]]] | None = None) -> None:
        self.clock, self.usage, self.seconds = clock, usage, seconds
        self.calls = calls
        self.asked = 0

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        self.asked += 1
        self.clock.advance(self.seconds)
        name, args = self.calls[step % len(self.calls)] if self.calls else (
            "write_file", {"path": f"f{step}.txt", "content": str(step)})
        return CompletionResponse(text=f"step {step}", tool_calls=(ToolCall(f"c{step}", name,
                                                                            args),),
                                  usage=self.usage, model="metered", provider=self.name)

    def close(self) -> None:
        return None


def _run(tmp_path: Path, provider: MeteredProvider, clock: ManualClock,
         **spec: Any) -> tuple[RunStatus, str, int]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider, clock=clock).start(spec_for(ws, "go", **spec))
        record = store.run(outcome.run_id)
    return outcome.status, outcome.reason, record.steps_used


def _budget(**fields: Any) -> Budget:
    base: dict[str, Any] = {"max_steps": None, "max_tokens": None, "wall_seconds": None}
    base.update(fields)
    return Budget(**base)


def test_the_step_budget_stops_after_exactly_max_steps(tmp_path: Path) -> None:
    clock = ManualClock()
    provider = MeteredProvider(clock, Usage(10, 2))
    status, reason, steps = _run(tmp_path, provider, clock, budget=_budget(max_steps=3))
    assert (status, steps, provider.asked) == (RunStatus.STOPPED, 3, 3)
    assert reason == "budget: the step budget of 3 is spent"


def test_the_token_budget_stops_once_spent(tmp_path: Path) -> None:
    clock = ManualClock()
    provider = MeteredProvider(clock, Usage(prompt_tokens=10, completion_tokens=2))
    status, reason, steps = _run(tmp_path, provider, clock, budget=_budget(max_tokens=100))
    # 12 a step: 96 after 8 steps (a 9th may start), 108 after 9 (no 10th)
    assert (status, steps) == (RunStatus.STOPPED, 9)
    assert reason == "budget: the token budget of 100 is spent (108 used)"


def test_cache_reads_count_as_billed_against_the_token_budget(tmp_path: Path) -> None:
    clock = ManualClock()
    usage = Usage(prompt_tokens=1000, completion_tokens=10, total_tokens=1010,
                  cache_read_tokens=900)
    assert usage.billed_tokens(0.1) == 100 + 90 + 10
    assert usage.billed_tokens() == 1010  # weight 1: every cached token as a fresh one
    provider = MeteredProvider(clock, usage)
    status, reason, steps = _run(tmp_path, provider, clock, budget=_budget(max_tokens=1000))
    # 200 billed a step, not 1010: five steps fit under 1000
    assert (status, steps) == (RunStatus.STOPPED, 5)
    assert reason.endswith("(1000 used)")


def test_the_cache_read_weight_is_the_operators_to_set(tmp_path: Path) -> None:
    clock = ManualClock()
    usage = Usage(prompt_tokens=1000, completion_tokens=0, cache_read_tokens=1000)
    provider = MeteredProvider(clock, usage)
    status, _, steps = _run(tmp_path, provider, clock,
                            budget=_budget(max_tokens=1000, cache_read_weight=0.5))
    assert (status, steps) == (RunStatus.STOPPED, 2)


def test_a_total_without_parts_is_drawn_whole() -> None:
    assert Usage(total_tokens=77).billed_tokens(0.1) == 77
    assert Usage().billed_tokens(0.1) == 0


def test_the_wall_clock_budget_stops_on_the_injected_clock(tmp_path: Path) -> None:
    clock = ManualClock()
    provider = MeteredProvider(clock, Usage(1, 1), seconds=10.0)
    status, reason, steps = _run(tmp_path, provider, clock, budget=_budget(wall_seconds=25))
    # 10 s a step: 20 s after two steps (a third may start), 30 s after three
    assert (status, steps) == (RunStatus.STOPPED, 3)
    assert reason == "budget: the wall-clock budget of 25s is spent"


def test_the_cost_budget_stops_once_the_derived_cost_reaches_it(tmp_path: Path) -> None:
    clock = ManualClock()
    provider = MeteredProvider(clock, Usage(1000, 100))
    status, reason, steps = _run(tmp_path, provider, clock, budget=_budget(max_cost_usd=1.2),
                                 cost_of=lambda model, usage: 0.5)
    # $0.50 a step: $1.00 after two (a third may start), $1.50 after three
    assert (status, steps) == (RunStatus.STOPPED, 3)
    assert reason == "budget: the cost budget of $1.2 is spent ($1.5000 derived from [prices])"


def test_an_unpriced_model_stops_a_cost_budget_it_cannot_enforce(tmp_path: Path) -> None:
    clock = ManualClock()
    provider = MeteredProvider(clock, Usage(1000, 100))
    status, reason, steps = _run(tmp_path, provider, clock,
                                 budget=_budget(max_cost_usd=0.01, max_steps=4),
                                 cost_of=lambda model, usage: None)
    assert (status, steps) == (RunStatus.STOPPED, 1) and "cannot be enforced" in reason


def test_stall_the_same_call_window_times_in_a_row(tmp_path: Path) -> None:
    clock = ManualClock()
    # a call that changes the workspace every time: only bare repetition can catch it
    calls = [("exec", {"argv": ["sh", "-c", "echo x >> log.txt"]})]
    provider = MeteredProvider(clock, Usage(1, 1), calls=calls)
    status, reason, steps = _run(tmp_path, provider, clock, budget=_budget(max_steps=20),
                                 stall_window=4,
                                 policy=Policy.from_lists(tier="full"))
    # the fourth call in a row stops the run before its step is checkpointed; the step
    # it stopped in counts (every view lists it: steps 0-3)
    assert (status, steps) == (RunStatus.STOPPED, 4)
    assert reason.startswith("stalled: the same call repeated 4 times in a row: exec:")


def test_stall_a_repeating_call_while_the_workspace_stands_still(tmp_path: Path) -> None:
    clock = ManualClock()
    calls = [("list_dir", {"path": "."}), ("read_file", {"path": "nothing.txt"})]
    provider = MeteredProvider(clock, Usage(1, 1), calls=calls)
    status, reason, steps = _run(tmp_path, provider, clock, budget=_budget(max_steps=20),
                                 stall_window=6)
    # list_dir at steps 0, 2, 4: the third time (step 4, not checkpointed) stops the run,
    # and step 4 counts: five steps were taken
    assert (status, steps) == (RunStatus.STOPPED, 5)
    assert reason == ("stalled: the workspace did not change while list_dir:{\"path\": \".\"}"
                      " repeated 3 times within the last 6 calls")


def test_the_window_signal_does_not_fire_while_the_workspace_changes(tmp_path: Path) -> None:
    clock = ManualClock()
    calls = [("list_dir", {"path": "."}), ("write_file", {"path": "a.txt", "content": "x"}),
             ("list_dir", {"path": "."}), ("write_file", {"path": "b.txt", "content": "y"})]
    provider = MeteredProvider(clock, Usage(1, 1), calls=calls)
    status, reason, steps = _run(tmp_path, provider, clock, budget=_budget(max_steps=5),
                                 stall_window=6)
    assert (status, steps) == (RunStatus.STOPPED, 5) and "step budget" in reason


def test_defaults_bound_a_run_by_steps_and_wall_clock_not_tokens() -> None:
    budget = Budget()
    assert budget.max_tokens is None and budget.max_cost_usd is None
    assert budget.max_steps == 50 and budget.wall_seconds == 1800.0


@pytest.mark.parametrize("steps", [100])
def test_an_ordinary_long_run_is_not_stopped_by_tokens_by_default(tmp_path: Path,
                                                                  steps: int) -> None:
    clock = ManualClock()
    # a 100-step run re-sending a growing prompt: 5,000 tokens a step, 500,000 in all
    provider = MeteredProvider(clock, Usage(prompt_tokens=4800, completion_tokens=200))
    status, reason, used = _run(tmp_path, provider, clock,
                                budget=Budget(max_steps=steps, wall_seconds=None))
    assert (status, used) == (RunStatus.STOPPED, steps) and "step budget" in reason
