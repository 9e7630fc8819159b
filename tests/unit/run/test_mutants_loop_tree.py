"""The run loop's tree paths pinned to exact values (mutation testing's survivors in
`run/_loop.py`): an `io interrupt` of the root stopping a running child and the tree,
the resumed tree's child under the policy it runs under now (or, asked for, the one it
recorded), what a child records about itself, events tagged with the tree's root, and a
child whose gate fails ending `failed` for its parent to judge. Trees driven by one
scripted replay over a real SQLite store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from harness_core import (
    Event,
    EventKind,
    Policy,
    RunStatus,
    Store,
    TaskContract,
    resume_tree,
    resume_tree_from_stored_policy,
    run_tree,
)
from harness_core.verification import VerifyCriterion
from tests.fakes.clock import ManualClock
from tests.integration.agents.tree_helpers import line, provider, spawn, spec
from tests.unit.run.loop_support import workspace as _ws


def _write(path: str) -> tuple[str, dict[str, Any]]:
    return ("write_file", {"path": path, "content": "x"})


_SCRIPT = [line("delegate", spawn("write two files")),
           line("child a", _write("a.txt")), line("child b", _write("b.txt")),
           line("child: wrote both"), line("all done")]
_RECORDED = Policy.from_lists(tier="full", deny_write=["b.txt"])


def _interrupted(tmp_path: Path, store: Store, events: list[Event]) -> tuple[str, str]:
    """A tree whose root is interrupted (`io interrupt`) while its child runs."""
    def interrupt(event: Event) -> None:
        events.append(event)
        if (event.kind is EventKind.CHECKPOINT and event.root_run_id is not None
                and event.run_id != event.root_run_id):
            store.post_inbox(event.root_run_id, "interrupt", {})

    outcome = run_tree(store, provider(tmp_path, _SCRIPT), spec(_ws(tmp_path),
                                                                policy=_RECORDED),
                       clock=ManualClock(), on_event=interrupt)
    reason = "interrupted by the operator (io interrupt of the tree's root)"
    (child,) = [r for r in store.tree_runs(outcome.run_id) if r.depth == 1]
    assert (child.status, child.reason, child.steps_used) == (RunStatus.INTERRUPTED, reason, 1)
    assert (outcome.status, outcome.reason, outcome.steps) == (
        RunStatus.INTERRUPTED, "interrupted while children ran", 1)  # in its step 0
    assert store.interrupt_pending(outcome.run_id) is False  # the root took it
    return outcome.run_id, child.run_id


def test_a_roots_interrupt_stops_its_running_child_and_the_tree(tmp_path: Path) -> None:
    events: list[Event] = []
    with Store(tmp_path / "state.db") as store:
        root, child = _interrupted(tmp_path, store, events)
        record = store.run(child)
        assert (record.parent_run_id, record.root_run_id, record.depth, record.goal) == (
            root, root, 1, "write two files")
        assert record.policy == _RECORDED.to_json()
        assert record.settings["gate_inputs"] == []
    # a child's events are tagged with its tree's root (the root's own need no tag)
    assert {e.root_run_id for e in events if e.run_id == child} == {root}
    assert {e.root_run_id for e in events if e.run_id == root} == {None}
    child_started = [e for e in events if e.kind is EventKind.RUN_STARTED and e.run_id == child]
    assert [(e.data["parent_run_id"], e.data["depth"]) for e in child_started] == [(root, 1)]


def test_a_resumed_childs_policy_is_its_parents_now(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        root, child = _interrupted(tmp_path, store, [])
        done = resume_tree(store, provider(tmp_path, _SCRIPT), root,
                           spec(_ws(tmp_path), policy=Policy.from_lists(tier="full")),
                           clock=ManualClock())
        assert (done.status, done.steps) == (RunStatus.FINISHED, 2)
        assert [(e.observation or "")[:5] for e in store.ledger(child)] == ["wrote", "wrote"]
    assert (tmp_path / "ws" / "b.txt").exists()


def test_a_tree_resumed_under_its_stored_policy_keeps_the_childs(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        root, child = _interrupted(tmp_path, store, [])
        done = resume_tree_from_stored_policy(
            store, provider(tmp_path, _SCRIPT), root,
            spec(_ws(tmp_path), policy=Policy.from_lists(tier="full")), clock=ManualClock())
        assert done.status is RunStatus.FINISHED
        assert [(e.observation or "")[:7] for e in store.ledger(child)] == [
            "wrote 1", "refused"]
    assert not (tmp_path / "ws" / "b.txt").exists()


def test_a_child_whose_gate_fails_ends_failed_for_its_parent(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    script = [line("delegate", spawn("try")), line("child: done"), line("all done")]
    gated = replace(spec(ws), contract=TaskContract(
        goal="lead the work", verify=(VerifyCriterion(command="test -f never.txt"),)))
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script), gated, clock=ManualClock())
        (child,) = [r for r in store.tree_runs(outcome.run_id) if r.depth == 1]
        assert (child.status, child.reason, child.steps_used) == (
            RunStatus.FAILED, "done, but a gate failed (the parent decides what next)", 1)
        (verdict,) = store.verifications(child.run_id)
        assert (verdict.criterion, verdict.passed) == ("test -f never.txt", False)


def test_a_resumed_tree_counts_the_steps_drawn_before_the_resume(tmp_path: Path) -> None:
    from harness_core import Budget

    script = [line("first", _write("r0.txt")), line("delegate", spawn("write")),
              *[line(f"child {i}", _write(f"c{i}.txt")) for i in range(3)],
              line("child: done"), line("all done")]
    tree_spec = spec(_ws(tmp_path), budget=Budget(max_steps=4, max_tokens=None,
                                                  wall_seconds=None))
    with Store(tmp_path / "state.db") as store:

        def interrupt(event: Event) -> None:
            if event.kind is EventKind.CHECKPOINT and event.data["step"] == 0:
                store.post_inbox(event.run_id, "interrupt", {})

        first = run_tree(store, provider(tmp_path, script), tree_spec, clock=ManualClock(),
                         on_event=interrupt)
        assert (first.status, first.steps) == (RunStatus.INTERRUPTED, 1)
        again = resume_tree(store, provider(tmp_path, script), first.run_id, tree_spec,
                            clock=ManualClock())
        spent = "budget: the tree's step budget of 4 is spent"
        (child,) = [r for r in store.tree_runs(first.run_id) if r.depth == 1]
        # one root step before the resume, one after, two of the child's: four
        assert (child.status, child.steps_used, child.reason) == (RunStatus.STOPPED, 2, spent)
        assert (again.status, again.steps, again.reason) == (RunStatus.STOPPED, 2, spent)


def test_a_child_fingerprints_its_gates_inputs_when_it_starts(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    (ws / "in.txt").write_text("one\n")
    script = [line("delegate", spawn("check")), line("child: done"), line("all done")]
    gate = VerifyCriterion(command="cat in.txt", inputs=("in.txt",))
    gated = replace(spec(ws), contract=TaskContract(goal="lead the work", verify=(gate,)))
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script), gated, clock=ManualClock())
        assert outcome.status is RunStatus.FINISHED
        (child,) = [r for r in store.tree_runs(outcome.run_id) if r.depth == 1]
        (baseline,) = child.settings["gate_inputs"]
        assert (baseline["criterion"], baseline["inputs"], sorted(baseline["fingerprint"])) \
            == ("cat in.txt", ["in.txt"], ["in.txt"])


def test_calls_after_a_spawn_in_the_same_step_still_run(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    script = [line("delegate", spawn("say hi"), _write("after.txt")), line("child: hi"),
              line("all done")]
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script), spec(ws), clock=ManualClock())
        assert outcome.status is RunStatus.FINISHED
        observed = [(e.call_index, e.name) for e in store.ledger(outcome.run_id)]
        assert observed == [(0, "spawn_agent"), (1, "write_file")]
    assert (ws / "after.txt").read_text() == "x"


def test_a_stored_policy_keeps_what_a_changed_definition_would_now_allow(
        tmp_path: Path) -> None:
    from harness_core import AgentDef

    script = [line("delegate", spawn("write two files", agent="writer")),
              line("child a", _write("a.txt")), line("child b", _write("b.txt")),
              line("child: wrote both"), line("all done")]
    strict = {"writer": AgentDef("writer", deny_write=("b.txt",))}
    loose = {"writer": AgentDef("writer")}
    full = Policy.from_lists(tier="full")
    with Store(tmp_path / "state.db") as store:

        def interrupt(event: Event) -> None:
            if (event.kind is EventKind.CHECKPOINT and event.root_run_id is not None
                    and event.run_id != event.root_run_id):
                store.post_inbox(event.root_run_id, "interrupt", {})

        first = run_tree(store, provider(tmp_path, script),
                         spec(_ws(tmp_path), policy=full, agents=strict), clock=ManualClock(),
                         on_event=interrupt)
        assert first.status is RunStatus.INTERRUPTED
        done = resume_tree_from_stored_policy(
            store, provider(tmp_path, script), first.run_id,
            spec(_ws(tmp_path), policy=full, agents=loose), clock=ManualClock())
        assert done.status is RunStatus.FINISHED
        (child,) = [r for r in store.tree_runs(first.run_id) if r.depth == 1]
        assert [(e.observation or "")[:7] for e in store.ledger(child.run_id)] == [
            "wrote 1", "refused"]


def test_resume_tree_with_stored_policy_keeps_what_the_old_name_kept(
        tmp_path: Path) -> None:
    """`resume_tree(..., stored_policy=True)` is what `resume_tree_from_stored_policy`
    (deprecated) spells (#41 item 5)."""
    from harness_core import AgentDef

    script = [line("delegate", spawn("write two files", agent="writer")),
              line("child a", _write("a.txt")), line("child b", _write("b.txt")),
              line("child: wrote both"), line("all done")]
    strict = {"writer": AgentDef("writer", deny_write=("b.txt",))}
    loose = {"writer": AgentDef("writer")}
    full = Policy.from_lists(tier="full")
    with Store(tmp_path / "state.db") as store:

        def interrupt(event: Event) -> None:
            if (event.kind is EventKind.CHECKPOINT and event.root_run_id is not None
                    and event.run_id != event.root_run_id):
                store.post_inbox(event.root_run_id, "interrupt", {})

        first = run_tree(store, provider(tmp_path, script),
                         spec(_ws(tmp_path), policy=full, agents=strict), clock=ManualClock(),
                         on_event=interrupt)
        assert first.status is RunStatus.INTERRUPTED
        done = resume_tree(store, provider(tmp_path, script), first.run_id,
                           spec(_ws(tmp_path), policy=full, agents=loose),
                           stored_policy=True, clock=ManualClock())
        assert done.status is RunStatus.FINISHED
        (child,) = [r for r in store.tree_runs(first.run_id) if r.depth == 1]
        assert [(e.observation or "")[:7] for e in store.ledger(child.run_id)] == [
            "wrote 1", "refused"]


def test_an_interrupt_pending_while_a_child_pauses_is_void_not_kept_for_the_resume(
        tmp_path: Path) -> None:
    """The tree stopped (paused) before the interrupt's step boundary: the interrupt is
    void, with why, so the resume that answers is not stopped by it (#23)."""
    script = [line("delegate", spawn("ask")),
              line("child asks", ("ask_question", {"question": "which?"})),
              line("child: done"), line("all done")]
    with Store(tmp_path / "state.db") as store:

        def interrupt(event: Event) -> None:
            if event.kind is EventKind.TOOL_CALL and event.data["name"] == "ask_question":
                assert event.root_run_id is not None
                store.post_inbox(event.root_run_id, "interrupt", {})

        outcome = run_tree(store, provider(tmp_path, script), spec(_ws(tmp_path)),
                           clock=ManualClock(), on_event=interrupt)
        assert outcome.status is RunStatus.PAUSED
        assert store.interrupt_pending(outcome.run_id) is False
        [void] = store.operator_inputs(outcome.run_id)
        assert (void.kind, void.state) == ("interrupt", "void")
        assert void.void_reason == "the run paused before its next step boundary"


def test_an_approval_a_child_waits_for_is_given_through_the_root(tmp_path: Path) -> None:
    script = [line("delegate", spawn("write")), line("child writes", _write("a.txt")),
              line("child: wrote it"), line("all done")]
    asks = Policy.from_lists(tier="read-only")  # a write needs approval; nobody to ask
    with Store(tmp_path / "state.db") as store:
        paused = run_tree(store, provider(tmp_path, script), spec(_ws(tmp_path), policy=asks),
                          clock=ManualClock())
        assert paused.status is RunStatus.PAUSED and paused.pause is not None
        assert paused.pause.kind == "approval"
        done = resume_tree(store, provider(tmp_path, script), paused.run_id,
                           spec(_ws(tmp_path), policy=asks), approve=True,
                           clock=ManualClock())
        assert done.status is RunStatus.FINISHED
    assert (tmp_path / "ws" / "a.txt").read_text() == "x"
