"""Gate inputs inferred from the gate command: the runner it starts protects that runner's
configuration and tests; a command io cannot account for, in a workspace with no marker,
refuses to start (a `ConfigError` naming ``inputs = [...]``), never an empty set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_core import (
    ConfigError,
    Policy,
    RunSpec,
    TaskContract,
    VerifyCriterion,
    Workspace,
    gate_inputs,
)
from harness_core.run._gate_command import command_inputs
from harness_core.run._inputs import baseline_json, inputs_changed

_FILES = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n",
    "check.sh": "#!/bin/sh\nset -e\n# the suite, then a smoke test\npython -m pytest -q\necho ok\n",
    "loop.sh": "#!/bin/sh\nfor f in *.py; do python $f; done\n",
    "check.py": "import calc\n",
    "tool.py": "#!/usr/bin/env python3\nprint(1)\n",
    "Makefile": "all: test\ntest: lint\n\t@python -m pytest -q\nlint:\n\truff check .\n"
                "odd:\n\t$(TOOL) run\ninclude rules.mk\n",
    "rules.mk": "",
    "package.json": '{"scripts": {"test": "jest --ci", "e2e": "./e2e-runner"}}',
    "pytest.ini": "[pytest]\naddopts = -p cfgplug -q\n",
}


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    for name, text in _FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "run-checks").write_bytes(b"\x7fELF\x02\x01\x01")
    for name in ("check.sh", "loop.sh", "tool.py", "run-checks"):
        (tmp_path / name).chmod(0o755)
    return Workspace(tmp_path)


_PYTEST = {"**/conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg",
           "pyproject.toml", "tests/**", "**/test_*.py", "**/*_test.py", "pytest.py",
           "pytest/**", "**/sitecustomize.py", "**/usercustomize.py", "**/*.pth", "noxfile.py",
           "pytest.toml", ".pytest.toml", "**/*.dist-info/**", "**/*.egg-info/**"}

KNOWN: list[tuple[str, set[str]]] = [
    ("python -m pytest -q", _PYTEST | {"cfgplug.py", "cfgplug/**"}),
    ("python3 -m pytest -q", _PYTEST),
    ("python3.11 -m pytest", _PYTEST),
    ("py.test", _PYTEST),
    ("pytest -p myplug tests", _PYTEST | {"myplug.py", "myplug/**"}),
    ("python -m pytest -p pkg.plug", {"pkg/plug.py", "pkg/plug/**"}),
    ("python -m unittest discover", {"**/test*.py", "unittest.py"}),
    ("tox -e py311", _PYTEST | {"tox.toml"}),
    ("nox", _PYTEST),
    ("coverage run -m pytest", _PYTEST | {".coveragerc"}),
    ("uv run pytest", _PYTEST | {"uv.lock"}),
    ("poetry run python -m pytest", _PYTEST | {"poetry.lock"}),
    ("env CI=1 timeout 60 python -m pytest", _PYTEST),
    ("npm test", {"package.json", "package-lock.json", "**/*.test.*", "jest.config.*"}),
    ("pnpm test", {"pnpm-lock.yaml", "**/__tests__/**"}),
    ("yarn test", {"yarn.lock", "vitest.config.*"}),
    ("npx vitest run", {"package.json", "vitest.config.*"}),
    ("cargo test", {"**/Cargo.toml", "**/build.rs", "**/tests/**", ".cargo/config.toml"}),
    ("go test ./...", {"go.mod", "**/*_test.go"}),
    ("make test", {"Makefile", "rules.mk", "**/*.mk", "ruff.toml"} | _PYTEST),
    ("./check.sh", {"check.sh"} | _PYTEST),
    ("bash check.sh", {"check.sh"} | _PYTEST),
    ("sh -c 'python -m pytest -q && echo done > /dev/null'", _PYTEST),
    ("python check.py", {"**/sitecustomize.py"}),
    ("./tool.py", {"tool.py", "**/sitecustomize.py"}),
    ("python -c 'import calc'", {"**/sitecustomize.py"}),
    ("true", set()),
    ("false", set()),
    ("exit 1", set()),
    ("test -f done.txt", set()),
    ("grep -q ok out.txt", set()),
    ("echo ok passed", set()),
    ("sh -c 'seq 1 3000; exit 3'", set()),
]


@pytest.mark.parametrize(("command", "expected"), KNOWN, ids=[c for c, _ in KNOWN])
def test_a_known_command_protects_what_its_runner_reads(
        ws: Workspace, command: str, expected: set[str]) -> None:
    found = command_inputs(command, ws, os.environ.get("PATH", ""))
    assert found.known, found.unknown
    assert expected <= set(found.patterns)
    if not expected:
        assert found.patterns == ()  # a pure program: inferred, and legitimately empty


UNKNOWN = [
    ("./run-checks", "run-checks"),
    ("mytool .", "mytool"),
    ("make odd", "$(TOOL) run"),
    ("make -C sub test", "make -C"),
    ("npm run e2e", "e2e-runner"),
    ("python -m some_installed_tool", "python -m some_installed_tool"),
    ("bash loop.sh", "for f in *.py; do python $f; done"),
    ("sh -c 'pytest $(cat args)'", "pytest $(cat args)"),
    ("'unbalanced", "'unbalanced"),
    ("uv sync", "uv sync"),
    ("find . -name '*.py' -exec ./lint {} ;", "find . -name"),
    ("sh -c 'cd sub && python -m pytest'", "cd sub"),
    ("env -C sub pytest", "env -C sub pytest"),
    ("awk '{ system(\"./run\") }' data.txt", "awk"),
]


@pytest.mark.parametrize(("command", "unknown"), UNKNOWN, ids=[c for c, _ in UNKNOWN])
def test_an_unknown_program_is_named(ws: Workspace, command: str, unknown: str) -> None:
    found = command_inputs(command, ws, os.environ.get("PATH", ""))
    assert not found.known
    assert unknown in (found.unknown or "")


def test_a_workspace_program_on_path_is_an_input(ws: Workspace) -> None:
    bin_dir = Path(ws.root) / "bin"
    bin_dir.mkdir()
    (bin_dir / "pytest").write_text("#!/usr/bin/env python3\nraise SystemExit(0)\n")
    (bin_dir / "pytest").chmod(0o755)
    found = command_inputs("pytest -q", ws, f"{bin_dir}{os.pathsep}/usr/bin")
    assert found.known and "bin/pytest" in found.patterns and "conftest.py" not in found.patterns
    assert "**/conftest.py" in found.patterns


def test_make_without_a_makefile_cannot_be_inferred(tmp_path: Path) -> None:
    found = command_inputs("make test", Workspace(tmp_path), "")
    assert found.unknown == "make (no Makefile)"


def _spec(root: Path, *gates: VerifyCriterion) -> RunSpec:
    return RunSpec(workspace=Workspace(root), contract=TaskContract(verify=gates),
                   policy=Policy.from_lists(tier="workspace-write"),
                   env={"PATH": os.environ.get("PATH", "")})


def test_a_gate_io_cannot_account_for_refuses_naming_the_inputs_setting(tmp_path: Path) -> None:
    root = tmp_path / "bare"  # no toolchain marker
    (root / "tests").mkdir(parents=True)
    (root / "run-checks").write_bytes(b"\x7fELF")
    with pytest.raises(ConfigError) as raised:
        gate_inputs(_spec(root, VerifyCriterion(command="true"),
                          VerifyCriterion(command="./run-checks --all")))
    assert "verification gate 2" in raised.value.message
    assert "'run-checks'" in raised.value.message
    assert "inputs = [" in (raised.value.hint or "")


def test_explicit_inputs_win_even_when_empty(ws: Workspace) -> None:
    root = Path(ws.root)
    named = gate_inputs(_spec(root, VerifyCriterion(command="./run-checks", inputs=())))
    assert named[0].patterns == () and not named[0].inferred


def test_a_toolchain_marker_answers_for_an_unknown_command(ws: Workspace) -> None:
    root = Path(ws.root)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    inputs = gate_inputs(_spec(root, VerifyCriterion(command="./run-checks")))
    assert {"run-checks", "tests/**", "**/conftest.py"} <= set(inputs[0].patterns)


def test_plain_gates_keep_working_with_no_marker(tmp_path: Path) -> None:
    gates = [VerifyCriterion(command=c) for c in
             ("true", "false", "exit 1", "test -f done.txt", "grep -q ok out.txt",
              "python -m pytest -q")]
    inputs = gate_inputs(_spec(tmp_path, *gates))
    assert [g.patterns for g in inputs[:5]] == [()] * 5
    assert "tests/**" in inputs[5].patterns and inputs[5].inferred


def test_a_pytest_gate_without_a_marker_protects_its_tests_and_config(tmp_path: Path) -> None:
    """The issue's finding: `calc.py` + `tests/test_calc.py`, no pyproject.toml, gate
    `python -m pytest -q` had an empty input set (rewrites went unreported)."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text("t")
    (tmp_path / "calc.py").write_text("c")
    inputs = gate_inputs(_spec(tmp_path, VerifyCriterion(command="python -m pytest -q")))
    baseline = baseline_json(Workspace(tmp_path), inputs)
    assert baseline[0]["fingerprint"] and "calc.py" not in baseline[0]["fingerprint"]
    for name in ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "conftest.py",
                 "pytest.py", "sitecustomize.py"):
        (tmp_path / name).write_text("rigged")
    (tmp_path / "pytest").mkdir()
    (tmp_path / "pytest" / "__init__.py").write_text("")
    change = inputs_changed(Workspace(tmp_path), baseline, 0)
    assert change is not None and set(change.modified) == {
        "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "conftest.py", "pytest.py",
        "sitecustomize.py", "pytest/__init__.py"}


