"""spawn_agent: children are runs of their own, bounded by their parent, driven by one
scripted replay for the whole tree (depth-first request order)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core import (
    AgentDef,
    AgentLimits,
    Event,
    Policy,
    RunStatus,
    Store,
    resume_tree,
    resume_tree_with_answer,
    run_tree,
)
from tests.integration.agents.tree_helpers import line, provider, spawn, spec


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


def _observations(store: Store, run_id: str) -> list[str]:
    return [e.observation or "" for e in store.ledger(run_id)]


def test_a_child_is_a_run_of_its_own_and_its_answer_is_the_parents_observation(
        tmp_path: Path, ws: Path) -> None:
    script = [
        line("delegate", spawn("write hello.txt")),
        line("child writes", ("write_file", {"path": "hello.txt", "content": "hi\n"})),
        line("child: wrote hello.txt"),
        line("all done"),
    ]
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script), spec(ws))
        assert outcome.status is RunStatus.FINISHED
        root = store.run(outcome.run_id)
        (child,) = [r for r in store.tree_runs(root.run_id) if r.depth == 1]
        assert child.parent_run_id == root.run_id and child.root_run_id == root.run_id
        assert child.status is RunStatus.FINISHED and child.steps_used == 2
        assert child.goal == "write hello.txt"
        assert (ws / "hello.txt").read_text() == "hi\n"
        (obs,) = _observations(store, root.run_id)
        assert "child: wrote hello.txt" in obs and child.run_id in obs
        assert root.steps_used == 2


def test_a_child_is_refused_what_its_parent_denies_even_when_its_definition_is_silent(
        tmp_path: Path, ws: Path) -> None:
    policy = Policy.from_lists(tier="workspace-write", deny_write=["secret/**"])
    helper = AgentDef("helper", role="Help with files.")  # says nothing about secret/
    script = [
        line("", spawn("write a secret", agent="helper")),
        line("", ("write_file", {"path": "secret/key.txt", "content": "x"})),
        line("could not"),
        line("done"),
    ]
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script),
                           spec(ws, policy=policy, agents={"helper": helper}))
        assert outcome.status is RunStatus.FINISHED
        (child,) = [r for r in store.tree_runs(outcome.run_id) if r.depth == 1]
        (entry,) = store.ledger(child.run_id)
        assert entry.is_error and "secret/**" in (entry.observation or "")
        assert not (ws / "secret").exists()
        assert child.agent == "helper"


def test_a_definition_can_only_narrow(tmp_path: Path, ws: Path) -> None:
    reviewer = AgentDef("reviewer", role="Review; do not edit.", deny_write=["**"])
    script = [
        line("", spawn("try to edit", agent="reviewer")),
        line("", ("write_file", {"path": "a.txt", "content": "x"})),
        line("refused"),
        line("", ("write_file", {"path": "b.txt", "content": "parent may"})),
        line("done"),
    ]
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script),
                           spec(ws, agents={"reviewer": reviewer}))
        assert outcome.status is RunStatus.FINISHED
        assert not (ws / "a.txt").exists() and (ws / "b.txt").read_text() == "parent may"
        (child,) = [r for r in store.tree_runs(outcome.run_id) if r.depth == 1]
        child_policy = Policy.from_json(child.policy)
        parent_policy = Policy.from_json(store.run(outcome.run_id).policy)
        assert any(r.pattern == "**" for r in child_policy.rules)
        assert len(child_policy.rules) >= len(parent_policy.rules)
    assert not any(f.startswith("allow") for f in AgentDef.__dataclass_fields__)


def test_a_read_only_parent_bounds_a_child_whatever_its_definition_says(
        tmp_path: Path, ws: Path) -> None:
    policy = Policy.from_lists(tier="read-only")
    script = [
        line("", spawn("write", agent="writer")),
        line("", ("write_file", {"path": "w.txt", "content": "x"})),
        line("no"),
        line("done"),
    ]
    with Store(tmp_path / "state.db") as store:
        run_tree(store, provider(tmp_path, script),
                 spec(ws, policy=policy, agents={"writer": AgentDef("writer")}))
    assert not (ws / "w.txt").exists()


def test_an_unknown_agent_is_an_error_observation_naming_the_roster(
        tmp_path: Path, ws: Path) -> None:
    script = [line("", spawn("x", agent="nobody")), line("ok, no child")]
    agents = {"reviewer": AgentDef("reviewer"), "tester": AgentDef("tester")}
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script), spec(ws, agents=agents))
        assert outcome.status is RunStatus.FINISHED
        (obs,) = _observations(store, outcome.run_id)
        assert "nobody" in obs and "reviewer, tester" in obs
        assert store.tree_runs(outcome.run_id)[1:] == []


def test_the_roster_is_in_the_tool_description_not_a_schema_enum(
        tmp_path: Path, ws: Path) -> None:
    seen: list[object] = []

    class Spy:
        name = "spy"

        def __init__(self) -> None:
            self.inner = provider(tmp_path, [line("done")])

        def complete(self, request: object, *, step: int, on_token: object = None) -> object:
            seen.append(request)
            return self.inner.complete(request, step=step)  # type: ignore[arg-type]

        def close(self) -> None:
            return None

    agents = {"reviewer": AgentDef("reviewer", role="Review the diff.", model="m-small")}
    with Store(tmp_path / "state.db") as store:
        run_tree(store, Spy(), spec(ws, agents=agents))  # type: ignore[arg-type]
    tools = {t.name: t for t in seen[0].tools}  # type: ignore[attr-defined]
    tool = tools["spawn_agent"]
    assert "reviewer" in tool.description and "Review the diff." in tool.description
    assert "m-small" in tool.description
    assert "enum" not in str(tool.parameters)


def test_max_depth_and_max_children_are_enforced_and_recorded(tmp_path: Path, ws: Path) -> None:
    script = [
        line("", spawn("level 1")),
        line("", spawn("level 2")),          # level 1 tries to go deeper: refused
        line("level 1 done"),
        line("", spawn("a"), spawn("b")),    # the root's second and third: only one fits
        line("a done"),
        line("root done"),
    ]
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script),
                           spec(ws, limits=AgentLimits(max_depth=1, max_children=2)))
        assert outcome.status is RunStatus.FINISHED
        runs = store.tree_runs(outcome.run_id)
        assert [r.depth for r in runs] == [0, 1, 1]
        (level1, a) = runs[1:]
        assert "max_depth" in _observations(store, level1.run_id)[0]
        obs = _observations(store, outcome.run_id)
        assert "max_children" in obs[2] and "a done" in obs[1]
        settings = store.run(outcome.run_id).settings
        assert settings["agents"]["limits"] == {"max_depth": 1, "max_children": 2,
                                                "parallel": 4}


def _rendezvous(mine: str, theirs: str) -> tuple[str, dict[str, object]]:
    """A command that marks its start and waits (up to 20 s) for the other child's mark:
    it prints "met" only when both ran at once."""
    wait = (f"touch {mine}; i=0; while [ ! -e {theirs} ] && [ $i -lt 400 ]; do sleep 0.05;"
            f" i=$((i+1)); done; [ -e {theirs} ] && echo met-{theirs}")
    return ("exec", {"argv": ["sh", "-c", wait]})


def test_parallel_children_overlap_in_time(tmp_path: Path, ws: Path) -> None:
    # Each child waits for the other's mark: run one after the other, neither meets.
    script = [
        line("", spawn("wait for b"), spawn("wait for a")),
        line("", _rendezvous("a.mark", "b.mark")),
        line("a slept"),
        line("", _rendezvous("b.mark", "a.mark")),
        line("b slept"),
        line("both done"),
    ]
    with Store(tmp_path / "state.db") as store:
        policy = Policy.from_lists(tier="workspace-write", allow_exec=["sh -c *"])
        outcome = run_tree(store, provider(tmp_path, script), spec(ws, policy=policy))
        assert outcome.status is RunStatus.FINISHED
        obs = _observations(store, outcome.run_id)
        assert "a slept" in obs[0] and "b slept" in obs[1]
        children = store.child_runs(outcome.run_id)
        seen = " ".join(o for child in children for o in _observations(store, child.run_id))
    assert "met-b.mark" in seen and "met-a.mark" in seen, seen


def test_a_childs_question_pauses_the_tree_and_the_roots_id_answers_it(
        tmp_path: Path, ws: Path) -> None:
    script = [
        line("", spawn("ask first")),
        line("", ("ask_question", {"question": "which colour?"})),
        line("child: blue it is"),
        line("root done"),
    ]
    events: list[Event] = []
    with Store(tmp_path / "state.db") as store:
        prov = provider(tmp_path, script)
        outcome = run_tree(store, prov, spec(ws), on_event=events.append)
        assert outcome.status is RunStatus.PAUSED
        assert outcome.pause is not None and outcome.pause.kind == "question"
        assert outcome.pause.question == "which colour?"
        child_id = outcome.pause.waiting_run_id
        assert store.run(child_id).status is RunStatus.PAUSED
        assert {e.to_json()["root_run_id"] for e in events} == {outcome.run_id}
        done = resume_tree_with_answer(store, provider(tmp_path, script), outcome.run_id,
                                       spec(ws), "blue")
        assert done.status is RunStatus.FINISHED
        assert store.run(child_id).status is RunStatus.FINISHED
        assert "The operator answered: blue" in _observations(store, child_id)[0]
        assert "child: blue it is" in _observations(store, outcome.run_id)[0]


def test_resume_tree_with_an_answer_reaches_the_child_that_asked(
        tmp_path: Path, ws: Path) -> None:
    """`resume_tree(..., answer=...)` is what `resume_tree_with_answer` (deprecated)
    spells (#41 item 5)."""
    script = [
        line("", spawn("ask first")),
        line("", ("ask_question", {"question": "which colour?"})),
        line("child: blue it is"),
        line("root done"),
    ]
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script), spec(ws))
        assert outcome.status is RunStatus.PAUSED and outcome.pause is not None
        child_id = outcome.pause.waiting_run_id
        assert child_id is not None
        done = resume_tree(store, provider(tmp_path, script), outcome.run_id, spec(ws),
                           answer="blue")
        assert done.status is RunStatus.FINISHED
        assert "The operator answered: blue" in _observations(store, child_id)[0]


