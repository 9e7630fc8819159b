"""`HandleRegistry.end_running`: what the run calls before it fingerprints the gates'
inputs. Every running handle is killed and recorded ``swept``; the registry stays open,
so the agent can start handles again if a gate fails and the run goes on."""

from __future__ import annotations

from pathlib import Path

from harness_core.clock import SystemClock
from harness_core.shell import HandleRegistry, RunPlan, prepare
from harness_core.workspace import Workspace
from tests.unit.shell.support import PY, HandleTestStore, RecordingGate, off_launcher, pid_alive

SLEEP = f"{PY} -c 'import time; time.sleep(120)'"


def _plan(root: Path, line: str) -> RunPlan:
    plan = prepare(line, Workspace(root), RecordingGate())
    assert isinstance(plan, RunPlan), plan
    return plan


def test_end_running_kills_every_handle_and_keeps_the_registry_open(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    store = HandleTestStore(tmp_path / "state.db")
    registry = HandleRegistry(run_id="run-1", launcher=off_launcher(root),
                              workspace=Workspace(root), capture_dir=tmp_path / "capture",
                              clock=SystemClock(), store=store)
    try:
        first = registry.start(_plan(root, SLEEP))
        second = registry.start(_plan(root, SLEEP))
        assert first.handle_id and second.handle_id and registry.live_count() == 2
        assert registry.end_running() == 2
        assert registry.live_count() == 0
        assert not any(pid_alive(p) for p in (*first.pids, *second.pids))
        reasons = {r.handle_id: r.end_reason for r in store.handles("run-1")}
        assert reasons == {first.handle_id: "swept", second.handle_id: "swept"}
        assert registry.end_running() == 0
        again = registry.start(_plan(root, SLEEP))  # still open for the next step
        assert again.handle_id == "h3" and registry.live_count() == 1
    finally:
        registry.close_all()
        store.close()
