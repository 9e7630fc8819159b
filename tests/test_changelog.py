"""Every **Breaking** CHANGELOG entry carries a Migration: note; requires-python matches
docs/CONTRACT.md; the default install pulls no optional dependency."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_breaking_entry_has_a_migration_note() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    sections = re.split(r"(?m)^### ", text)
    for section in sections:
        if not section.lower().startswith("breaking"):
            continue
        entries = re.split(r"(?m)^- ", section)[1:]
        for entry in entries:
            assert "Migration:" in entry, f"Breaking entry without a migration note: {entry[:80]}"


def test_requires_python_matches_the_contract() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    contract = (ROOT / "docs" / "CONTRACT.md").read_text()
    spec = project["requires-python"]
    assert spec == ">=3.11"
    assert f"`requires-python = \"{spec}\"`" in contract


def test_default_dependencies_are_pinned_and_hold_no_optional_library() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=;\[ ]", d)[0].lower() for d in project["dependencies"]]
    assert names == ["typer", "rich", "tomli-w", "pydantic", "psutil", "httpx", "truststore",
                     "jsonschema", "referencing", "pathspec", "mcp", "pywin32"]
    assert all(">=" in d for d in project["dependencies"])
    extras = project["optional-dependencies"]
    for extra in ("media", "xlsx", "docx", "pptx", "pdf", "barcode", "documents", "otel"):
        assert extra in extras
    optional = {"openpyxl", "python-docx", "python-pptx", "pypdf", "fpdf2", "zxing-cpp",
                "opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"}
    assert not optional & set(names)
