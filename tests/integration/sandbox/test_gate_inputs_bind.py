"""Under the native sandbox a gate's inputs are bound read-only for the agent's commands
(a write the policy cannot see, from inside a program, still fails), while the gate
itself may write beside them (a test runner's cache)."""

from __future__ import annotations

import sys
from pathlib import Path

from harness_core import (
    LaunchRequest,
    RunSpec,
    SandboxConfig,
    Selected,
    TaskContract,
    VerifyCriterion,
    Workspace,
    build_launchers,
    protect_gate_inputs,
    run_command,
)
from harness_core.sandbox import BackendChoice
from tests.integration.sandbox.conftest import HOST_PATH

_WRITE = "import sys; open(sys.argv[1], 'w').write('rigged')"


def _spec(root: Path, *, editable: bool) -> RunSpec:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_calc.py").write_text("def test_ok():\n    pass\n")
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    gate = VerifyCriterion(command="python -m pytest -q", editable=editable)
    return RunSpec(workspace=Workspace(root), contract=TaskContract(verify=(gate,)),
                   sandbox=SandboxConfig(backend=BackendChoice.NATIVE),
                   env={"PATH": HOST_PATH})


def _write(launcher: object, root: Path, rel: str) -> int | None:
    request = LaunchRequest(argv=[sys.executable, "-c", _WRITE, rel], cwd=root)
    return run_command(launcher, request, timeout=60).exit_status  # type: ignore[arg-type]


def test_a_commands_write_to_a_gate_input_fails_under_the_sandbox(
        tmp_path: Path, native: Selected) -> None:
    spec = protect_gate_inputs(_spec(tmp_path, editable=False))
    assert "tests" in spec.command_read_only and "pyproject.toml" in spec.command_read_only
    launchers = build_launchers(spec)
    assert launchers.selected.backend.value == native.backend.value
    assert _write(launchers.commands, tmp_path, "tests/test_calc.py") != 0
    assert _write(launchers.commands, tmp_path, "tests/new_test.py") != 0
    assert (tmp_path / "tests" / "test_calc.py").read_text().startswith("def test_ok")
    assert _write(launchers.commands, tmp_path, "calc.py") == 0  # the agent's own work
    assert _write(launchers.gates, tmp_path, "tests/cache.txt") == 0  # the gate may write


def test_an_editable_gate_adds_no_bind(tmp_path: Path, native: Selected) -> None:
    spec = protect_gate_inputs(_spec(tmp_path, editable=True))
    assert spec.command_read_only == ()
    assert _write(build_launchers(spec).commands, tmp_path, "tests/test_calc.py") == 0


def test_a_command_cannot_plant_a_module_beside_a_gates_script(
        tmp_path: Path, native: Selected) -> None:
    # The folder of a script a gate runs is bound read-only whole (issue 34): a
    # `scripts/json.py` written beside `scripts/verify.py` would be imported by it.
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "verify.py").write_text("pass\n")
    gate = VerifyCriterion(command="python3 scripts/verify.py")
    spec = protect_gate_inputs(RunSpec(
        workspace=Workspace(tmp_path), contract=TaskContract(verify=(gate,)),
        sandbox=SandboxConfig(backend=BackendChoice.NATIVE), env={"PATH": HOST_PATH}))
    assert "scripts" in spec.command_read_only
    launchers = build_launchers(spec)
    try:
        assert _write(launchers.commands, tmp_path, "scripts/json.py") != 0
        assert not (tmp_path / "scripts" / "json.py").exists()
        assert _write(launchers.commands, tmp_path, "elsewhere.py") == 0
    finally:
        launchers.close()
