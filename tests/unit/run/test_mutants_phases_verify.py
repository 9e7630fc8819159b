"""The checks at a final answer and the resume that picks a run up, pinned to exact values
(mutation testing's survivors in `run/_verify.py`, `Verifier`, and `Runner.resume`,
`_loop`, `_start_hooks`): a stop hook that sends the run on before the gates, a
`run_start` hook's context and refusal (on a start and on a resume), the call a tool
hook is told of, background handles ended before the gates, a run that crashed after
its final answer's checks ending as they decided without running them again, the
output schema a run recorded holding on a resume, and the `resume` input each drive
records. Real runs of the shipped scripted provider over a real SQLite store; hooks and
gates are real programs."""

from __future__ import annotations

import json
import sqlite3
import sys
import textwrap
from pathlib import Path

from harness_core import Budget, EventKind, Policy, Runner, RunStatus, Store, TaskContract
from harness_core.hooks import HookConfig, HookEvent
from harness_core.verification import VerifyCriterion
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import call, line, scripted, workspace
from tests.unit.session.support import Events, spec_for

_TOUCH = call("exec", argv=["touch", "approved.txt"])


def _hook(tmp_path: Path, event: str, name: str, body: str) -> HookConfig:
    """A hook program: `call` is what it read on stdin; `body` decides."""
    program = tmp_path / f"{name}.py"
    program.write_text("import json, sys\ncall = json.load(sys.stdin)\n"
                       + textwrap.dedent(body))
    return HookConfig(event=HookEvent(event), command=(sys.executable, str(program)),
                      name=name, scope="user")


def _crashed_after_end(path: Path, run_id: str) -> None:
    """The run's end not recorded: it reads `running` under an owner that is gone."""
    conn = sqlite3.connect(path)
    conn.execute("UPDATE runs SET status = 'running', reason = NULL, owner_pid = 999999999"
                 " WHERE run_id = ?", (run_id,))
    conn.commit()
    conn.close()


def test_a_stop_hook_sends_the_run_on_before_the_gates_run(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    seen = tmp_path / "seen.txt"
    stop = _hook(tmp_path, "stop", "first-no", f"""
        with open({str(seen)!r}, "a") as fh:
            fh.write(str(call["step"]) + " " + call["text"] + "\\n")
        if call["step"] == 0:
            print("run the tests", file=sys.stderr)
            sys.exit(2)
        """)
    gates = (VerifyCriterion(command="true"),)
    spec = spec_for(ws, "go", hooks=(stop,), contract=TaskContract(goal="go", verify=gates))
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, [line("first done"), line("really done")]),
                      clock=ManualClock()).start(spec)
        assert (done.status, done.steps, done.reason) == (
            RunStatus.FINISHED, 2, "done; every gate passed")
        assert [v.step_index for v in store.verifications(done.run_id)] == [1]
        user = [m.content for m in store.messages(done.run_id) if m.role.value == "user"]
        assert user[-1] == ("A stop hook says the task is not done yet:\n"
                            "[hook first-no] run the tests")
    assert seen.read_text() == "0 first done\n1 really done\n"


def test_a_run_start_hook_refusal_errors_the_run_before_its_first_step(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    no = _hook(tmp_path, "run_start", "clean-tree",
               'print("the tree is dirty", file=sys.stderr)\nsys.exit(2)\n')
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, scripted(tmp_path, [line("done")]), clock=ManualClock()).start(
            spec_for(ws, "go", hooks=(no,)))
        assert (outcome.status, outcome.steps, outcome.reason) == (
            RunStatus.ERRORED, 0,
            "a run_start hook refused the run: hook clean-tree: the tree is dirty")
        assert store.run(outcome.run_id).status is RunStatus.ERRORED


def test_a_run_start_hook_is_told_the_resume_and_its_context_lands_at_that_step(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    hello = _hook(tmp_path, "run_start", "hello", """
        print(json.dumps({"context": f"{call['goal']} {call['resumed']} {call['step']}"}))
        """)
    spec = spec_for(ws, "the goal", hooks=(hello,))
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, scripted(tmp_path, [line("look", call("list_dir")),
                                                   line("run it", _TOUCH), line("done")]),
                        clock=ManualClock()).start(spec)
        assert paused.status is RunStatus.PAUSED
        done = Runner(store, scripted(tmp_path, [line("look", call("list_dir")),
                                                 line("run it", _TOUCH), line("done")]),
                      clock=ManualClock()).resume(paused.run_id, spec, approve=True)
        assert done.status is RunStatus.FINISHED
    conn = sqlite3.connect(tmp_path / "state.db")
    rows = conn.execute("SELECT body, step_index FROM messages ORDER BY seq").fetchall()
    conn.close()
    hooked = [(json.loads(body)["content"], step) for body, step in rows
              if "[hook hello]" in body]
    assert hooked == [("[hook hello] the goal False 0", 0),
                      ("[hook hello] the goal True 1", 1)]


