"""docs/contract-tests.md names the test that pins each claim of docs/CONTRACT.md; every
file and test it names must exist, so the map cannot silently rot (a renamed or deleted
test that pinned a claim fails here until the table names its replacement)."""

from __future__ import annotations

import re

from tests.conftest import REPO

TABLE = (REPO / "docs" / "contract-tests.md").read_text()
TESTS = REPO / "tests"


def _references() -> list[tuple[str, str | None]]:
    """(file, test name or None) for every `path.py` / `path.py::name, ::name` cited."""
    refs: list[tuple[str, str | None]] = []
    for row in (line for line in TABLE.splitlines() if line.startswith("| ")):
        for piece in row.split("|")[2].split(";"):
            found = re.search(r"([\w/]+\.py)((?:(?:,\s*)?::\w+)*)", piece)
            if found is None:
                continue
            path = found.group(1).replace("C/", "contract/", 1)
            names = re.findall(r"::(\w+)", found.group(2))
            refs.extend((path, n) for n in names) if names else refs.append((path, None))
    return refs


def test_every_cited_file_and_test_exists() -> None:
    refs = _references()
    assert len(refs) > 150
    missing = []
    for path, name in refs:
        file = TESTS / path
        if not file.is_file():
            missing.append(path)
        elif name is not None and not re.search(rf"def {name}\(", file.read_text()):
            missing.append(f"{path}::{name}")
    assert missing == []

