"""What a child runner inherits from its parent's, pinned to exact values (mutation
testing's survivors in `Runner._child`): the approver and the responder (one prompt at
a time), the caller's extras and toolbox, the run ids, and the clock; a step whose first
child waits left without a checkpoint; a root's interrupt that stopped its child
landing at the root's step (mutation testing's survivors in `Actor.run_step` and
`StepWrites`). A tree driven by one scripted replay over a real SQLite store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_core import (
    AgentLimits,
    Answer,
    Event,
    EventKind,
    Policy,
    Runner,
    RunStatus,
    Store,
    ToolContext,
    ToolOutcome,
    ToolSpec,
    default_toolbox,
)
from tests.fakes.clock import ManualClock
from tests.integration.agents.tree_helpers import line, provider, spawn, spec
from tests.unit.run.loop_support import Approves as _Approves
from tests.unit.run.loop_support import workspace


class _Oracle:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def answer(self, question: str) -> Answer | None:
        self.asked.append(question)
        return Answer("blue")


class _UseService:
    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("use_service", "use the caller's service")

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome(f"service {ctx.extras['svc']} in {ctx.run_id}")


def test_a_child_runs_with_its_parents_approver_responder_extras_tools_ids_and_clock(
        tmp_path: Path) -> None:
    script = [line("delegate", spawn("do it")),
              line("child works", ("write_file", {"path": "a.txt", "content": "x"}),
                   ("ask_question", {"question": "which colour?"}), ("use_service", {})),
              line("child: done"), line("all done")]
    ids = iter(["root00000001", "child0000001"])
    approver, oracle = _Approves(), _Oracle()

    def extras(run_id: str, ctx: ToolContext) -> dict[str, Any]:
        return {"svc": f"for {run_id}"}

    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider(tmp_path, script), clock=ManualClock(),
                         approver=approver, responder=oracle, extras=extras,
                         toolbox=default_toolbox().with_tools([_UseService()]),
                         new_id=lambda: next(ids)).start(
            spec(workspace(tmp_path), policy=Policy.from_lists(tier="read-only")))
        assert (outcome.status, outcome.run_id) == (RunStatus.FINISHED, "root00000001")
        (child,) = [r for r in store.tree_runs(outcome.run_id) if r.depth == 1]
        assert (child.run_id, child.status) == ("child0000001", RunStatus.FINISHED)
        assert approver.asked == ["write a.txt"] and oracle.asked == ["which colour?"]
        [question] = store.questions(child.run_id)
        assert (question.answer, question.answered_by) == ("blue", "machine")
        observations = [e.observation for e in store.ledger(child.run_id)]
        assert observations[2] == "service for child0000001 in child0000001"
        # the child's steps are timed on the runner's (manual) clock: no time passed
        assert [s.latency_ms for s in store.steps(child.run_id)] == [0.0, 0.0]
    assert (tmp_path / "ws" / "a.txt").read_text() == "x"


def test_a_step_whose_first_child_waits_is_not_checkpointed_by_its_last_childs_result(
        tmp_path: Path) -> None:
    script = [line("delegate", spawn("ask"), spawn("work")),
              line("", ("ask_question", {"question": "which colour?"}))]
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider(tmp_path, script), clock=ManualClock()).start(
            spec(workspace(tmp_path), limits=AgentLimits(parallel=1)))
        assert outcome.status is RunStatus.PAUSED and outcome.pause is not None
        assert outcome.pause.question == "which colour?"
        first, second = store.ledger(outcome.run_id)
        assert first.observation is None  # the waiting child's result has not landed
        assert second.observation is not None  # the second child ended (the replay is out)
        assert store.last_checkpoint(outcome.run_id) is None


def test_a_roots_interrupt_that_stopped_its_child_lands_at_the_roots_step(
        tmp_path: Path) -> None:
    script = [line("delegate", spawn("write two files")),
              line("child a", ("write_file", {"path": "a.txt", "content": "x"})),
              line("child b", ("write_file", {"path": "b.txt", "content": "x"})),
              line("child: wrote both"), line("all done")]
    with Store(tmp_path / "state.db") as store:

        def interrupt(event: Event) -> None:
            if (event.kind is EventKind.CHECKPOINT and event.root_run_id is not None
                    and event.run_id != event.root_run_id):
                store.post_inbox(event.root_run_id, "interrupt", {})

        outcome = Runner(store, provider(tmp_path, script), clock=ManualClock(),
                         on_event=interrupt).start(spec(workspace(tmp_path)))
        assert (outcome.status, outcome.reason) == (
            RunStatus.INTERRUPTED, "interrupted while children ran")
        assert [(o.kind, o.state, o.step, o.void_reason)
                for o in store.operator_inputs(outcome.run_id)] == [
            ("interrupt", "landed", 0, None)]
