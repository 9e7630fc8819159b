"""The operator's reply applied to a paused call, and the run's secrets kept out of its
records, pinned to exact values (mutation testing's survivors in `run/_act.py`,
`Actor._apply_reply`, and `run/_parts.py`, `RunParts.keep_secrets`): the `approve`,
`deny` and `answer` inputs recorded with what they decided and the step they applied
to (an empty answer as given), and a secret the model or a tool says kept out of the
store, the events and the model's next request (a child's too). Real runs of the
shipped scripted provider over a real SQLite store."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness_core import Runner, RunStatus, Store
from tests.fakes.clock import ManualClock
from tests.integration.agents.tree_helpers import Recording, spawn
from tests.integration.agents.tree_helpers import line as tree_line
from tests.integration.agents.tree_helpers import provider as tree_provider
from tests.integration.agents.tree_helpers import spec as tree_spec
from tests.unit.run.loop_support import call, line, scripted, workspace
from tests.unit.session.support import Events, RecordingProvider, spec_for

_TOUCH = call("exec", argv=["touch", "approved.txt"])
_SECRET = "sk-test-0123456789abcdefXYZ"


def _paused_at_step_1(tmp_path: Path, store: Store, *lines: dict[str, object]) -> str:
    provider = scripted(tmp_path, list(lines))
    outcome = Runner(store, provider, clock=ManualClock()).start(
        spec_for(workspace(tmp_path), "go"))
    assert outcome.status is RunStatus.PAUSED and outcome.pause is not None
    assert outcome.pause.step == 1
    return outcome.run_id


def test_an_approval_is_recorded_with_the_act_it_approved_at_its_step(tmp_path: Path) -> None:
    lines = [line("look", call("list_dir")), line("run it", _TOUCH), line("done")]
    with Store(tmp_path / "state.db") as store:
        run_id = _paused_at_step_1(tmp_path, store, *lines)
        call_id = store.ledger(run_id)[1].call_id
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).resume(
            run_id, spec_for(workspace(tmp_path), "go"), approve=True)
        assert done.status is RunStatus.FINISHED
        given = [(o.kind, o.content, o.step) for o in store.operator_inputs(run_id)
                 if o.kind != "resume"]
        assert given == [("approve", {"act": "exec", "target": "exec touch approved.txt",
                                      "call_id": call_id}, 1)]
    assert (workspace(tmp_path) / "approved.txt").exists()


def test_a_denial_is_recorded_as_deny_and_the_act_does_not_run(tmp_path: Path) -> None:
    lines = [line("look", call("list_dir")), line("run it", _TOUCH), line("done")]
    with Store(tmp_path / "state.db") as store:
        run_id = _paused_at_step_1(tmp_path, store, *lines)
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).resume(
            run_id, spec_for(workspace(tmp_path), "go"), approve=False)
        assert done.status is RunStatus.FINISHED
        given = [(o.kind, o.content["target"], o.step) for o in store.operator_inputs(run_id)
                 if o.kind != "resume"]
        assert given == [("deny", "exec touch approved.txt", 1)]
    assert not (workspace(tmp_path) / "approved.txt").exists()


def test_an_answer_is_recorded_with_the_question_it_answered(tmp_path: Path) -> None:
    lines = [line("look", call("list_dir")),
             line("asking", call("ask_question", question="which colour?")), line("done")]
    events = Events()
    with Store(tmp_path / "state.db") as store:
        run_id = _paused_at_step_1(tmp_path, store, *lines)
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock(),
                      on_event=events).resume(run_id, spec_for(workspace(tmp_path), "go"),
                                              answer="blue")
        assert done.status is RunStatus.FINISHED
        given = [(o.kind, o.content, o.step) for o in store.operator_inputs(run_id)
                 if o.kind != "resume"]
        assert given == [("answer", {"question": "which colour?", "answer": "blue"}, 1)]
        assert store.ledger(run_id)[1].observation is not None
        assert "blue" in (store.ledger(run_id)[1].observation or "")


def test_a_secret_the_model_and_a_tool_say_stays_out_of_the_records(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "env.txt").write_text(f"KEY={_SECRET}\n")
    events = Events()
    spec = spec_for(ws, "go", secrets=frozenset({_SECRET}))
    lines = [line(f"the key is {_SECRET}", call("read_file", path="env.txt")), line("done")]
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock(),
                      on_event=events).start(spec)
        assert done.status is RunStatus.FINISHED
        observation = store.ledger(done.run_id)[0].observation or ""
        assert "KEY=" in observation and _SECRET not in observation
        assert all(_SECRET not in (m.content or "") for m in store.messages(done.run_id))
        assert all(_SECRET not in s.text for s in store.steps(done.run_id))
    assert events.seen and all(_SECRET not in repr(e.data) for e in events.seen)
    raw = sqlite3.connect(tmp_path / "state.db")
    try:
        dump = "\n".join(raw.iterdump())
    finally:
        raw.close()
    assert _SECRET not in dump


def test_a_secret_is_kept_out_without_an_event_sink_and_across_drives(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "env.txt").write_text(f"KEY={_SECRET}\n")
    spec = spec_for(ws, "go", secrets=frozenset({_SECRET}))
    events = Events()
    lines = [line("read", call("read_file", path="env.txt")), line("run it", _TOUCH),
             line(f"done {_SECRET}")]
    with Store(tmp_path / "state.db") as store:
        runner = Runner(store, scripted(tmp_path, lines), clock=ManualClock())
        paused = runner.start(spec)
        assert paused.status is RunStatus.PAUSED
        again = Runner(store, scripted(tmp_path, lines), clock=ManualClock(), on_event=events)
        done = again.resume(paused.run_id, spec, approve=True)
        assert done.status is RunStatus.FINISHED
        assert _SECRET not in done.answer and done.answer.startswith("done ")
        assert _SECRET not in (store.ledger(paused.run_id)[0].observation or "")
    assert events.seen and all(_SECRET not in repr(e.data) for e in events.seen)


def test_an_empty_answer_is_recorded_empty(tmp_path: Path) -> None:
    lines = [line("look", call("list_dir")),
             line("asking", call("ask_question", question="anything to add?")), line("done")]
    with Store(tmp_path / "state.db") as store:
        run_id = _paused_at_step_1(tmp_path, store, *lines)
        Runner(store, scripted(tmp_path, lines), clock=ManualClock()).resume(
            run_id, spec_for(workspace(tmp_path), "go"), answer="")
        given = [o.content for o in store.operator_inputs(run_id) if o.kind == "answer"]
        assert given == [{"question": "anything to add?", "answer": ""}]


def test_a_secret_a_tool_read_never_reaches_the_models_next_request(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "env.txt").write_text(f"KEY={_SECRET}\n")
    provider = RecordingProvider([("read", [("read_file", {"path": "env.txt"})]),
                                  ("done", [])])
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, provider, clock=ManualClock()).start(
            spec_for(ws, "go", secrets=frozenset({_SECRET})))
        assert done.status is RunStatus.FINISHED
    sent = "\n".join(m.content or "" for m in provider.requests[1].messages)
    assert "KEY=" in sent and _SECRET not in sent


def test_a_secret_a_childs_tool_read_never_reaches_the_childs_next_request(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "env.txt").write_text(f"KEY={_SECRET}\n")
    script = [tree_line("delegate", spawn("read it")),
              tree_line("reading", ("read_file", {"path": "env.txt"})),
              tree_line("child: read"), tree_line("all done")]
    log: list[tuple[str, Any]] = []
    recording = Recording(tree_provider(tmp_path, script), log)
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, recording, clock=ManualClock()).start(  # type: ignore[arg-type]
            replace(tree_spec(ws), secrets=frozenset({_SECRET})))
        assert done.status is RunStatus.FINISHED
    child = [request for who, request in log if who != "root"]
    sent = "\n".join(m.content or "" for m in child[1].messages)
    assert "KEY=" in sent and _SECRET not in sent