def test_a_planted_link_is_a_change(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text("t")
    (tmp_path / "hook.py").write_text("rigged")
    inputs = gate_inputs(_spec(tmp_path, VerifyCriterion(command="python -m pytest -q")))
    baseline = baseline_json(Workspace(tmp_path), inputs)
    (tmp_path / "conftest.py").symlink_to("hook.py")
    (tmp_path / "pytest").symlink_to(tmp_path / "tests")
    change = inputs_changed(Workspace(tmp_path), baseline, 0)
    assert change is not None and set(change.modified) == {"conftest.py", "pytest"}


def test_a_virtual_environment_in_the_workspace_is_an_input(tmp_path: Path) -> None:
    """Its `bin/python` links out of the workspace, but its site-packages (where pytest
    lives) are in it: the whole environment is protected."""
    import sys

    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    ws = Workspace(tmp_path)
    for command, path in ((".venv/bin/python -m pytest", ""),
                          ("python -m pytest", f"{tmp_path}/.venv/bin{os.pathsep}/usr/bin")):
        found = command_inputs(command, ws, path)
        assert found.known and {".venv/bin/python", ".venv/**"} <= set(found.patterns)
    outside = command_inputs(f"{sys.executable} -m pytest", ws, "")
    assert ".venv/**" not in outside.patterns


def test_a_plugin_named_in_a_toml_array_is_an_input(tmp_path: Path) -> None:
    """pytest 9's ``pytest.toml`` (and pyproject's ini_options) spell ``addopts`` as a
    TOML array: ``["-p", "tomlplug"]`` names a plugin module just as ``-p tomlplug`` does."""
    (tmp_path / "pytest.toml").write_text('[pytest]\naddopts = ["-p", "tomlplug", "-q"]\n')
    (tmp_path / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\naddopts = ['-p','pyplug']\n")
    found = command_inputs("python -m pytest -q", Workspace(tmp_path))
    assert {"tomlplug.py", "tomlplug/**", "pyplug.py", "pyplug/**"} <= set(found.patterns)
