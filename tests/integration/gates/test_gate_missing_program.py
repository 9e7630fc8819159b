"""A gate fails closed on a program it cannot protect (issue 34, item 5).

The gate ``python3 scripts/verify.py`` named a script that did not exist at the start;
the agent wrote ``scripts/verify.py`` containing ``pass``, the gate passed and io
exited 0. A gate whose program or script does not exist when the run starts is now
refused before the first step (exit 2, naming the gate), and the folder of a script a
gate runs is protected whole for the run: nothing can be planted beside it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from harness_core import (
    ConfigError,
    RunSpec,
    TaskContract,
    VerifyCriterion,
    Workspace,
    gate_inputs,
    protect_gate_inputs,
)
from harness_core.policy import Act, Verdict
from harness_core.run._gate_command import command_inputs
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

_PATH = os.environ.get("PATH", os.defpath)
_MARKER = {"pyproject.toml": "[project]\nname = 'x'\nversion = '0'\n"}


def _spec(root: Path, command: str, *, editable: bool = False,
          inputs: tuple[str, ...] | None = None) -> RunSpec:
    gate = VerifyCriterion(command=command, editable=editable, inputs=inputs)
    return RunSpec(workspace=Workspace(root), contract=TaskContract(verify=(gate,)),
                   env={"PATH": _PATH})


@pytest.mark.parametrize(("command", "missing"), [
    ("python3 scripts/verify.py", "scripts/verify.py"),
    ("python3 -B -W ignore scripts/verify.py --strict", "scripts/verify.py"),
    ("env CHECK=1 timeout 60 python3 scripts/verify.py", "scripts/verify.py"),
    ("./check.sh", "./check.sh"),
    ("scripts/check", "scripts/check"),
    ("bash scripts/check.sh", "scripts/check.sh"),
    ("sh -c 'cd . && python3 scripts/verify.py'", "scripts/verify.py"),
    ("sh -c '. scripts/env.sh; true'", "scripts/env.sh"),
    ("uv run python scripts/verify.py", "scripts/verify.py"),
    ("no-such-checker --all", "no-such-checker"),
    ("/nonexistent/bin/check", "/nonexistent/bin/check"),
])
def test_a_program_or_script_that_does_not_exist_is_missing(
        tmp_path: Path, command: str, missing: str) -> None:
    for name, text in _MARKER.items():
        (tmp_path / name).write_text(text)
    found = command_inputs(command, Workspace(tmp_path), _PATH)
    assert missing in found.missing


@pytest.mark.parametrize("command", [
    "true", "test -f done.txt", "sh -c 'exit 0'", "python3 -c pass",
    f"{sys.executable} -m pytest -q", "python3 -m pytest tests/test_new.py",
])
def test_a_gate_whose_programs_exist_has_nothing_missing(tmp_path: Path, command: str) -> None:
    assert command_inputs(command, Workspace(tmp_path), _PATH).missing == ()


@pytest.mark.parametrize(("editable", "inputs"), [(False, None), (True, None), (False, ())])
def test_a_missing_script_refuses_the_gate_whatever_its_inputs_say(
        tmp_path: Path, editable: bool, inputs: tuple[str, ...] | None) -> None:
    (tmp_path / "pyproject.toml").write_text(_MARKER["pyproject.toml"])
    spec = _spec(tmp_path, "python3 scripts/verify.py", editable=editable, inputs=inputs)
    with pytest.raises(ConfigError) as caught:
        gate_inputs(spec)
    message = caught.value.message
    assert "verification gate 1 ('python3 scripts/verify.py')" in message
    assert "'scripts/verify.py'" in message and "does not exist" in message


def test_the_folder_of_a_script_the_gate_runs_is_protected_whole(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "verify.py").write_text("import helper\n")
    (tmp_path / "scripts" / "helper.py").write_text("")
    (tmp_path / "src").mkdir()
    spec = protect_gate_inputs(_spec(tmp_path, "python3 scripts/verify.py"))
    [gate] = gate_inputs(spec)
    assert {"scripts/verify.py", "scripts/**"} <= set(gate.patterns)
    for planted in ("scripts/json.py", "scripts/helper.py", "scripts/sub/x.py", "scripts"):
        decision = spec.policy.check(Act.write(planted))
        assert decision.verdict is Verdict.DENY and decision.layer == "gate", planted
    assert spec.policy.check(Act.write("src/app.py")).verdict is Verdict.ALLOW
    assert "scripts" in spec.command_read_only


def test_a_script_at_the_root_protects_only_itself(tmp_path: Path) -> None:
    (tmp_path / "verify.py").write_text("pass\n")
    [gate] = gate_inputs(_spec(tmp_path, "python3 verify.py"))
    assert "verify.py" in gate.patterns and "**" not in gate.patterns


def test_io_run_refuses_the_gate_before_the_agent_can_write_its_script(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("writing", ("write_file", {"path": "scripts/verify.py", "content": "pass\n"})),
        replay_line("done"),
    ], verify="python3 scripts/verify.py", files=_MARKER)
    result = run_io(["run", "make it pass", "-w", str(ws), "--json"])
    assert result.returncode == 2, result.stdout + result.stderr
    assert "verification gate 1 ('python3 scripts/verify.py')" in result.stderr
    assert "'scripts/verify.py'" in result.stderr and "Traceback" not in result.stderr
    assert not (ws / "scripts" / "verify.py").exists()
    assert json_lines(run_io(["runs", "--json", "-w", str(ws)]).stdout) == []
    check = run_io(["config", "check", "-w", str(ws)])
    assert check.returncode == 2 and "'scripts/verify.py'" in check.stderr


def test_io_run_with_the_script_written_first_runs_the_gate(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")],
                        verify="python3 scripts/verify.py",
                        files={**_MARKER, "scripts/verify.py": "raise SystemExit(0)\n"})
    result = run_io(["run", "check", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    [gate] = [e for e in json_lines(result.stdout) if e["kind"] == "verification"]
    assert gate["passed"] is True


def test_an_unknown_module_protects_where_the_agent_would_plant_it(tmp_path: Path) -> None:
    # `python -m verify` may name an installed module or none: io cannot tell, so the
    # module stays unknown, and the places a planted one would be found are inputs.
    (tmp_path / "pyproject.toml").write_text(_MARKER["pyproject.toml"])
    found = command_inputs("python3 -m verify.main --all", Workspace(tmp_path), _PATH)
    assert not found.known and {"verify.py", "verify/**"} <= set(found.patterns)
    spec = protect_gate_inputs(_spec(tmp_path, "python3 -m verify.main"))
    assert spec.policy.check(Act.write("verify/main.py")).verdict is Verdict.DENY


def test_where_a_bare_program_would_be_planted_ahead_on_path_is_an_input(
        tmp_path: Path) -> None:
    # PATH names folders of the workspace ahead of the real interpreter: one planted in
    # them would run in its place, so each such spot is an input.
    (tmp_path / "bin").mkdir()
    python = Path(sys.executable)
    path = os.pathsep.join([str(tmp_path / "bin"), ".", str(python.parent), "/usr/bin"])
    found = command_inputs(f"{python.name} -m pytest -q", Workspace(tmp_path), path)
    assert {f"bin/{python.name}", python.name} <= set(found.patterns)
    assert found.missing == ()
