"""docs/CONTRACT.md, "Exit codes": SIGTERM ends a run like Ctrl-C (checkpointed first,
exit 130, resumable), through the real `io` process."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import json_lines
from tests.integration.cli.test_run_cli import _blocking_workspace, _wait_for


def test_sigterm_checkpoints_exits_130_and_resume_finishes(tmp_path: Path) -> None:
    ws = _blocking_workspace(tmp_path)
    proc = subprocess.Popen([*io_cmd(), "run", "goal", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "started", proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    last = json_lines(out)[-1]
    assert last["kind"] == "run_finished"
    assert last["status"] == "interrupted" and last["exit_code"] == 130
    assert "Traceback" not in err
    (tmp_path / "release").write_text("go")
    resumed = run_io(["resume", str(last["run_id"]), "-w", str(ws), "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert json_lines(resumed.stdout)[-1]["status"] == "finished"
