"""The handle tables through `HandleQueries`, on a real sqlite file (stand-in and real Store)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_core.errors import StateError
from harness_core.store._handles import HandleQueries
from tests.unit.shell.support import HandleTestStore


@pytest.fixture(params=["stand-in", "Store"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HandleQueries]:
    if request.param == "stand-in":
        store = HandleTestStore(tmp_path / "handles.db")
        yield store
        store.close()
        return
    from harness_core.store import Store

    real = Store(tmp_path / "state.db")
    yield real
    real.close()


def test_a_handle_is_recorded_from_start_to_end(db: HandleQueries) -> None:
    db.record_handle_start("r1", "h1", "npm run dev", [11, 12], "2026-01-01T00:00:00", 99)
    assert [r.handle_id for r in db.live_handles("r1")] == ["h1"]
    assert db.record_handle_output("r1", "h1", 6, "ready\n") == 1
    assert db.record_handle_output("r1", "h1", 12, "again\n") == 2
    db.record_handle_end("r1", "h1", "exited", 0, "2026-01-01T00:01:00")
    db.record_handle_end("r1", "h1", "swept", None, "2026-01-01T00:02:00")  # first end wins
    record = db.handle_record("r1", "h1")
    assert record is not None
    assert (record.line, record.pids, record.owner_pid) == ("npm run dev", (11, 12), 99)
    assert (record.end_reason, record.exit_status, record.cursor) == ("exited", 0, 12)
    assert record.ended_at == "2026-01-01T00:01:00"
    assert db.live_handles("r1") == []
    assert [o.text for o in db.handle_output("r1", "h1")] == ["ready\n", "again\n"]


def test_marking_orphans_touches_only_unended_handles_of_that_run(db: HandleQueries) -> None:
    for run, handle in (("r1", "h1"), ("r1", "h2"), ("r2", "h1")):
        db.record_handle_start(run, handle, "sleep", [1], "2026-01-01T00:00:00", 7)
    db.record_handle_end("r1", "h2", "killed", None, "2026-01-01T00:00:01")
    assert db.mark_orphaned_handles("r1") == 1
    assert db.mark_orphaned_handles("r1") == 0
    reasons = {r.handle_id: r.end_reason for r in db.handles("r1")}
    assert reasons == {"h1": "orphaned", "h2": "killed"}
    orphan = db.handle_record("r1", "h1")
    assert orphan is not None and orphan.ended_at is not None
    assert [r.handle_id for r in db.live_handles("r2")] == ["h1"]


def test_unknown_end_reason_and_duplicate_ids_are_state_errors(db: HandleQueries) -> None:
    db.record_handle_start("r1", "h1", "x", [], "t", 1)
    with pytest.raises(StateError):
        db.record_handle_start("r1", "h1", "x", [], "t", 1)
    with pytest.raises(StateError):
        db.record_handle_end("r1", "h1", "vanished", None, "t")
    assert db.handle_record("r1", "nope") is None
