"""The CLI's private modules: named by what they do, no import circle among them, and
nothing that imports click (typer 0.28 vendors its own and no longer installs it)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

COMMANDS = REPO / "io_harness_cli" / "commands"


def _imports(path: Path) -> set[str]:
    """Every `io_harness_cli.commands._x` a module imports, at any depth (type-only too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("io_harness_cli.commands._"):
                found.add(node.module.rsplit(".", 1)[1])
            elif node.module == "io_harness_cli.commands":
                found |= {a.name for a in node.names if a.name.startswith("_")}
    return found


def test_no_private_cli_module_takes_part_in_an_import_circle() -> None:
    graph = {p.stem: _imports(p) for p in COMMANDS.glob("_*.py") if p.stem != "__init__"}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, set()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = sorted(name for name in graph if reaches(name, name, {name}))
    assert circles == [], circles


def test_there_is_no_grab_bag_module() -> None:
    names = {p.stem for p in COMMANDS.glob("_*.py")}
    assert not names & {"_common", "_utils", "_helpers", "_misc"}, names


def test_no_cli_module_imports_click() -> None:
    for path in (REPO / "io_harness_cli").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "click" or n.startswith("click.") for n in names), path


def test_a_usage_hint_needs_no_click(monkeypatch: pytest.MonkeyPatch) -> None:
    """`hint_for` once imported click to find the command's name: without click (the
    README's install) every usage error became "internal error"."""
    from harness_core import ConfigError, UsageError
    from io_harness_cli.commands._failure import hint_for

    monkeypatch.setitem(sys.modules, "click", None)  # `import click` now fails
    monkeypatch.setattr(sys, "argv", ["io", "tool", "nosuch"])
    assert hint_for(UsageError("unknown tool")) == "see `io tool --help`"
    monkeypatch.setattr(sys, "argv", ["io", "config", "check", "-w", "x"])
    assert hint_for(UsageError("bad")) == "see `io config check --help`"
    monkeypatch.setattr(sys, "argv", ["io", "run", "-w", "session", "goal"])
    assert hint_for(UsageError("bad")) == "see `io run --help`"
    assert "io config check" in str(hint_for(ConfigError("bad key")))