def test_a_childs_budget_is_drawn_from_the_parents(tmp_path: Path, ws: Path) -> None:
    from harness_core import Budget

    script = [line("", spawn("loop"))] + [
        line("", ("exec", {"argv": ["echo", str(i)]})) for i in range(10)] + [line("end")]
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script),
                           spec(ws, budget=Budget(max_steps=4, max_tokens=None,
                                                  wall_seconds=None)))
        runs = store.tree_runs(outcome.run_id)
        assert sum(r.steps_used for r in runs) <= 4
        assert outcome.status is RunStatus.STOPPED


def test_children_get_the_roots_web_declaration_and_their_definitions_model(
        tmp_path: Path, ws: Path) -> None:
    from dataclasses import replace

    from harness_core import WebAccess
    from tests.integration.agents.tree_helpers import Recording

    web = WebAccess(search=True, allowed_domains=("docs.python.org",), max_uses=2)
    script = [
        line("", spawn("look it up", agent="researcher")),
        line("", spawn("deeper")),
        line("grandchild done"),
        line("child done"),
        line("root done"),
    ]
    log: list[tuple[str, object]] = []
    researcher = AgentDef("researcher", model="m-small", role="Research.")
    with Store(tmp_path / "state.db") as store:
        run_tree(store, Recording(provider(tmp_path, script), log),  # type: ignore[arg-type]
                 replace(spec(ws, agents={"researcher": researcher}), web=web))
    assert [who for who, _ in log] == ["root", "root/0.0", "root/0.0/0.0", "root/0.0", "root"]
    assert all(r.web == web for _, r in log)  # type: ignore[attr-defined]
    models = [r.model for _, r in log]  # type: ignore[attr-defined]
    assert models == ["m-root", "m-small", "m-small", "m-small", "m-root"]
    system = log[1][1].messages[0].content  # type: ignore[attr-defined]
    assert "Your role: Research." in system


