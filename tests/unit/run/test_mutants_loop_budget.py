"""The run loop's budgets and boundaries pinned to exact values (mutation testing's
survivors in `run/_loop.py`): each run budget stops exactly when reached (by the run's
own check, named as such, not the tree's), a replayed step counted once against the
step budget and priced as the model that served it, a child's cost drawn from its
tree's budget, a steer without text, what every request carries, the checkpoint of a
step that says done, and the caller's extras opened for the run and closed with it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from harness_core import (
    Budget,
    CheckpointState,
    CompletionRequest,
    CompletionResponse,
    Event,
    EventKind,
    Message,
    Runner,
    RunStatus,
    Store,
    ToolCall,
    ToolContext,
    ToolOutcome,
    ToolSpec,
    Usage,
    WebAccess,
    run_tree,
)
from harness_core.documents import default_toolbox
from tests.fakes.clock import ManualClock
from tests.integration.agents import tree_helpers
from tests.unit.run.loop_support import crash_in_step_1 as _crash_in_step_1
from tests.unit.run.loop_support import line as _line
from tests.unit.run.loop_support import scripted as _scripted
from tests.unit.run.loop_support import workspace as _ws
from tests.unit.session.support import Events, spec_for


def _write(path: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": "x"}}


_STEPS = [_line(f"s{i}", _write(f"f{i}.txt")) for i in range(8)]


def _budget_run(tmp_path: Path, budget: Budget, **spec: Any) -> Any:
    clock = ManualClock()

    def tick(event: Event) -> None:
        if event.kind is EventKind.STEP_STARTED:
            clock.advance(1.5)

    with Store(tmp_path / "state.db") as store:
        return Runner(store, _scripted(tmp_path, _STEPS), clock=clock, on_event=tick).start(
            spec_for(_ws(tmp_path), "go", budget=budget, **spec))


def test_each_budget_stops_the_run_on_reaching_it_exactly(tmp_path: Path) -> None:
    def only(**one: Any) -> Budget:
        return Budget(**{"max_steps": None, "max_tokens": None, "wall_seconds": None, **one})

    tokens = _budget_run(tmp_path / "t", only(max_tokens=24))
    assert (tokens.steps, tokens.reason) == (2, "budget: the token budget of 24 is spent"
                                                " (24 used)")
    wall = _budget_run(tmp_path / "w", only(wall_seconds=3))
    assert (wall.steps, wall.reason) == (2, "budget: the wall-clock budget of 3s is spent")
    cost = _budget_run(tmp_path / "c", only(max_cost_usd=1.0),
                       cost_of=lambda model, usage: 0.5)
    assert (cost.steps, cost.reason) == (2, "budget: the cost budget of $1 is spent"
                                            " ($1.0000 derived from [prices])")
    assert {tokens.status, wall.status, cost.status} == {RunStatus.STOPPED}


def test_a_replayed_step_counts_once_and_is_priced_as_served(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    priced: list[tuple[str, int | None]] = []

    def cost_of(model: str, usage: Usage) -> float:
        priced.append((model, usage.total_tokens))
        return 0.01

    stop = Budget(max_steps=2, max_tokens=None, wall_seconds=None)
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, _scripted(tmp_path, _STEPS), clock=ManualClock()).start(
            spec_for(ws, "go", budget=stop))
        _crash_in_step_1(tmp_path / "state.db", first.run_id)
        budget = Budget(max_steps=3, max_tokens=None, wall_seconds=None, max_cost_usd=9.0)
        again = Runner(store, _scripted(tmp_path, _STEPS), clock=ManualClock()).resume(
            first.run_id, spec_for(ws, "go", budget=budget, cost_of=cost_of))
    # steps 0 and 1 (replayed) count two: step 2 is the last the budget allows
    assert (again.status, again.steps, again.reason) == (
        RunStatus.STOPPED, 3, "budget: the step budget of 3 is spent")
    assert set(priced) == {("scripted-replay", 12)}


def test_a_childs_cost_is_drawn_from_its_trees_budget(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    script = [tree_helpers.line("", tree_helpers.spawn("work")),
              *[tree_helpers.line("", ("write_file", {"path": f"c{i}", "content": "x"}))
                for i in range(4)],
              tree_helpers.line("child done"),
              tree_helpers.line("", ("write_file", {"path": "r", "content": "x"})),
              tree_helpers.line("end")]
    budget = Budget(max_steps=None, max_tokens=None, wall_seconds=None, max_cost_usd=1.2)
    spec = replace(tree_helpers.spec(ws, budget=budget), cost_of=lambda model, usage: 0.5)
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, tree_helpers.provider(tmp_path, script), spec,
                           clock=ManualClock())
        (child,) = [r for r in store.tree_runs(outcome.run_id) if r.depth == 1]
        # root step 0 ($0.50), child steps 0 and 1 ($1.50 in all): the tree's budget is
        # spent before the child's step 2 and the root's step 1
        assert (child.status, child.steps_used, child.reason) == (
            RunStatus.STOPPED, 2, "budget: the tree's cost budget of $1.2 is spent"
                                  " ($1.5000 derived from [prices])")
    assert (outcome.status, outcome.steps, outcome.reason) == (
        RunStatus.STOPPED, 1, "budget: the tree's cost budget of $1.2 is spent"
                              " ($1.5000 derived from [prices])")


def test_a_steer_without_text_reaches_the_model_as_an_empty_steer(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    events = Events()
    with Store(tmp_path / "state.db") as store:

        def steer(event: Event) -> None:
            events(event)
            if event.kind is EventKind.CHECKPOINT and event.data["step"] == 0:
                store.post_inbox(event.run_id, "steer", {})

        outcome = Runner(store, _scripted(tmp_path, [_STEPS[0], _line("done")]),
                         clock=ManualClock(), on_event=steer).start(spec_for(ws, "go"))
        assert Message.user("[operator steer] ") in store.messages(outcome.run_id)
    (steered,) = [e for e in events.seen if e.kind is EventKind.STEER]
    assert (steered.run_id, steered.data) == (outcome.run_id, {"text": "", "step": 1})


class _Keeps:
    name = "keeps"

    def __init__(self) -> None:
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        self.requests.append(request)
        calls = (ToolCall("c", "use_service", {}),) if step == 0 else ()
        return CompletionResponse(text="t", tool_calls=calls, usage=Usage(1, 1, 2))

    def close(self) -> None:
        return None


class _Service:
    def __init__(self, run_id: str) -> None:
        self.run_id, self.closed = run_id, False

    def close(self) -> None:
        self.closed = True


class _UseService:
    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("use_service", "use the caller's service")

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        service = ctx.extras["svc"]
        return ToolOutcome(f"service of {service.run_id}, closed={service.closed}")


def test_requests_carry_the_spec_and_extras_live_for_the_run(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    provider = _Keeps()
    opened: list[tuple[str, str]] = []
    services: list[_Service] = []

    def extras(run_id: str, ctx: ToolContext) -> dict[str, Any]:
        opened.append((run_id, ctx.run_id))
        services.append(_Service(run_id))
        return {"svc": services[-1]}

    web = WebAccess(search=True)
    checkpoints: list[Any] = []
    with Store(tmp_path / "state.db") as store:

        def look(event: Event) -> None:
            if event.kind is EventKind.CHECKPOINT:
                last = store.last_checkpoint(event.run_id)
                checkpoints.append(last.state if last is not None else None)

        outcome = Runner(store, provider, clock=ManualClock(), on_event=look, extras=extras,
                         toolbox=default_toolbox().with_tools([_UseService()])).start(
            spec_for(ws, "go", max_tokens=777, web=web))
        (entry,) = store.ledger(outcome.run_id)
        assert entry.observation == f"service of {outcome.run_id}, closed=False"
    assert opened == [(outcome.run_id, outcome.run_id)]
    assert services[0].closed is True
    first = provider.requests[0]
    assert (first.model, first.max_tokens, first.web) == ("recorded", 777, web)
    assert "use_service" in [t.name for t in first.tools]
    assert "write_file" in [t.name for t in first.tools]
    # the step that says done is checkpointed as done before its gates run
    assert checkpoints == [CheckpointState(0), CheckpointState(1, done=True)]


def test_a_fresh_run_starts_with_no_wall_time_drawn(tmp_path: Path) -> None:
    clock = ManualClock()

    def tick(event: Event) -> None:
        if event.kind is EventKind.STEP_STARTED:
            clock.advance(1.0)

    budget = Budget(max_steps=None, max_tokens=None, wall_seconds=2.5)
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, _STEPS), clock=clock, on_event=tick).start(
            spec_for(_ws(tmp_path), "go", budget=budget))
    # 1 s a step from 0: 3 s drawn before step 3 is asked for
    assert (outcome.steps, outcome.reason) == (3, "budget: the wall-clock budget of 2.5s is"
                                                  " spent")


def test_time_after_a_checkpoint_counts_and_is_drawn_when_the_run_stops(
        tmp_path: Path) -> None:
    clock = ManualClock()

    def tick(event: Event) -> None:
        if event.kind is EventKind.CHECKPOINT:
            clock.advance(1.0)  # time spent between steps (the operator's hooks, say)

    budget = Budget(max_steps=None, max_tokens=None, wall_seconds=2.5)
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, _STEPS), clock=clock, on_event=tick).start(
            spec_for(_ws(tmp_path), "go", budget=budget))
        # steps 0-2 each followed by 1 s: the run's own check stops it before step 3
        assert (outcome.steps, outcome.reason) == (3, "budget: the wall-clock budget of 2.5s is"
                                                      " spent")
        assert store.run(outcome.run_id).wall_used == 3.0  # the last second drawn at the end
