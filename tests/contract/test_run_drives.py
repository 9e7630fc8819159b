"""docs/CONTRACT.md, "What a run guarantees": resuming under another policy is audited.
Each drive records its policy and sandbox; `--stored-policy` resumes under the policy
recorded at the start (real `io`, real store, a real command)."""

from __future__ import annotations

import json
from pathlib import Path

from harness_core import Store
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

ASK = '[policy]\napproval = "ask"\n'


def _paused_run(root: Path) -> tuple[Path, str]:
    ws = make_workspace(root, [replay_line("make", ("exec", {"argv": ["touch", "made.txt"]})),
                               replay_line("done")], toml_extra=ASK)
    first = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert first.returncode == 4, first.stderr
    # the operator tightens the project's policy before resuming
    (ws / "io.toml").write_text((ws / "io.toml").read_text().replace(
        ASK, ASK + 'deny_exec = ["touch*"]\n'))
    return ws, str(json_lines(first.stdout)[-1]["run_id"])


def _drives(home: Path, run_id: str) -> list[dict[str, object]]:
    with Store(home / "state" / "io" / "state.db") as store:
        return store.drives(run_id)


def test_a_resume_runs_under_the_current_policy_and_records_it(
        tmp_path: Path, isolated_env: Path) -> None:
    ws, run_id = _paused_run(tmp_path / "w")
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert not (ws / "made.txt").exists()  # the new deny beat the approval
    drives = _drives(isolated_env, run_id)
    assert len(drives) == 2
    assert "touch*" not in json.dumps(drives[0]["policy"])
    assert "touch*" in json.dumps(drives[1]["policy"])
    assert all(d["sandbox"] for d in drives)  # each drive records its sandbox too


def test_stored_policy_resumes_under_the_policy_recorded_at_the_start(
        tmp_path: Path, isolated_env: Path) -> None:
    ws, run_id = _paused_run(tmp_path / "w")
    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--stored-policy",
                      "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert (ws / "made.txt").exists()  # the recorded policy had no deny
    drives = _drives(isolated_env, run_id)
    assert len(drives) == 2 and drives[1]["policy"] == drives[0]["policy"]
