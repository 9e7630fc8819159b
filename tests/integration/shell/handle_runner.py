"""A stand-in `io` process for the orphan test: opens the store, starts one handle, says
which, and waits to be killed with SIGKILL (so nothing of it runs any clean-up)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from harness_core.clock import SystemClock
from harness_core.shell import HandleRegistry, RunPlan, prepare
from harness_core.workspace import Workspace
from tests.unit.shell.support import PY, HandleTestStore, RecordingGate, off_launcher


def main(db: str, root: str, capture: str, marker: str) -> None:
    store = HandleTestStore(Path(db))
    workspace = Workspace(root)
    registry = HandleRegistry(
        run_id="run-crash", launcher=off_launcher(Path(root)), workspace=workspace,
        capture_dir=Path(capture), clock=SystemClock(), store=store,
    )
    plan = prepare(f"{PY} -c 'import time; time.sleep(300)' {marker}", workspace, RecordingGate())
    assert isinstance(plan, RunPlan)
    started = registry.start(plan)
    print(json.dumps({"handle": started.handle_id, "pids": list(started.pids)}), flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main(*sys.argv[1:5])
