"""A step's writes and boundaries, pinned to exact values (mutation testing's survivors in
`run/_ledger.py`, `StepWrites`, and `Runner._loop`/`_boundary`/`_drive`): every call
the stall detector counted keeps its workspace print (not only the step's last), a
steer for a paused run lands at the next step boundary (never between the paused call
and its result), and a background process still running when a run without gates ends
is ended with the run. Real runs of the shipped scripted provider over a real SQLite
store."""

from __future__ import annotations

from pathlib import Path

from harness_core import Policy, Runner, RunStatus, Store, steer_run
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import call, line, scripted, workspace
from tests.unit.session.support import spec_for

_TOUCH = call("exec", argv=["touch", "approved.txt"])


def test_every_call_the_stall_detector_counted_is_kept_not_only_the_steps_last(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    lines = [line("look", call("list_dir", path="."), call("read_file", path="a.txt"),
                  call("list_dir")),
             line("done")]
    (ws / "a.txt").write_text("a")
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go"))
        assert done.status is RunStatus.FINISHED
        trail = store.progress_trail(done.run_id, 10)
        assert [key.split(":")[0] for key, _ in trail] == ["list_dir", "read_file", "list_dir"]
        assert [mark for _, mark in trail] == ["", "", ""]  # no repeat: no print taken


def test_a_steer_for_a_paused_run_lands_at_the_next_boundary_not_before_the_result(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    lines = [line("run it", _TOUCH), line("done")]
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(
            spec_for(ws, "go"))
        assert paused.status is RunStatus.PAUSED
        steer_run(store, paused.run_id, "mind the tests")
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).resume(
            paused.run_id, spec_for(ws, "go"), approve=True)
        assert done.status is RunStatus.FINISHED
        said = [(m.role.value, m.content) for m in store.messages(paused.run_id)][2:]
        assert said == [("assistant", "run it"), ("tool", "exit status 0"),
                        ("user", "[operator steer] mind the tests"), ("assistant", "done")]
        steers = [(o.state, o.step) for o in store.operator_inputs(paused.run_id)
                  if o.kind == "steer"]
        assert steers == [("landed", 1)]


def test_a_background_process_still_running_is_ended_with_a_run_without_gates(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    spec = spec_for(ws, "go", policy=Policy.from_lists(tier="workspace-write",
                                                       allow_exec=["sleep *"]))
    lines = [line("start", call("shell_start", line="sleep 60")), line("done")]
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(spec)
        assert done.status is RunStatus.FINISHED
        assert [h.end_reason for h in store.handles(done.run_id)] == ["swept"]
