"""docs/ARCHITECTURE.md stays true to the tree: every module path it names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
_PATH = re.compile(r"`((?:harness_core|io_harness_cli|tests)/[A-Za-z0-9_./-]*)`")


def test_every_module_path_named_in_the_architecture_document_exists() -> None:
    named = sorted(set(_PATH.findall(DOC.read_text(encoding="utf-8"))))
    assert len(named) >= 20  # the document names the modules it describes
    missing = [p for p in named if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, f"docs/ARCHITECTURE.md names paths that do not exist: {missing}"


def test_the_host_boundary_section_names_every_allowed_call_site_module() -> None:
    from tests.test_architecture import ALLOWED

    text = DOC.read_text(encoding="utf-8")
    assert "## The host boundary" in text
    for module in ("harness_core/host/_process.py", "harness_core/host/_files.py",
                   "harness_core/tools/_git_repo.py", "harness_core/mcp/_stdio.py"):
        assert module in text
    assert any(m.startswith("harness_core/host/") for m, _, _ in ALLOWED)


_TRACE = "## One exec call, traced"
_NAMED = re.compile(
    r"`((?:harness_core|io_harness_cli)/[A-Za-z0-9_/]+\.py)`\s+`([A-Za-z_][\w.]*)`")


def _defined(path: Path) -> set[str]:
    """Every function of `path` as `name` (module level) or `Class.name` (methods)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(node.name)
        elif isinstance(node, ast.ClassDef):
            out.update(f"{node.name}.{item.name}" for item in node.body
                       if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return out


def _trace_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    assert _TRACE in text
    section = text.split(_TRACE, 1)[1]
    return section.split("\n## ", 1)[0]


def test_every_function_the_exec_trace_names_is_defined_where_it_says() -> None:
    named = _NAMED.findall(_trace_section())
    assert len(named) >= 20  # the hops, fresh and on resume, and the calls on the way
    missing = [f"{path} {name}" for path, name in sorted(set(named))
               if name not in _defined(ROOT / path)]
    assert not missing, f"the exec trace names functions that do not exist: {missing}"


def test_the_exec_trace_counts_its_hops() -> None:
    section = _trace_section()
    fresh = section.split("### On resume", 1)[0]
    hops = re.findall(r"^(\d+)\. `", fresh, flags=re.MULTILINE)
    assert hops == [str(n) for n in range(1, len(hops) + 1)]
    assert f"So {len(hops)} hops" in fresh  # the stated count is the listed one
