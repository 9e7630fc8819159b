"""The rigged-gate replay through the real CLI: an agent that tries to rewrite the test
that judges it is refused (layer `gate`) and the gate then fails honestly; with
`editable = true` the rewrite goes through and every report says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

_TEST = "from calc import add\n\n\ndef test_add() -> None:\n    assert add(2, 3) == 5\n"
_RIGGED = "def test_add() -> None:\n    pass\n"


def _rig(tmp_path: Path, *, editable: bool) -> Path:
    lines = [
        replay_line("rig it", ("write_file", {"path": "tests/test_calc.py", "content": _RIGGED})),
        replay_line("again", ("shell", {"line": "echo > tests/test_calc.py"})),
        replay_line("move it", ("shell", {"line": "mv tests/test_calc.py tests/gone.py"})),
        replay_line("done"),
    ]
    toml = ('[policy]\ntier = "workspace-write"\napproval = "deny"\n'
            'allow_exec = ["python -m pytest*", "echo*", "mv *"]\n\n[budget]\nmax_steps = 4\n\n'
            '[[contract.verify]]\ncommand = "python -m pytest -q -p no:cacheprovider"\n')
    if editable:
        toml += "editable = true\n"
    return make_workspace(tmp_path / "w", lines, toml_extra=toml, files={
        "calc.py": "def add(a: int, b: int) -> int:\n    return a - b\n",
        "tests/test_calc.py": _TEST,
        "pyproject.toml": "[project]\nname = 'calc'\nversion = '0'\n",
    })


def _events(stdout: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in json_lines(stdout) if e["kind"] == kind]


def test_rigging_the_gate_is_refused_with_layer_gate_and_the_gate_fails_honestly(
        tmp_path: Path) -> None:
    ws = _rig(tmp_path, editable=False)
    result = run_io(["run", "fix add", "-w", str(ws), "--json"])
    # the step budget stopped it, but the last gate round failed honestly: exit 1 (#23)
    assert result.returncode == 1, result.stderr
    refusals = _events(result.stdout, "refusal")
    assert [r["layer"] for r in refusals][:3] == ["gate", "gate", "gate"]
    assert refusals[0]["target"] == "write tests/test_calc.py"
    results = _events(result.stdout, "tool_result")
    assert all(r["is_error"] for r in results[:3])
    assert (ws / "tests" / "test_calc.py").read_text() == _TEST
    assert not (ws / "tests" / "gone.py").exists()
    gates = _events(result.stdout, "verification")
    assert gates[0]["passed"] is False and gates[0]["exit_status"] == 1
    assert gates[0]["inputs_untouched"] is True
    finished = json_lines(result.stdout)[-1]
    assert finished["kind"] == "run_finished"
    report = finished["gates"]
    assert report[0]["command"] == "python -m pytest -q -p no:cacheprovider"
    assert report[0]["exit_status"] == 1 and report[0]["inputs_untouched"] is True
    assert report[0]["sandbox"] == "floor" and report[0]["duration_seconds"] > 0
    assert "tests/**" in report[0]["inputs"]
    run_id = str(finished["run_id"])
    trace = run_io(["trace", run_id, "-w", str(ws), "--json"])
    data = json_lines(trace.stdout)[0]
    assert [r["layer"] for r in data["refusals"]] == ["gate", "gate", "gate"]
    assert data["gates"][0]["inputs_untouched"] is True


def test_an_editable_gate_lets_the_agent_through_and_the_report_says_so(tmp_path: Path) -> None:
    ws = _rig(tmp_path, editable=True)
    result = run_io(["run", "fix add", "-w", str(ws), "--json"])
    assert not _events(result.stdout, "refusal")
    assert not (ws / "tests" / "test_calc.py").exists()
    assert (ws / "tests" / "gone.py").exists()
    warnings = [w for w in _events(result.stdout, "warning")
                if "gate inputs were modified by the agent" in str(w.get("text"))]
    assert warnings and "tests/test_calc.py" in warnings[0]["modified_inputs"]
    finished = json_lines(result.stdout)[-1]
    gate = finished["gates"][0]
    assert gate["inputs_untouched"] is False and gate["editable"] is True
    assert "tests/test_calc.py" in gate["modified_inputs"]
    assert "tests/gone.py" in gate["modified_inputs"]
    human = run_io(["run", "fix add", "-w", str(_rig(tmp_path / "again", editable=True))])
    assert "gate inputs were modified by the agent: " in human.stderr
    trace = run_io(["trace", str(finished["run_id"]), "-w", str(ws)])
    assert "gate inputs were modified by the agent" in trace.stdout + trace.stderr


def test_io_tool_applies_the_same_protection_as_io_run(tmp_path: Path) -> None:
    ws = _rig(tmp_path, editable=False)
    result = run_io(["tool", "write_file", "-w", str(ws), "--json",
                     "--args", '{"path": "tests/test_calc.py", "content": "x"}'])
    assert result.returncode == 1
    refused = json_lines(result.stdout)[0]["refused"]
    assert refused["layer"] == "gate" and refused["rule"] == "tests/**"
    shell = run_io(["tool", "shell", "-w", str(ws), "--json",
                    "--args", '{"line": "echo hi > tests/test_calc.py"}'])
    assert shell.returncode == 1 and json_lines(shell.stdout)[0]["refused"]["layer"] == "gate"
    assert (ws / "tests" / "test_calc.py").read_text() == _TEST


def test_config_check_prints_each_gates_inputs(tmp_path: Path) -> None:
    ws = _rig(tmp_path, editable=False)
    result = run_io(["config", "check", "-w", str(ws)])
    assert result.returncode == 0, result.stderr
    assert "gate 1: python -m pytest -q -p no:cacheprovider" in result.stdout
    assert "tests/**" in result.stdout and "**/conftest.py" in result.stdout
    assert "write-protected" in result.stdout


def test_the_rigged_gate_example_is_refused_three_times_then_passes_honestly(
        tmp_path: Path) -> None:
    import shutil

    from tests.conftest import REPO

    ws = tmp_path / "rigged-gate"
    shutil.copytree(REPO / "examples" / "rigged-gate", ws)
    check = run_io(["config", "check", "-w", str(ws)])
    assert check.returncode == 0 and "tests/**" in check.stdout, check.stderr
    result = run_io(["run", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    assert [r["layer"] for r in _events(result.stdout, "refusal")] == ["gate"] * 3
    finished = json_lines(result.stdout)[-1]
    assert finished["gates"][0]["passed"] is True
    assert finished["gates"][0]["inputs_untouched"] is True
    assert "a + b" in (ws / "calc.py").read_text()
