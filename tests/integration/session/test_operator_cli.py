"""Operator input through the real CLI (#23): `io interrupt` on a run paused for an
approval is refused (exit 2) and the approved act still runs on `io resume --approve`;
`io trace` shows every operator input in text, JSON and HTML, and a failing gate's
output in the readable trace."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

_ASK = '[policy]\napproval = "ask"\n'


def test_interrupt_of_a_paused_run_is_refused_and_the_approved_act_runs(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("run it", ("exec", {"argv": ["touch", "approved.txt"]})),
        replay_line("done"),
    ], toml_extra=_ASK)
    paused = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert paused.returncode == 4, paused.stderr
    run_id = str(json_lines(paused.stdout)[-1]["run_id"])

    refused = run_io(["interrupt", run_id, "-w", str(ws)])
    assert refused.returncode == 2, refused.stderr
    assert "is paused" in refused.stderr and "nothing to interrupt" in refused.stderr
    assert f"io resume {run_id} --approve" in refused.stderr
    assert "Traceback" not in refused.stderr

    steered = run_io(["steer", run_id, "keep it small", "-w", str(ws)])
    assert steered.returncode == 0, steered.stderr
    assert "after the next `io resume`" in steered.stderr

    resumed = run_io(["resume", run_id, "-w", str(ws), "--approve", "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert (ws / "approved.txt").exists()
    again = run_io(["resume", run_id, "-w", str(ws), "--json"])
    assert again.returncode == 0, again.stderr

    data = json.loads(run_io(["trace", run_id, "-w", str(ws), "--json"]).stdout)
    [call] = data["steps"][0]["calls"]
    assert call["observation"] == "exit status 0" and not call["is_error"]
    operator = [(o["kind"], o["step"], o["state"]) for o in data["operator"]]
    assert operator == [("steer", 1, "landed"), ("resume", 0, "landed"),
                        ("approve", 0, "landed")]
    assert data["operator"][0]["content"] == {"text": "keep it small"}
    assert data["operator"][2]["content"]["target"] == "exec touch approved.txt"

    text = run_io(["trace", run_id, "-w", str(ws)])
    assert text.returncode == 0, text.stderr
    assert "outcome is unknown" not in text.stdout
    assert "operator input:" in text.stdout
    assert "steer: keep it small  (landed at step 1)" in text.stdout
    assert "approved: exec touch approved.txt  (landed at step 0)" in text.stdout

    page = tmp_path / "t.html"
    html = run_io(["trace", run_id, "-w", str(ws), "--html", "-o", str(page)])
    assert html.returncode == 0, html.stderr
    body = page.read_text()
    assert body.count('data-kind="operator"') == 3
    assert "operator approved: exec touch approved.txt" in body


def test_an_interrupt_for_a_finished_run_is_refused_with_exit_2(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    done = run_io(["run", "goal", "-w", str(ws), "--json"])
    run_id = str(json_lines(done.stdout)[-1]["run_id"])
    for args in (["interrupt", run_id], ["steer", run_id, "more"]):
        refused = run_io([*args, "-w", str(ws)])
        assert refused.returncode == 2, refused.stderr
        assert "has ended" in refused.stderr and "Traceback" not in refused.stderr


def test_a_failing_gate_shows_its_output_in_the_readable_trace(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("done?"),
        replay_line("fix", ("write_file", {"path": "ok.txt", "content": "yes"})),
        replay_line("done"),
    ], verify="sh -c 'echo gate-said-no-ok.txt-missing; test -f ok.txt'")
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    run_id = str(json_lines(result.stdout)[-1]["run_id"])
    text = run_io(["trace", run_id, "-w", str(ws)]).stdout
    lines = text.splitlines()
    failed = next(i for i, t in enumerate(lines) if t.endswith("→ failed (exit 1)"))
    passed = next(i for i, t in enumerate(lines) if t.endswith("→ passed (exit 0)"))
    assert lines[failed + 1] == "    │ gate-said-no-ok.txt-missing"
    assert not lines[passed + 1].startswith("    │")  # a passing gate's output stays out