def test_background_handles_still_running_are_ended_before_the_gates(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    events = Events()
    gates = (VerifyCriterion(command="true"),)
    spec = spec_for(ws, "go", contract=TaskContract(goal="go", verify=gates),
                    policy=Policy.from_lists(tier="workspace-write", allow_exec=["sleep *"]))
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, [
            line("start", call("shell_start", line="sleep 60")), line("done")]),
                      clock=ManualClock(), on_event=events).start(spec)
        assert done.status is RunStatus.FINISHED
        assert [h.end_reason for h in store.handles(done.run_id)] == ["swept"]
    warnings = [(e.run_id, e.data) for e in events.seen if e.kind is EventKind.WARNING]
    assert warnings == [(done.run_id, {
        "text": "background handles still running were ended before the gates"})]


def test_a_run_that_crashed_after_its_gates_passed_ends_without_running_them_again(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    gates = (VerifyCriterion(command="true"),)
    spec = spec_for(ws, "go", contract=TaskContract(goal="go", verify=gates))
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, [line("done")]), clock=ManualClock()).start(spec)
        assert done.reason == "done; every gate passed"
        _crashed_after_end(tmp_path / "state.db", done.run_id)
        again = Runner(store, scripted(tmp_path, [line("never asked")]),
                       clock=ManualClock()).resume(done.run_id, spec)
        assert (again.status, again.reason, again.steps, again.verified, again.answer) == (
            RunStatus.FINISHED, "done; every gate passed", 1, True, "done")
        assert len(store.verifications(done.run_id)) == 1
        assert len(store.steps(done.run_id)) == 1


def test_a_run_without_gates_that_crashed_after_its_answer_ends_finished(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, [line("done")]), clock=ManualClock()).start(
            spec_for(ws, "go"))
        _crashed_after_end(tmp_path / "state.db", done.run_id)
        again = Runner(store, scripted(tmp_path, [line("never asked")]),
                       clock=ManualClock()).resume(done.run_id, spec_for(ws, "go"))
        assert (again.status, again.reason, again.steps) == (
            RunStatus.FINISHED, "done; no gates configured", 1)


def test_a_root_that_crashed_after_a_failed_gate_goes_on_from_the_failure(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    gates = (VerifyCriterion(command="test -f ok.txt"),)
    contract = TaskContract(goal="go", verify=gates)
    lines = [line("done"), line("fixing", call("write_file", path="ok.txt", content="y")),
             line("done now")]
    with Store(tmp_path / "state.db") as store:
        first = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go", contract=contract,
                     budget=Budget(max_steps=1, max_tokens=None, wall_seconds=None)))
        assert first.status is RunStatus.STOPPED and first.verified is False
        _crashed_after_end(tmp_path / "state.db", first.run_id)
        again = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).resume(
            first.run_id, spec_for(ws, "go", contract=contract))
        assert (again.status, again.steps, again.verified) == (RunStatus.FINISHED, 3, True)
        rounds = [(v.step_index, v.passed) for v in store.verifications(first.run_id)]
        assert rounds == [(0, False), (2, True)]
        failures = [m.content for m in store.messages(first.run_id)
                    if m.content.startswith("Verification failed")]
        assert len(failures) == 1


def test_a_resume_checks_the_answer_against_the_schema_the_run_started_with(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    schema = {"type": "object", "required": ["n"]}
    lines = [line("run it", _TOUCH), line('```json\n{"n": 1}\n```')]
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go", answer_schema=schema))
        assert paused.status is RunStatus.PAUSED
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).resume(
            paused.run_id, spec_for(ws, "go"), approve=True)
        assert done.status is RunStatus.FINISHED
        assert done.answer == json.dumps({"n": 1}, indent=2)


def test_each_resume_records_its_drive_and_the_step_it_picks_up_at(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    lines = [line("run it", _TOUCH), line("again", _TOUCH), line("done")]
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go"))
        second = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).resume(
            paused.run_id, spec_for(ws, "go"), approve=True)
        assert second.status is RunStatus.PAUSED
        Runner(store, scripted(tmp_path, lines), clock=ManualClock()).resume(
            paused.run_id, spec_for(ws, "go"), approve=True)
        resumes = [(o.content, o.step) for o in store.operator_inputs(paused.run_id)
                   if o.kind == "resume"]
        assert resumes == [({"drive": 1, "stored_policy": False}, 0),
                           ({"drive": 2, "stored_policy": False}, 1)]


def test_tool_hooks_are_told_the_step_and_index_of_the_call(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    seen = tmp_path / "seen.txt"
    body = f"""
        with open({str(seen)!r}, "a") as fh:
            fh.write(call["event"] + " " + str(call["step"]) + " " + str(call["call_index"])
                     + "\\n")
        """
    hooks = (_hook(tmp_path, "pre_tool", "before", body),
             _hook(tmp_path, "post_tool", "after", body))
    lines = [line("look", call("list_dir")),
             line("more", call("list_dir", path="."), call("read_file", path="a.txt")),
             line("done")]
    (ws / "a.txt").write_text("a")
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go", hooks=hooks))
        assert done.status is RunStatus.FINISHED
    assert seen.read_text().splitlines() == [
        "pre_tool 0 0", "post_tool 0 0", "pre_tool 1 0", "post_tool 1 0",
        "pre_tool 1 1", "post_tool 1 1"]
