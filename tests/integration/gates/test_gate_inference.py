"""Fail closed, through the real CLI: a gate whose inputs io cannot infer (an unknown
program, no toolchain marker) stops `io run` before its first step and fails
`io config check`, both with exit 2 and a message naming ``inputs = [...]``; declaring
them (even ``inputs = []``) lets the run start; plain gates (`true`, `test -f`) and a
pytest gate need no declaration."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

_TOML = '[policy]\ntier = "workspace-write"\napproval = "deny"\n\n[budget]\nmax_steps = 2\n\n'


def _ws(tmp_path: Path, gate: str, inputs: str | None = None) -> Path:
    toml = _TOML + f'[[contract.verify]]\ncommand = "{gate}"\n'
    if inputs is not None:
        toml += f"inputs = {inputs}\n"
    ws = make_workspace(tmp_path / "w", [replay_line("touch", ("write_file", {
        "path": "ok.txt", "content": "ok"})), replay_line("done")], toml_extra=toml,
        files={"calc.py": "x = 1\n", "tests/test_calc.py": "def test_x():\n    pass\n"})
    (ws / "run-checks").write_text("#!/usr/bin/perl\nexit 0;\n")
    (ws / "run-checks").chmod(0o755)
    return ws


def test_an_uninferable_gate_refuses_to_start_the_run(tmp_path: Path) -> None:
    ws = _ws(tmp_path, "./run-checks")
    store = {"IO_STORE": str(tmp_path / "s.db")}
    result = run_io(["run", "go", "-w", str(ws), "--json"], env=store)
    assert result.returncode == 2, result.stderr
    assert "verification gate 1 ('./run-checks')" in result.stderr
    assert "inputs = [" in result.stderr and "Traceback" not in result.stderr
    assert not [e for e in json_lines(result.stdout) if e["kind"] == "step_started"]
    assert not (ws / "ok.txt").exists()  # no step ran
    runs = run_io(["runs", "--all", "--json"], env=store)
    assert not json_lines(runs.stdout)
    check = run_io(["config", "check", "-w", str(ws)], env=store)
    assert check.returncode == 2 and "inputs = [" in check.stderr


def test_declared_inputs_even_empty_let_the_run_start(tmp_path: Path) -> None:
    ws = _ws(tmp_path, "./run-checks", inputs="[]")
    check = run_io(["config", "check", "-w", str(ws)])
    assert check.returncode == 0, check.stderr
    assert "inputs (from io.toml, write-protected for the run): (none)" in check.stdout
    result = run_io(["run", "go", "-w", str(ws), "--json"],
                    env={"IO_STORE": str(tmp_path / "s.db")})
    assert json_lines(result.stdout)[-1]["kind"] == "run_finished", result.stderr
    assert (ws / "ok.txt").exists()


def test_plain_and_pytest_gates_need_no_declaration(tmp_path: Path) -> None:
    for n, gate in enumerate(("true", "test -f ok.txt", "grep -q ok ok.txt",
                              "python -m pytest -q")):
        ws = _ws(tmp_path / str(n), gate)
        check = run_io(["config", "check", "-w", str(ws)])
        assert check.returncode == 0, (gate, check.stderr)
        assert f"gate 1: {gate}" in check.stdout
    assert "tests/**" in check.stdout and "pytest.py" in check.stdout
