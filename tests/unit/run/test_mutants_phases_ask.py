"""A step's completion as the asker records it, pinned to exact values (mutation testing's
survivors in `run/_ask.py`, `Asker.complete`, and `run/_open.py`'s resume): the state a
provider carries between turns recorded with each step and handed back, in step order,
to the provider of a resumed drive, a completion whose provider reported no usage (or
a paused turn with a part estimated) recorded as an estimate, and the first model
without a price warned about once and named by the stop. A provider in the test plays
the vendor's part; real SQLite store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness_core import (
    Budget,
    CarriedState,
    CompletionRequest,
    CompletionResponse,
    EventKind,
    Runner,
    RunStatus,
    Store,
    ToolCall,
    Usage,
)
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import workspace
from tests.unit.session.support import Events, spec_for


class _Carries:
    """Step 0 lists the workspace, step 1 asks to touch a file, step 2 is done; each
    completion carries "state-<step>"; `restored` keeps what a resume handed back."""

    name = "carrier"

    def __init__(self) -> None:
        self.restored: list[tuple[int, str, str | None, str]] = []

    def restore(self, states: Sequence[CarriedState]) -> None:
        self.restored += [(s.step, s.provider, s.answer.content, s.carry) for s in states]

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        calls = {0: (ToolCall("c0", "list_dir", {}),),
                 1: (ToolCall("c1", "exec", {"argv": ["touch", "t.txt"]}),)}.get(step, ())
        return CompletionResponse(text=f"step {step}", tool_calls=calls, usage=Usage(1, 1, 2),
                                  carry=f"state-{step}")

    def close(self) -> None:
        return None


def test_a_resumed_drive_hands_the_provider_the_state_each_step_carried(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with Store(tmp_path / "state.db") as store:
        first = _Carries()
        paused = Runner(store, first, clock=ManualClock()).start(spec_for(ws, "go"))
        assert paused.status is RunStatus.PAUSED and first.restored == []
        second = _Carries()
        done = Runner(store, second, clock=ManualClock()).resume(
            paused.run_id, spec_for(ws, "go"), approve=True)
        assert done.status is RunStatus.FINISHED
    assert second.restored == [(0, "carrier", "step 0", "state-0"),
                               (1, "carrier", "step 1", "state-1")]


class _Silent:
    """Reports no usage at all (a vendor that sends none)."""

    name = "silent"

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        return CompletionResponse(text="done " * 40)

    def close(self) -> None:
        return None


def test_a_completion_without_reported_usage_is_recorded_with_an_estimate(
        tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, _Silent(), clock=ManualClock()).start(
            spec_for(workspace(tmp_path), "go"))
        assert done.status is RunStatus.FINISHED
        [step] = store.steps(done.run_id)
        usage = step.usage
        assert usage.estimated is True
        assert usage.prompt_tokens is not None and usage.prompt_tokens > 0
        assert usage.completion_tokens is not None and usage.completion_tokens > 0
        assert store.run(done.run_id).tokens_used == usage.total_tokens


class _Models(_Carries):
    """`_Carries`, each step served by model "m<step>"."""

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        response = super().complete(request, step=step, on_token=on_token)
        return replace(response, model=f"m{step}")


def test_the_first_unpriced_model_is_warned_about_once_and_named_by_the_stop(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    events = Events()
    priced = spec_for(ws, "go", cost_of=lambda model, usage: None,
                      budget=Budget(max_steps=None, max_tokens=None, wall_seconds=None,
                                    max_cost_usd=1.0))
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, _Models(), clock=ManualClock()).start(spec_for(ws, "go"))
        assert paused.status is RunStatus.PAUSED  # no cost budget yet: nothing drawn
        stopped = Runner(store, _Models(), clock=ManualClock(), on_event=events).resume(
            paused.run_id, priced, approve=True)
        assert (stopped.status, stopped.steps) == (RunStatus.STOPPED, 2)
        assert stopped.reason == ("budget: the cost budget of $1 cannot be enforced: model"
                                  " 'm0' has no price in [prices]")
    warned = [e.data["text"] for e in events.seen if e.kind is EventKind.WARNING]
    assert warned == ["model 'm0' has no price in [prices]: max_cost_usd cannot be enforced,"
                      " so the run stops before its next step"]


class _PausesEstimated:
    """Step 0 pauses its turn once with an estimated count, then finishes it with a
    reported one; step 1 is done."""

    name = "pausing"

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        if step == 1:
            return CompletionResponse(text="done", usage=Usage(1, 1, 2))
        if not request.messages or request.messages[-1].role.value != "assistant":
            return CompletionResponse(text="half", usage=Usage(5, 1, 6, estimated=True),
                                      stop_reason="pause_turn")
        return CompletionResponse(text=" whole", tool_calls=(ToolCall("c", "list_dir", {}),),
                                  usage=Usage(7, 2, 9))

    def close(self) -> None:
        return None


def test_a_paused_turns_usage_is_estimated_when_a_part_of_it_was(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, _PausesEstimated(), clock=ManualClock()).start(
            spec_for(workspace(tmp_path), "go"))
        assert done.status is RunStatus.FINISHED
        first = store.steps(done.run_id)[0]
        assert first.text == "half whole"
        assert (first.usage.prompt_tokens, first.usage.total_tokens, first.usage.estimated) \
            == (12, 15, True)
