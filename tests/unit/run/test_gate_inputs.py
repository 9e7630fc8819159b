"""Gate inputs: inferred from every detected toolchain and the gate's own argv, or named
in io.toml; protected as deny-write rules of the layer `gate` (once, even when a stored
policy already has them); fingerprinted so a change is reported with its files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_core import (
    GATE_LAYER,
    Act,
    CriterionKind,
    Policy,
    PolicyError,
    RunSpec,
    TaskContract,
    Verdict,
    VerifyCriterion,
    Workspace,
    gate_inputs,
    protect_gate_inputs,
)
from harness_core.run._inputs import baseline_json, inputs_changed


def _tree(root: Path, files: dict[str, str]) -> Workspace:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return Workspace(root)


def _spec(ws: Workspace, *gates: VerifyCriterion) -> RunSpec:
    return RunSpec(workspace=ws, contract=TaskContract(verify=gates),
                   policy=Policy.from_lists(tier="workspace-write"),
                   env={"PATH": os.environ.get("PATH", os.defpath)})


def test_inputs_are_inferred_per_toolchain_directory_plus_the_files_the_argv_names(
        tmp_path: Path) -> None:
    ws = _tree(tmp_path, {"pyproject.toml": "", "check.sh": "", "web/package.json": "{}",
                          "tests/unit/test_a.py": ""})
    inputs = gate_inputs(_spec(ws, VerifyCriterion(
        command="bash check.sh tests/unit/test_a.py::test_x --rootdir=tests/unit .")))
    patterns = inputs[0].patterns
    assert inputs[0].inferred and not inputs[0].editable
    assert {"tests/**", "**/test_*.py", "pyproject.toml", "noxfile.py"} <= set(patterns)
    assert {"web/package.json", "web/**/*.test.*", "web/**/__tests__/**"} <= set(patterns)
    assert {"check.sh", "tests/unit/test_a.py", "tests/unit/**"} <= set(patterns)
    assert "" not in patterns and "**" not in patterns  # `.` never protects everything


def test_named_inputs_replace_inference_and_a_bad_pattern_is_an_error(tmp_path: Path) -> None:
    ws = _tree(tmp_path, {"pyproject.toml": ""})
    named = gate_inputs(_spec(ws, VerifyCriterion(command="make", inputs=("spec/**",))))
    assert named[0].patterns == ("spec/**",) and not named[0].inferred
    compiles = gate_inputs(_spec(ws, VerifyCriterion(kind=CriterionKind.EACH_COMPILES_PYTHON)))
    assert compiles[0].patterns == ()
    with pytest.raises(PolicyError):
        gate_inputs(_spec(ws, VerifyCriterion(command="x", inputs=("/abs/**",))))


def test_protection_is_a_gate_layer_deny_added_once(tmp_path: Path) -> None:
    ws = _tree(tmp_path, {"tests/test_a.py": "", "src/a.py": ""})
    spec = protect_gate_inputs(_spec(ws, VerifyCriterion(command="pytest tests")))
    decision = spec.policy.check(Act.write("tests/test_a.py"))
    assert decision.verdict is Verdict.DENY and decision.layer == GATE_LAYER
    assert "input of a verification gate" in decision.reason
    assert spec.policy.check(Act.write("src/a.py")).verdict is Verdict.ALLOW
    assert spec.command_read_only == ("tests",)
    again = protect_gate_inputs(spec)  # a resume under the stored policy
    assert again.policy.rules == spec.policy.rules
    assert again.command_read_only == spec.command_read_only
    loose = protect_gate_inputs(_spec(ws, VerifyCriterion(command="pytest tests",
                                                          editable=True)))
    assert loose.policy.check(Act.write("tests/test_a.py")).verdict is Verdict.ALLOW


def test_a_gate_deny_beats_an_exact_allow(tmp_path: Path) -> None:
    ws = _tree(tmp_path, {"tests/test_a.py": ""})
    spec = RunSpec(workspace=ws, contract=TaskContract(verify=(
        VerifyCriterion(command="pytest tests"),)),
        policy=Policy.from_lists(tier="workspace-write", allow_write=["tests/test_a.py"]),
        env={"PATH": os.environ.get("PATH", os.defpath)})
    assert protect_gate_inputs(spec).policy.check(
        Act.write("tests/test_a.py")).verdict is Verdict.DENY


def test_changes_to_inputs_are_reported_with_their_files(tmp_path: Path) -> None:
    ws = _tree(tmp_path, {"tests/test_a.py": "a", "tests/test_b.py": "b", "src/x.py": ""})
    inputs = gate_inputs(_spec(ws, VerifyCriterion(command="pytest tests")))
    baseline = baseline_json(ws, inputs)
    (tmp_path / "src" / "x.py").write_text("changed")  # not an input
    (tmp_path / "tests" / "__pycache__").mkdir()
    (tmp_path / "tests" / "__pycache__" / "t.pyc").write_text("cache")  # a runner's cache
    same = inputs_changed(ws, baseline, 0)
    assert same is not None and same.untouched is True
    (tmp_path / "tests" / "test_a.py").write_text("rigged")
    (tmp_path / "tests" / "test_b.py").unlink()
    (tmp_path / "tests" / "test_c.py").write_text("new")
    changed = inputs_changed(ws, baseline, 0)
    assert changed is not None and changed.untouched is False
    assert changed.modified == ("tests/test_a.py", "tests/test_b.py", "tests/test_c.py")
    assert inputs_changed(ws, None, 0) is None
