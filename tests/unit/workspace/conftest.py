"""Fixtures: a workspace root beside an outside directory holding a canary file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_core.workspace import Workspace

CANARY = b"canary: must never change"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "canary.txt").write_bytes(CANARY)
    return path


@pytest.fixture(params=["dir_fd", "paths"])
def ws(request: pytest.FixtureRequest, root: Path) -> Iterator[Workspace]:
    """The workspace, once with descriptor walking and once with the path fallback."""
    workspace = Workspace(root)
    if request.param == "paths":
        workspace._use_dir_fd = False  # the fallback used where dir_fd is unsupported
    yield workspace
