"""Compaction as the loop drives it, pinned to exact values (mutation testing's survivors
in `run/_ask.py`, `Asker.compact`/`prior_cost`/`complete`, and `run/_open.py`'s
compactor): the summary asked for before the step that would pass the threshold, its
tokens drawn with that step, its cost drawn from the cost budget (and again after a
resume), a `pre_compact` hook's refusal skipping it, a failed summary erroring the run,
the cache key every request carries, no elision under compaction, and a child's
summary drawn from its tree's cost budget. A provider in the test plays the vendor's
part (the usage a real one reports); real SQLite store."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harness_core import (
    Budget,
    CompletionRequest,
    CompletionResponse,
    EventKind,
    ProviderError,
    Runner,
    RunStatus,
    Store,
    ToolCall,
    Usage,
)
from harness_core.hooks import HookConfig, HookEvent
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import workspace
from tests.unit.session.support import Events, spec_for

_SUMMARY_USAGE = Usage(100, 7, 107)


class _Vendor:
    """Steps 0-2 each write a file, each request reported bigger (the third passes half
    of a 1,000-token window); step `pause_at` asks to touch a file (an approval); a
    summary request answers "SUMMARY" (or fails, `fail_summary`); the last step is done."""

    name = "vendor"

    def __init__(self, *, last: int = 4, pause_at: int | None = None,
                 fail_summary: bool = False) -> None:
        self.last, self.pause_at, self.fail_summary = last, pause_at, fail_summary
        self.requests: list[tuple[int, CompletionRequest]] = []

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        self.requests.append((step, request))
        if request.purpose == "compact":
            if self.fail_summary:
                raise ProviderError("summary refused")
            return CompletionResponse(text="SUMMARY", usage=_SUMMARY_USAGE, model="m-sum")
        prompt = 100 + 250 * step if step < 3 else 150  # the summary made it small again
        usage = Usage(prompt, 10, prompt + 10)
        if step == self.last:
            return CompletionResponse(text="done", usage=usage, model="m")
        if step == self.pause_at:
            call = ToolCall(f"c{step}", "exec", {"argv": ["touch", "t.txt"]})
        else:
            call = ToolCall(f"c{step}", "write_file", {"path": f"f{step}.txt", "content": "x"})
        return CompletionResponse(text=f"step {step}", tool_calls=(call,), usage=usage,
                                  model="m")

    def close(self) -> None:
        return None


def _cost(model: str, usage: Usage) -> float:
    """A dollar per 1,000 tokens for the summary model, a cent per 1,000 for the other."""
    rate = 1.0 if model == "m-sum" else 0.01
    return rate * (usage.total_tokens or 0) / 1000


def _spec(ws: Path, **overrides: Any) -> Any:
    return spec_for(ws, "go", context_strategy="compact", context_window=1000,
                    compact_threshold=0.5, compact_keep_steps=1, **overrides)


def test_the_summary_is_asked_before_the_step_that_would_pass_and_its_tokens_drawn(
        tmp_path: Path) -> None:
    events = Events()
    vendor = _Vendor()
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, vendor, clock=ManualClock(), on_event=events).start(
            _spec(workspace(tmp_path)))
        assert (done.status, done.steps) == (RunStatus.FINISHED, 5)
        [made] = store.compactions(done.run_id)
        assert (made.step_index, made.summary, made.model_served) == (3, "SUMMARY", "m-sum")
        assert store.run(done.run_id).tokens_used == 110 + 360 + 610 + 160 + 160 + 107
    assert [(step, r.purpose) for step, r in vendor.requests] == [
        (0, "step"), (1, "step"), (2, "step"), (3, "compact"), (3, "step"), (4, "step")]
    # every request of the run carries one cache key: the run's id
    assert {r.cache_key for _, r in vendor.requests} == {done.run_id}
    after = vendor.requests[4][1].messages
    assert any("SUMMARY" in (m.content or "") for m in after)
    # the opening messages (system prompt, goal) stay ahead of the summary
    opening = vendor.requests[0][1].messages
    assert after[:len(opening)] == opening and "SUMMARY" in (after[len(opening)].content or "")
    phases = [(e.data["step"], e.data["phase"]) for e in events.seen
              if e.kind is EventKind.COMPACTION]
    assert phases == [(3, "started"), (3, "done")]


def test_a_summarys_cost_is_drawn_from_the_cost_budget(tmp_path: Path) -> None:
    budget = Budget(max_steps=None, max_tokens=None, wall_seconds=None, max_cost_usd=0.1)
    with Store(tmp_path / "state.db") as store:
        stopped = Runner(store, _Vendor(last=9), clock=ManualClock()).start(
            _spec(workspace(tmp_path), budget=budget, cost_of=_cost))
        assert (stopped.status, stopped.steps) == (RunStatus.STOPPED, 4)
        # steps 0-3: 0.0011 + 0.0036 + 0.0061 + 0.0016; the summary: 0.107
        assert stopped.reason == ("budget: the cost budget of $0.1 is spent ($0.1194"
                                  " derived from [prices])")


def test_a_failed_summary_errors_the_run_naming_the_compaction(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        failed = Runner(store, _Vendor(fail_summary=True), clock=ManualClock()).start(
            _spec(workspace(tmp_path)))
        assert (failed.status, failed.steps) == (RunStatus.ERRORED, 3)
        assert failed.reason == "provider (compaction): summary refused"
        assert store.compactions(failed.run_id) == []


def test_a_resume_draws_the_cost_of_the_steps_and_summaries_before_it(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    budget = Budget(max_steps=None, max_tokens=None, wall_seconds=None, max_cost_usd=0.1205)
    spec = _spec(ws, budget=budget, cost_of=_cost)
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, _Vendor(last=9, pause_at=4), clock=ManualClock()).start(spec)
        assert (paused.status, paused.steps) == (RunStatus.PAUSED, 5)
        again = Runner(store, _Vendor(last=9, pause_at=4), clock=ManualClock()).resume(
            paused.run_id, spec, approve=True)
        # steps 0-4 and the summary at step 3: 0.0011 + 0.0036 + 0.0061 + 0.0016 + 0.0016
        # + 0.107; the resumed drive stops at step 5's boundary
        assert (again.status, again.steps) == (RunStatus.STOPPED, 5)
        assert again.reason == ("budget: the cost budget of $0.1205 is spent ($0.1210"
                                " derived from [prices])")


def test_a_resume_draws_the_cost_of_a_summary_made_in_the_step_it_paused_in(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    budget = Budget(max_steps=None, max_tokens=None, wall_seconds=None, max_cost_usd=0.1205)
    spec = _spec(ws, budget=budget, cost_of=_cost)
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, _Vendor(last=9, pause_at=3), clock=ManualClock()).start(spec)
        assert (paused.status, paused.steps) == (RunStatus.PAUSED, 4)
        assert [c.step_index for c in store.compactions(paused.run_id)] == [3]
        again = Runner(store, _Vendor(last=9, pause_at=3), clock=ManualClock()).resume(
            paused.run_id, spec, approve=True)
        # as an unpaused run: steps 0-4 and the summary made at step 3 are drawn, and the
        # run stops at step 5's boundary with $0.1210
        assert (again.status, again.steps) == (RunStatus.STOPPED, 5)
        assert again.reason == ("budget: the cost budget of $0.1205 is spent ($0.1210"
                                " derived from [prices])")


def test_a_pre_compact_hook_that_refuses_skips_the_summary(tmp_path: Path) -> None:
    program = tmp_path / "no.py"
    program.write_text("import sys\nprint('not now', file=sys.stderr)\nsys.exit(2)\n")
    hook = HookConfig(event=HookEvent.PRE_COMPACT, command=(sys.executable, str(program)),
                      name="keep-all", scope="user")
    events = Events()
    vendor = _Vendor()
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, vendor, clock=ManualClock(), on_event=events).start(
            _spec(workspace(tmp_path), hooks=(hook,)))
        assert done.status is RunStatus.FINISHED
        assert store.compactions(done.run_id) == []
    assert "compact" not in [r.purpose for _, r in vendor.requests]
    refused = [e.data for e in events.seen if e.kind is EventKind.COMPACTION]
    assert [(d["step"], d["phase"]) for d in refused] == [(3, "started"), (3, "refused")]
    assert "not now" in refused[1]["reason"]


class _Reads:
    """Steps 0-5 each read a different big file; step 6 is done."""

    name = "reader"

    def __init__(self) -> None:
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        self.requests.append(request)
        calls = ((ToolCall(f"c{step}", "read_file", {"path": f"b{step}.txt"}),)
                 if step < 6 else ())
        return CompletionResponse(text=f"step {step}", tool_calls=calls, usage=Usage(1, 1, 2))

    def close(self) -> None:
        return None


def test_under_compaction_a_context_ceiling_elides_nothing(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    for n in range(6):
        (ws / f"b{n}.txt").write_text(f"file {n} " * 300)
    vendor = _Reads()
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, vendor, clock=ManualClock()).start(
            spec_for(ws, "go", context_strategy="compact", context_window=100_000,
                     context_max_tokens=500))
        assert done.status is RunStatus.FINISHED
        recorded = [m.content for m in store.messages(done.run_id) if m.role.value == "tool"]
    # every observation reaches the last request whole: none gave way to a marker
    last = vendor.requests[-1].messages
    assert [m.content for m in last if m.role.value == "tool"] == recorded
    assert len(recorded) == 6


class _TreeVendor:
    """The root spawns one child and is then done; the child is `_Vendor` (a summary
    at its step 3, done at its step 4)."""

    name = "tree-vendor"

    def __init__(self) -> None:
        self.child = _Vendor()

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        goal = next(m.content for m in request.messages if m.role.value == "user")
        if "child work" in (goal or ""):
            return self.child.complete(request, step=step, on_token=on_token)
        if step == 0:
            return CompletionResponse(
                text="delegate", usage=Usage(1, 1, 2), model="m",
                tool_calls=(ToolCall("s0", "spawn_agent", {"goal": "child work"}),))
        return CompletionResponse(text="done", usage=Usage(1, 1, 2), model="m")

    def close(self) -> None:
        return None


def test_a_childs_summary_is_drawn_from_the_trees_cost_budget(tmp_path: Path) -> None:
    budget = Budget(max_steps=None, max_tokens=None, wall_seconds=None, max_cost_usd=0.1)
    vendor = _TreeVendor()
    with Store(tmp_path / "state.db") as store:
        stopped = Runner(store, vendor, clock=ManualClock()).start(
            _spec(workspace(tmp_path), budget=budget, cost_of=_cost))
        (child,) = [r for r in store.tree_runs(stopped.run_id) if r.depth == 1]
        assert [c.step_index for c in store.compactions(child.run_id)] == [3]
        # the child's steps 0-3 (0.0011 + 0.0036 + 0.0061 + 0.0016), its summary (0.107)
        # and the root's step 0 (0.00002): the root stops at its step 1's boundary
        assert (stopped.status, stopped.steps) == (RunStatus.STOPPED, 1)
        assert stopped.reason == ("budget: the tree's cost budget of $0.1 is spent"
                                  " ($0.1194 derived from [prices])")
