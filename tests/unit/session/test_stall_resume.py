"""Repetition detection lives in memory: a resumed run starts its window at zero (the
contract's stated limit), while one drive that repeats a call stops."""

from __future__ import annotations

from pathlib import Path

from harness_core import Event, EventKind, Runner, RunStatus, Store
from tests.unit.session.support import RecordingProvider, spec_for

_SAME: tuple[str, dict[str, object]] = ("list_dir", {"path": "."})


def _lines(repeats: int) -> list[tuple[str, list[tuple[str, dict[str, object]]]]]:
    return [(f"look {i}", [_SAME]) for i in range(repeats)] + [("done", [])]


def test_one_drive_repeating_a_call_window_times_stops(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, RecordingProvider(_lines(4))).start(
            spec_for(tmp_path / "ws", "look", stall_window=3))
    assert outcome.status is RunStatus.STOPPED and "list_dir" in outcome.reason


def test_a_resumed_run_keeps_its_repetition_window(tmp_path: Path) -> None:
    """The window is derived from the recorded steps (#28): two identical calls before
    an interrupt and one after it make the three that stop the run as stalled."""
    ws = tmp_path / "ws"
    ws.mkdir()
    spec = spec_for(ws, "look", stall_window=3)
    with Store(tmp_path / "state.db") as store:
        def stop_after_two(event: Event) -> None:
            if event.kind is EventKind.CHECKPOINT and event.data["step"] == 1:
                runner.cancel()

        runner = Runner(store, RecordingProvider(_lines(4)), on_event=stop_after_two)
        first = runner.start(spec)
        assert first.status is RunStatus.INTERRUPTED and first.steps == 2
        second = Runner(store, RecordingProvider(_lines(4))).resume(first.run_id, spec)
    assert second.status is RunStatus.STOPPED and "list_dir" in second.reason
    with Store(tmp_path / "state.db") as store:
        assert [e.name for e in store.ledger(first.run_id)] == ["list_dir"] * 3