def test_a_parent_respawning_the_same_child_is_stopped_as_stalled(
        tmp_path: Path, ws: Path) -> None:
    from harness_core import AgentLimits

    script: list[dict[str, object]] = []
    for _ in range(6):
        script += [line("", spawn("check again")), line("nothing new")]
    script.append(line("never reached"))
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script),
                           spec(ws, limits=AgentLimits(max_children=16)))
        assert outcome.status is RunStatus.STOPPED and "stalled" in outcome.reason
        assert len(store.tree_runs(outcome.run_id)) < 7


def test_a_child_runs_the_trees_gates_once_and_its_parent_sees_the_verdict(
        tmp_path: Path, ws: Path) -> None:
    from dataclasses import replace

    from harness_core import TaskContract, VerifyCriterion

    gate = VerifyCriterion(command="test -f ready.txt")
    script = [
        line("", spawn("say done too early")),
        line("child: done"),                     # the gate fails: the child ends, failed
        line("", spawn("make it ready")),
        line("", ("write_file", {"path": "ready.txt", "content": "y"})),
        line("child: ready"),                    # the gate passes
        line("root done"),
    ]
    base = spec(ws)
    tree_spec = replace(base, contract=TaskContract(goal="lead", verify=(gate,)))
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, script), tree_spec)
        assert outcome.status is RunStatus.FINISHED and outcome.verified is True
        first, second = _observations(store, outcome.run_id)
        assert "gates: failed" in first and "ended failed" in first
        assert "gates: passed" in second and "finished" in second
        children = store.tree_runs(outcome.run_id)[1:]
        assert [c.status for c in children] == [RunStatus.FAILED, RunStatus.FINISHED]
        assert [len(store.verifications(c.run_id)) for c in children] == [1, 1]
