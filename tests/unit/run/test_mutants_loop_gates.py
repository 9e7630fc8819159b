"""The run loop's gates pinned to exact values (mutation testing's survivors in
`run/_loop.py`): what a gate's verdict records and emits (its output cut for the event
and for the model, its duration), the run's `verified` after a failed round, the files
a run changed across a resume reaching `each_compiles_python`, and what becomes of a
gate's inputs when the recorded baseline is missing, partial, older or changed by hand.
Real runs of the shipped scripted provider over a real SQLite store, real gate commands."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from harness_core import (
    Budget,
    Event,
    EventKind,
    Message,
    Runner,
    RunStatus,
    Store,
    TaskContract,
)
from harness_core.store import InputsFate
from harness_core.verification import CriterionKind, VerifyCriterion
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import line as _line
from tests.unit.run.loop_support import scripted as _scripted
from tests.unit.run.loop_support import workspace as _ws
from tests.unit.run.loop_support import write as _write
from tests.unit.session.support import Events, spec_for


class _Ticking(ManualClock):
    """A manual clock that moves 1.23456 s each time it is read (so a gate has a
    duration with more than three decimals)."""

    def monotonic(self) -> float:
        self.advance(1.23456)
        return super().monotonic()


_NOTHING = InputsFate((), False, True, ())
"""A command gate naming no input file, in a workspace with no toolchain: none."""


def test_a_failed_round_records_and_tells_each_gate_whole_or_cut(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    loud = "sh -c 'seq 1 3000; exit 3'"
    gates = (VerifyCriterion(command=loud), VerifyCriterion(command="false"))
    spec = spec_for(ws, "go", contract=TaskContract(goal="go", verify=gates),
                    budget=Budget(max_steps=1, max_tokens=None, wall_seconds=None))
    full = "".join(f"{n}\n" for n in range(1, 3001))
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, [_line("done")]), clock=_Ticking(),
                         on_event=events).start(spec)
        # the round failed, then the step budget stopped the run: not verified
        assert (outcome.status, outcome.steps, outcome.verified) == (
            RunStatus.STOPPED, 1, False)
        records = store.verifications(outcome.run_id)
        assert [(r.criterion, r.passed, r.exit_status, r.output, r.inputs)
                for r in records] == [(loud, False, 3, full, _NOTHING), ("false", False, 1, "",
                                                                           _NOTHING)]
        assert [round(r.duration_seconds or 0, 5) for r in records] == [1.23456, 1.23456]
        told = store.messages(outcome.run_id)[-1]
        assert told == Message.user("Verification failed; the task is not done yet.\n\n"
                                    f"$ {loud}\n(exit 3)\n{full[-4000:]}\n\n"
                                    "$ false\n(exit 1)\n")
    verdicts = [e for e in events.seen if e.kind is EventKind.VERIFICATION]
    assert all(e.run_id == outcome.run_id for e in verdicts)
    assert [(e.data["output"], e.data["duration_seconds"], e.data["inputs_untouched"],
             e.data["modified_inputs"]) for e in verdicts] == [
        (full[-2000:], 1.235, True, []), ("", 1.235, True, [])]


def test_a_run_without_gates_stopped_early_is_neither_verified_nor_failed(
        tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    spec = spec_for(ws, "go", budget=Budget(max_steps=1, max_tokens=None, wall_seconds=None))
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, [_line("w", _write("a.txt", "1"))]),
                         clock=ManualClock()).start(spec)
    assert (outcome.status, outcome.verified) == (RunStatus.STOPPED, None)


def test_files_changed_before_a_resume_are_compiled_by_the_gate(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    gate = VerifyCriterion(kind=CriterionKind.EACH_COMPILES_PYTHON)
    spec = spec_for(ws, "go", contract=TaskContract(goal="go", verify=(gate,)),
                    budget=Budget(max_steps=2, max_tokens=None, wall_seconds=None))
    lines = [_line("w", _write("bad.py", "def (:\n"), _write("ok.py", "x = 1\n")),
             _line("done")]
    with Store(tmp_path / "state.db") as store:

        def interrupt(event: Event) -> None:
            if event.kind is EventKind.CHECKPOINT and event.data["step"] == 0:
                store.post_inbox(event.run_id, "interrupt", {})

        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                       on_event=interrupt).start(spec)
        assert first.status is RunStatus.INTERRUPTED
        again = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).resume(
            first.run_id, spec)
        assert (again.status, again.steps, again.verified) == (RunStatus.STOPPED, 2, False)
        (verdict,) = store.verifications(first.run_id)
        assert (verdict.criterion, verdict.passed, verdict.output) == (
            "each_compiles_python", False, "bad.py:1: invalid syntax")


def _gate_inputs(path: Path, value: Any) -> None:
    conn = sqlite3.connect(path)
    # The settings document is kept once by hash (#40); a tampered copy written in
    # place is what an older store holds, and reads back the same way.
    (settings,) = conn.execute("SELECT d.body FROM runs JOIN documents d"
                               " ON d.hash = runs.settings").fetchone()
    data = json.loads(settings)
    data["gate_inputs"] = value(data["gate_inputs"])
    conn.execute("UPDATE runs SET settings = ?", (json.dumps(data),))
    conn.commit()
    conn.close()


def _two_drives(tmp_path: Path, change: Any, *, gates: tuple[VerifyCriterion, ...],
                resumed_gates: tuple[VerifyCriterion, ...] | None = None,
                edit: tuple[str, str] | None = None) -> tuple[Any, Events]:
    """A run interrupted after step 0, its recorded baseline rewritten by `change` (and
    a file edited by hand), resumed to say done with `resumed_gates`."""
    ws = _ws(tmp_path)
    (ws / "in.txt").write_text("one\n")
    (ws / "other.txt").write_text("two\n")
    spec = spec_for(ws, "go", contract=TaskContract(goal="go", verify=gates))
    lines = [_line("w", _write("a.txt", "1")), _line("done")]
    with Store(tmp_path / "state.db") as store:

        def interrupt(event: Event) -> None:
            if event.kind is EventKind.CHECKPOINT and event.data["step"] == 0:
                store.post_inbox(event.run_id, "interrupt", {})

        first = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                       on_event=interrupt).start(spec)
        _gate_inputs(tmp_path / "state.db", change)
        if edit is not None:
            (ws / edit[0]).write_text(edit[1])
        events = Events()
        spec = spec_for(ws, "go", contract=TaskContract(goal="go",
                                                        verify=resumed_gates or gates))
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=events).resume(first.run_id, spec)
        assert outcome.status is RunStatus.FINISHED
        assert list(store.verifications(first.run_id)) == list(outcome.gates)
    return outcome, events


_GATE = VerifyCriterion(command="cat in.txt other.txt", inputs=("in.txt", "other.txt"))


def test_inputs_changed_by_hand_between_drives_are_named_in_the_warning(
        tmp_path: Path) -> None:
    outcome, events = _two_drives(tmp_path, lambda old: old, gates=(_GATE,),
                                  edit=("in.txt", "three\n"))
    _, events2 = _two_drives(tmp_path / "b", lambda old: old, gates=(_GATE,),
                             edit=("other.txt", "four\n"))
    (gate,) = outcome.gates
    assert gate.inputs is not None
    assert (gate.inputs.inputs, gate.inputs.editable, gate.inputs.untouched,
            gate.inputs.modified) == (("in.txt", "other.txt"), False, False, ("in.txt",))
    (warning,) = [e for e in events.seen if e.kind is EventKind.WARNING]
    assert (warning.run_id, warning.data) == (outcome.run_id, {
        "text": "gate inputs were modified by the agent (cat in.txt other.txt): in.txt",
        "gate": "cat in.txt other.txt", "modified_inputs": ["in.txt"], "editable": False})
    assert [e.data["modified_inputs"] for e in events2.seen if e.kind is EventKind.WARNING] \
        == [["other.txt"]]


def test_every_modified_input_is_listed_in_the_warning(tmp_path: Path) -> None:
    def forget(old: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**old[0], "fingerprint": {"in.txt": "0", "other.txt": "0"}}]

    _, events = _two_drives(tmp_path, forget, gates=(_GATE,))
    (warning,) = [e.data for e in events.seen if e.kind is EventKind.WARNING]
    assert warning["text"] == ("gate inputs were modified by the agent (cat in.txt"
                               " other.txt): in.txt, other.txt")


def test_a_run_recorded_without_a_baseline_reports_no_inputs(tmp_path: Path) -> None:
    for name, baseline in (("none", None), ("object", {"0": {"inputs": ["in.txt"]}})):
        outcome, events = _two_drives(tmp_path / name, lambda old, b=baseline: b,
                                      gates=(_GATE,))
        (gate,) = outcome.gates
        assert gate.inputs is None
        (verdict,) = [e.data for e in events.seen if e.kind is EventKind.VERIFICATION]
        assert (verdict["inputs_untouched"], verdict["modified_inputs"]) == (None, [])
        assert [e for e in events.seen if e.kind is EventKind.WARNING] == []


def test_a_gate_added_between_drives_has_no_baseline(tmp_path: Path) -> None:
    added = VerifyCriterion(command="true")
    outcome, _ = _two_drives(tmp_path, lambda old: old, gates=(_GATE,),
                             resumed_gates=(_GATE, added))
    first, second = outcome.gates
    assert first.inputs is not None and first.inputs.untouched is True
    assert (second.criterion, second.inputs) == ("true", None)


def test_an_older_baseline_entry_without_inputs_or_fingerprint(tmp_path: Path) -> None:
    def older(old: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in old[0].items() if k not in ("inputs", "fingerprint")}]

    outcome, _ = _two_drives(tmp_path / "a", older, gates=(_GATE,))
    (gate,) = outcome.gates
    assert gate.inputs is not None
    assert (gate.inputs.inputs, gate.inputs.untouched, gate.inputs.modified) == (
        (), None, ())

    def unprinted(old: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in old[0].items() if k != "fingerprint"}]

    outcome, events = _two_drives(tmp_path / "b", unprinted, gates=(_GATE,))
    (gate,) = outcome.gates
    assert gate.inputs is not None
    assert (gate.inputs.inputs, gate.inputs.editable, gate.inputs.untouched,
            gate.inputs.modified) == (("in.txt", "other.txt"), False, None, ())
    (verdict,) = [e.data for e in events.seen if e.kind is EventKind.VERIFICATION]
    assert (verdict["inputs_untouched"], verdict["modified_inputs"]) == (None, [])
