"""The workspace snapshots a root's drive takes around its steps, pinned to exact values
(mutation testing's survivors in `run/_open.py`'s keeper and `Actor.run_step`): a
baseline as the drive starts, an `after` for a step whose calls changed files, nothing
for a step without calls (even when a gate changed files after the step before), a
`before` for a step whose calls find files changed since, the state a resumed drive
finds, and snapshots stopped by their cap reported as a warning of the run. Real runs
of the shipped scripted provider over a real SQLite store; the gate is a real program."""

from __future__ import annotations

from pathlib import Path

from harness_core import EventKind, Runner, RunStatus, Store, TaskContract
from harness_core.verification import VerifyCriterion
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import call, line, scripted, workspace, write
from tests.unit.session.support import Events, spec_for

_FIRST_FAILS = VerifyCriterion(command="sh -c 'test -f g.txt || { touch g.txt; false; }'",
                               inputs=())
"""Fails once, leaving `g.txt` behind; passes after."""


def _kinds(store: Store, run_id: str) -> list[tuple[int, str, list[str]]]:
    return [(s.step_index, s.kind, sorted(s.manifest))
            for s in store.snapshots(run_id)]


def test_a_root_snapshots_its_baseline_and_each_step_that_changed_files(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    spec = spec_for(ws, "go", snapshot_dir=tmp_path / "snaps",
                    contract=TaskContract(goal="go", verify=(_FIRST_FAILS,)))
    lines = [line("w", write("a.txt", "x")), line("done"), line("done again")]
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(spec)
        assert (done.status, done.steps) == (RunStatus.FINISHED, 3)
        # g.txt, the gate's, appeared after step 1: steps 1 and 2 ran no call, so no
        # snapshot is taken around them
        assert _kinds(store, done.run_id) == [(0, "baseline", []), (0, "after", ["a.txt"])]


def test_a_resumed_drive_records_the_state_it_finds_before_it_goes_on(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    spec = spec_for(ws, "go", snapshot_dir=tmp_path / "snaps")
    lines = [line("w", write("a.txt", "x")),
             line("run it", call("exec", argv=["touch", "t.txt"])), line("done")]
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(spec)
        assert paused.status is RunStatus.PAUSED
        (ws / "hand.txt").write_text("by hand")
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).resume(
            paused.run_id, spec, approve=True)
        assert done.status is RunStatus.FINISHED
        assert _kinds(store, paused.run_id) == [
            (0, "baseline", []), (0, "after", ["a.txt"]),
            (1, "before", ["a.txt", "hand.txt"]),
            (1, "after", ["a.txt", "hand.txt", "t.txt"])]


def test_files_changed_between_steps_are_recorded_before_the_next_steps_calls(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    spec = spec_for(ws, "go", snapshot_dir=tmp_path / "snaps",
                    contract=TaskContract(goal="go", verify=(_FIRST_FAILS,)))
    lines = [line("done"), line("w", write("b.txt", "y")), line("done again")]
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(spec)
        assert (done.status, done.steps) == (RunStatus.FINISHED, 3)
        # the failed gate left g.txt after step 0; step 1's calls find it first
        assert _kinds(store, done.run_id) == [
            (0, "baseline", []), (1, "before", ["g.txt"]), (1, "after", ["b.txt", "g.txt"])]


def test_snapshots_stopped_by_their_cap_are_a_warning_of_the_run(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    events = Events()
    spec = spec_for(ws, "go", snapshot_dir=tmp_path / "snaps", snapshot_max_bytes=10)
    lines = [line("w", write("a.txt", "x" * 100)), line("done")]
    with Store(tmp_path / "state.db") as store:
        done = Runner(store, scripted(tmp_path, lines), clock=ManualClock(),
                      on_event=events).start(spec)
        assert done.status is RunStatus.FINISHED
        assert [kind for _, kind, _ in _kinds(store, done.run_id)] == ["baseline", "capped"]
    warnings = [(e.run_id, e.data["text"]) for e in events.seen if e.kind is EventKind.WARNING]
    assert len(warnings) == 1 and warnings[0][0] == done.run_id
    assert warnings[0][1].startswith("snapshots stopped at step 0: ")
