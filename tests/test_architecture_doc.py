"""docs/ARCHITECTURE.md stays true to the tree: every module path it names exists."""

from __future__ import annotations

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
