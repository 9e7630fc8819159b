"""Code health is part of the test command: ruff, mypy --strict and import-linter."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_ruff_is_clean() -> None:
    result = _run([sys.executable, "-m", "ruff", "check", "harness_core", "io_harness_cli",
                   "tests", "bench"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = _run([sys.executable, "-m", "mypy", "--strict", "harness_core", "io_harness_cli"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_linter_contracts_hold() -> None:
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports (import-linter) is not installed; pip install -e '.[dev]'")
    result = _run([exe])
    assert result.returncode == 0, result.stdout + result.stderr


def test_cli_imports_only_top_level_harness_core_names() -> None:
    offenders = []
    for path in (ROOT / "io_harness_cli").rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith(("from harness_core.", "import harness_core.")):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {stripped}")
    assert not offenders, "\n".join(offenders)
