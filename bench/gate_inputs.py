"""What gate integrity costs a run: toolchain survey, input inference and protection,
and the fingerprint taken at the start and again before the gates, on a synthetic tree.

    python bench/gate_inputs.py [FILES]

The tree: FILES source files in 100 packages, a tests/ directory with a tenth as many
test files (2 KiB each), and a node_modules with FILES files that the fingerprint
prunes. Each figure is the best of 5 (noise only ever adds time).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness_core import (
    RunSpec,
    TaskContract,
    VerifyCriterion,
    Workspace,
    gate_inputs,
    protect_gate_inputs,
    survey_toolchain,
)
from harness_core.run._inputs import baseline_json, inputs_changed


def _tree(root: Path, files: int) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
    for i in range(files):
        package = root / "src" / f"pkg{i % 100}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"m{i}.py").write_text("x = 1\n" * 50)
    (root / "tests").mkdir()
    for i in range(files // 10):
        (root / "tests" / f"test_{i}.py").write_text("def test_x():\n    pass\n" * 90)
    modules = root / "node_modules" / "dep"
    modules.mkdir(parents=True)
    for i in range(files):
        (modules / f"f{i}.test.js").write_text("1")


def _best(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _tree(root, files)
        ws = Workspace(root)
        spec = RunSpec(workspace=ws, contract=TaskContract(verify=(
            VerifyCriterion(command="python -m pytest -q"),)))
        inputs = gate_inputs(spec)
        baseline = baseline_json(ws, inputs)
        figures = {
            "survey_toolchain": _best(lambda: survey_toolchain(ws)),
            "gate_inputs + protect_gate_inputs": _best(lambda: protect_gate_inputs(spec)),
            "fingerprint at the start (baseline)": _best(lambda: baseline_json(ws, inputs)),
            "compare before the gates": _best(lambda: inputs_changed(ws, baseline, 0)),
        }
    print(f"{files} source files, {files // 10} test files, {files} files in node_modules")
    for name, seconds in figures.items():
        print(f"  {name:<40} {seconds * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
