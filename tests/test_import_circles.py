"""No import circle in `io_harness_cli` (issue 37), counting every import: those at the
top of a module, those inside a function (lazy) and those under `if TYPE_CHECKING:`. A
circle that only lazy imports close still ties the modules into one knot a reader must
hold whole, and one hoisted import turns it into an import-time crash."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGE = "io_harness_cli"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """The package's modules that `path` imports, anywhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found |= {t for t in targets if t in modules and t != name}
    return found


def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in (REPO / PACKAGE).rglob("*.py")}
    modules = set(paths)
    return {name: _imports(path, name, modules) for name, path in paths.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_cli_has_no_import_circle() -> None:
    graph = _graph()
    assert f"{PACKAGE}.main" in graph and graph[f"{PACKAGE}.main"]  # the scan sees imports
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_lazy_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
