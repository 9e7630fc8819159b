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


def _module_imports(name: str, path: Path, modules: set[str]) -> set[str]:
    """The harness_core modules `name` imports at module level: its top-level imports and
    those under `if` (so `if TYPE_CHECKING:` counts) or `try`; imports inside functions
    do not."""
    import ast

    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package[: len(package) - (node.level - 1)]
                    base = ".".join([*parts, base] if base else parts)
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {m for m in found if m in modules and m != name}


def test_harness_core_has_no_import_cycle() -> None:
    """No circle among harness_core's modules (#26): module-level imports count, those
    under `if TYPE_CHECKING:` included; an import inside a function does not."""
    import graphlib

    paths: dict[str, Path] = {}
    for path in (ROOT / "harness_core").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {name: _module_imports(name, path, set(paths)) for name, path in paths.items()}
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle in harness_core: {' -> '.join(exc.args[1])}")


def test_no_run_loop_module_passes_400_lines() -> None:
    """The run loop stays readable in one sitting (#26): every module of
    harness_core/run/ is at most 400 lines."""
    long = {path.name: n for path in sorted((ROOT / "harness_core" / "run").glob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, f"modules of harness_core/run/ over 400 lines: {long}"
