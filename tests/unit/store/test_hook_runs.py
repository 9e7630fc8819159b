"""The hook ledger on both backends: begun, finished, replaced when never finished."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core import CheckpointState, Message, Store


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "s.db")
    return str(request.getfixturevalue("postgres_url"))


def _run(store: Store) -> str:
    store.create_run("r1", goal="g", workspace="/w", model="m", settings={}, policy={},
                     sandbox={}, messages=[], owner_pid=1, owner_started=None)
    return "r1"


def test_a_hook_run_is_begun_then_finished(location: str) -> None:
    with Store(location) as store:
        run = _run(store)
        assert store.hook_run(run, 0, 1, "pre_tool", "h") is None
        store.begin_hook(run, 0, 1, "pre_tool", "h")
        started = store.hook_run(run, 0, 1, "pre_tool", "h")
        assert started is not None and not started.is_finished and started.answer is None
        store.begin_hook(run, 0, 1, "pre_tool", "h")  # never finished: begun again
        store.finish_hook(run, 0, 1, "pre_tool", "h", {"decision": "allow"})
        done = store.hook_run(run, 0, 1, "pre_tool", "h")
        assert done is not None and done.is_finished and done.answer == {"decision": "allow"}
        assert done.finished_at is not None
        assert [(r.event, r.hook, r.call_index) for r in store.hook_runs(run)] == [
            ("pre_tool", "h", 1)]
        assert store.hook_run(run, 0, 2, "pre_tool", "h") is None


def test_a_refused_stop_adds_its_message_and_unmarks_the_step_in_one_go(location: str) -> None:
    with Store(location) as store:
        run = _run(store)
        store.record_checkpoint(run, 0, CheckpointState(0, done=True), tokens=0,
                                wall_seconds=0.0)
        store.refuse_stop(run, 0, Message.user("not yet"))
        last = store.last_checkpoint(run)
        assert last is not None and last.state.done is False
        assert store.messages(run)[-1].content == "not yet"
