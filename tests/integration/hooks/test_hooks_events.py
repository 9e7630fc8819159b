"""post_tool, stop, run_start, child_stop and pre_compact hooks: what each adds to the
conversation or refuses, checked in the requests the model receives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_core import Budget, Runner, RunStatus, Store, run_tree
from harness_core.hooks import HookProcesses, HookRunner
from harness_core.sandbox import BackendChoice, SandboxConfig, SandboxSpec, launcher, select
from tests.integration.agents.tree_helpers import Recording, line, provider, spawn
from tests.integration.hooks.hook_helpers import counted, hook, script, spec

WRITE = line("write it", ("write_file", {"path": "a.txt", "content": "x  \n"}))
DONE = line("done")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


def _contents(request: Any) -> str:
    return "\n".join(str(m.content) for m in request.messages)


def test_a_post_tool_hooks_context_reaches_the_next_request(tmp_path: Path, ws: Path) -> None:
    note = script(tmp_path, "note", """
        assert call["outcome"]["changed_files"] == ["a.txt"], call
        print(json.dumps({"context": "formatted " + call["arguments"]["path"]}))
    """)
    log: list[tuple[str, Any]] = []
    with Store(tmp_path / "state.db") as store:
        runner = Runner(store, Recording(provider(tmp_path, [WRITE, DONE]), log))  # type: ignore[arg-type]
        outcome = runner.start(spec(ws, hook("post_tool", note, name="fmt")))
        assert outcome.status is RunStatus.FINISHED
        assert "[hook fmt] formatted a.txt" not in _contents(log[0][1])
        second = _contents(log[1][1])
        assert "wrote" in second and "[hook fmt] formatted a.txt" in second
        (entry,) = store.ledger(outcome.run_id, 0)
        assert entry.observation is not None and entry.observation.endswith(
            "[hook fmt] formatted a.txt")
        (event,) = store.policy_events(outcome.run_id)
        assert (event.act, event.verdict, event.layer, event.rule) == (
            "tool", "allow", "hook", "fmt")


def test_a_post_tool_hook_exit_2_gives_its_stderr_to_the_model(tmp_path: Path, ws: Path) -> None:
    lint = script(tmp_path, "lint", """
        print("a.txt: trailing whitespace on line 1", file=sys.stderr)
        sys.exit(2)
    """)
    log: list[tuple[str, Any]] = []
    with Store(tmp_path / "state.db") as store:
        runner = Runner(store, Recording(provider(tmp_path, [WRITE, DONE]), log))  # type: ignore[arg-type]
        outcome = runner.start(spec(ws, hook("post_tool", lint, name="lint")))
        assert "[hook lint] a.txt: trailing whitespace on line 1" in _contents(log[1][1])
        assert (ws / "a.txt").read_text() == "x  \n"  # post_tool never undoes the call
        (event,) = store.policy_events(outcome.run_id)
        assert (event.verdict, event.rule) == ("allow", "lint")  # nothing was refused


def test_a_failing_post_tool_hook_is_reported_and_the_run_goes_on(
        tmp_path: Path, ws: Path) -> None:
    broken = script(tmp_path, "broken", "sys.exit(3)\n")
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider(tmp_path, [WRITE, DONE])).start(
            spec(ws, hook("post_tool", broken, name="broken")))
        assert outcome.status is RunStatus.FINISHED
        (event,) = store.policy_events(outcome.run_id)
        assert event.verdict == "error" and "exited with status 3" in event.reason
        assert "refused" not in event.reason  # fail closed is for pre_tool only


def test_a_stop_hook_sends_the_run_on_with_its_reason(tmp_path: Path, ws: Path) -> None:
    log_file = tmp_path / "stops.log"
    stop = script(tmp_path, "stop", f"""
        count({str(log_file)!r})
        if len(open({str(log_file)!r}).read().splitlines()) == 1:
            print("run the tests before you stop", file=sys.stderr)
            sys.exit(2)
    """)
    log: list[tuple[str, Any]] = []
    script_lines = [line("all done"), line("tests pass; done")]
    with Store(tmp_path / "state.db") as store:
        runner = Runner(store, Recording(provider(tmp_path, script_lines), log))  # type: ignore[arg-type]
        outcome = runner.start(spec(ws, hook("stop", stop, name="tests-first")))
        assert outcome.status is RunStatus.FINISHED and outcome.steps == 2
        assert counted(log_file) == ["stop None", "stop None"]
        assert "[hook tests-first] run the tests before you stop" in _contents(log[1][1])
        (event,) = store.policy_events(outcome.run_id)
        assert (event.act, event.verdict, event.rule) == ("stop", "deny", "tests-first")


def test_a_stop_hook_that_never_agrees_is_bounded_by_the_budget(
        tmp_path: Path, ws: Path) -> None:
    never = script(tmp_path, "never", 'print(json.dumps({"decision": "deny", "reason": "no"}))\n')
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider(tmp_path, [line("done")] * 5)).start(
            spec(ws, hook("stop", never), budget=Budget(max_steps=3)))
        assert outcome.status is RunStatus.STOPPED and "step budget" in outcome.reason


def test_a_run_start_hook_adds_context_or_refuses_the_run(tmp_path: Path, ws: Path) -> None:
    hello = script(tmp_path, "hello", """
        assert call["resumed"] is False and call["goal"] == "lead the work"
        print(json.dumps({"context": "the build is green"}))
    """)
    log: list[tuple[str, Any]] = []
    with Store(tmp_path / "state.db") as store:
        Runner(store, Recording(provider(tmp_path, [DONE]), log)).start(  # type: ignore[arg-type]
            spec(ws, hook("run_start", hello, name="hello")))
        assert "[hook hello] the build is green" in _contents(log[0][1])
    no = script(tmp_path, "no", 'print("the tree is dirty", file=sys.stderr); sys.exit(2)\n')
    with Store(tmp_path / "state2.db") as store:
        outcome = Runner(store, provider(tmp_path, [DONE])).start(
            spec(ws, hook("run_start", no, name="clean-tree")))
        assert outcome.status is RunStatus.ERRORED and outcome.steps == 0
        assert "hook clean-tree: the tree is dirty" in outcome.reason


def test_a_child_stop_hook_sees_the_child_and_adds_to_the_parents_observation(
        tmp_path: Path, ws: Path) -> None:
    seen = tmp_path / "child.json"
    watch = script(tmp_path, "watch", f"""
        open({str(seen)!r}, "w").write(json.dumps(call["child"]))
        print(json.dumps({{"context": "child reviewed"}}))
    """)
    lines = [line("delegate", spawn("say hi")), line("child: hi"), line("all done")]
    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, provider(tmp_path, lines),
                           spec(ws, hook("child_stop", watch, name="watch")))
        assert outcome.status is RunStatus.FINISHED
        child = json.loads(seen.read_text())
        assert child["status"] == "finished" and child["final"] == "child: hi"
        (entry,) = store.ledger(outcome.run_id, 0)
        assert entry.observation is not None and "[hook watch] child reviewed" in (
            entry.observation)
        assert [(r.event, r.hook) for r in store.hook_runs(outcome.run_id)] == [
            ("child_stop", "watch")]


def _runner_for(tmp: Path, ws: Path, store: Store, *hooks: Any) -> HookRunner:
    off = select(SandboxConfig(backend=BackendChoice.OFF), env={"PATH": "/usr/bin:/bin"})
    processes = HookProcesses(ws, launcher(off, SandboxSpec(workdir=ws)), {})
    return HookRunner(tuple(hooks), processes, store=store, run_id="r1", emit=lambda e: None,
                      ask=None)


@pytest.mark.parametrize(("body", "proceed", "instructions"), [
    ("", True, ""),
    ('print(json.dumps({"context": "keep the failing test names"}))\n', True,
     "keep the failing test names"),
    ('print("not now", file=sys.stderr); sys.exit(2)\n', False, ""),
    ("sys.exit(1)\n", False, ""),
])
def test_the_pre_compact_call_site(tmp_path: Path, ws: Path, body: str, proceed: bool,
                                   instructions: str) -> None:
    check = "assert (call['messages'], call['tokens'], call['step']) == (40, 90000, 3)\n"
    program = script(tmp_path, "compact", check + body)
    with Store(tmp_path / "state.db") as store:
        hooks = _runner_for(tmp_path, ws, store, hook("pre_compact", program, name="pc"))
        verdict = hooks.pre_compact(3, messages=40, tokens=90_000)
        assert verdict.proceed is proceed and verdict.instructions == instructions
        if not proceed:
            assert verdict.reason.startswith("hook pc")
        again = hooks.pre_compact(3, messages=40, tokens=90_000)
        assert again == verdict  # recorded: the same step's call is replayed


def test_a_hook_never_sees_a_provider_key(tmp_path: Path, ws: Path) -> None:
    dump = tmp_path / "env.json"
    spy = script(tmp_path, "spy", f"open({str(dump)!r}, 'w').write(json.dumps(dict(os.environ)))\n")
    env = {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": "sk-ant-hook-secret", "LANG": "C.UTF-8"}
    with Store(tmp_path / "state.db") as store:
        Runner(store, provider(tmp_path, [DONE])).start(
            spec(ws, hook("run_start", spy), env=env, provider_keys=("sk-ant-hook-secret",)))
    seen = json.loads(dump.read_text())
    assert "sk-ant-hook-secret" not in json.dumps(seen) and seen.get("LANG") == "C.UTF-8"


def test_a_pre_tool_hook_can_refuse_a_spawn(tmp_path: Path, ws: Path) -> None:
    no_children = script(tmp_path, "nokids", """
        assert call["arguments"]["goal"] == "say hi"
        print(json.dumps({"decision": "ask", "reason": "children need a person"}))
    """)
    lines = [line("delegate", spawn("say hi")), line("all done alone")]
    log: list[tuple[str, Any]] = []

    class Linear(Recording):
        """The root's lines in order: the scripted provider's static split of a tree
        cannot know that a hook will refuse the spawn."""

        def plan_tree(self, starts: Any) -> None:
            return None

    with Store(tmp_path / "state.db") as store:
        outcome = run_tree(store, Linear(provider(tmp_path, lines), log),  # type: ignore[arg-type]
                           spec(ws, hook("pre_tool", no_children, name="nokids",
                                         matcher="spawn_agent")))
        assert outcome.status is RunStatus.FINISHED
        assert store.tree_runs(outcome.run_id) == [store.run(outcome.run_id)]  # no child
        (entry,) = store.ledger(outcome.run_id, 0)
        assert entry.observation is not None
        assert "refused: hook nokids: children need a person" in entry.observation
