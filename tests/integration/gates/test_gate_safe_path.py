"""A Python gate runs in safe-path mode: a `pytest.py`, a `pytest/` package or a module
named like the standard library's in the workspace cannot stand in for the runner, while
the code under test still imports from the workspace root. Real gates, real pytest,
under the floor and (where bubblewrap runs) the native sandbox."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from harness_core import (
    BackendChoice,
    SandboxConfig,
    SandboxSpec,
    SandboxUnavailable,
    TaskContract,
    VerifyCriterion,
    Workspace,
    run_gates,
)
from harness_core.host import safe_python_argv
from harness_core.sandbox import launcher, select

_CALC = "def add(a, b):\n    return a - b\n"
_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
_ENV = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}


def _workspace(root: Path, extra: dict[str, str]) -> Workspace:
    for name, text in {"calc.py": _CALC, "tests/test_calc.py": _TEST, **extra}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return Workspace(root)


def _gate(ws: Workspace, command: str, backend: BackendChoice) -> tuple[bool, str]:
    try:
        selected = select(SandboxConfig(backend=backend), env=_ENV)
    except SandboxUnavailable as exc:
        pytest.skip(f"{backend.value} sandbox unavailable here: {exc}")
    run = launcher(selected, SandboxSpec(workdir=ws.root, env=_ENV))
    try:
        [result] = run_gates(TaskContract(verify=(VerifyCriterion(command=command),)), ws, run)
    finally:
        close = getattr(run, "close", None)
        if close is not None:
            close()
    return result.passed, result.output


SHADOWS = {
    "pytest.py": {"pytest.py": "import sys\nsys.exit(0)\n"},
    "pytest/ package": {"pytest/__init__.py": "", "pytest/__main__.py": "raise SystemExit(0)\n"},
    "argparse.py (a stdlib name pytest imports)": {"argparse.py": "import os\nos._exit(0)\n"},
}


@pytest.mark.parametrize("backend", [BackendChoice.FLOOR, BackendChoice.NATIVE],
                         ids=["floor", "native"])
@pytest.mark.parametrize("shadow", sorted(SHADOWS))
def test_a_workspace_module_cannot_shadow_the_runner(
        tmp_path: Path, shadow: str, backend: BackendChoice) -> None:
    ws = _workspace(tmp_path, SHADOWS[shadow])
    passed, output = _gate(ws, f"{sys.executable} -m pytest -q -p no:cacheprovider", backend)
    assert not passed, output
    assert "1 failed" in output  # the real pytest ran the real test


@pytest.mark.parametrize("backend", [BackendChoice.FLOOR, BackendChoice.NATIVE],
                         ids=["floor", "native"])
def test_the_code_under_test_still_imports_from_the_root(
        tmp_path: Path, backend: BackendChoice) -> None:
    ws = _workspace(tmp_path, {"calc.py": "from helper import plus as add\n",
                               "helper.py": "def plus(a, b):\n    return a + b\n",
                               "check.py": "import sys\nfrom calc import add\n"
                                           "sys.exit(add(2, 3) != 5)\n"})
    for command in ("-m pytest -q -p no:cacheprovider", "check.py",
                    "-c 'import calc; assert calc.add(2, 3) == 5'"):
        passed, output = _gate(ws, f"{sys.executable} {command}", backend)
        assert passed, (command, output)


def test_the_rewrite_keeps_the_interpreter_and_its_options() -> None:
    argv = safe_python_argv(["python3", "-X", "dev", "-W", "error", "-m", "pytest", "-q"])
    assert argv[:6] == ["python3", "-X", "dev", "-W", "error", "-s"]
    assert argv[6] == "-c" and argv[8:] == ["m", "pytest", "-q"]
    cached = safe_python_argv(["python", "-m", "pytest"], "/tmp/pyc")
    assert cached[1:5] == ["-s", "-X", "pycache_prefix=/tmp/pyc", "-c"]
    assert safe_python_argv(["python", "check.py", "a"])[-3:] == ["s", "check.py", "a"]
    assert safe_python_argv(["python", "-c", "pass", "x"])[-3:] == ["c", "pass", "x"]
    for unchanged in (["pytest", "-q"], ["python"], ["python", "-"], ["python", "-m"],
                      ["sh", "-c", "python -m pytest"]):
        assert safe_python_argv(unchanged) == unchanged
