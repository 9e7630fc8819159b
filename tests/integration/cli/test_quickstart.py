"""The README's first command: the offline quick start finishes with exit 0 and leaves the
example untouched."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.conftest import REPO, run_io


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and ".pytest_cache" not in path.parts:
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def test_quickstart_finishes_with_exit_0_and_never_modifies_the_example() -> None:
    example = REPO / "examples" / "quickstart"
    before = _digest(example)
    result = run_io(["run", "--workspace", str(example), "--scratch"])
    assert result.returncode == 0, result.stderr
    assert "-    return a - b" in result.stderr
    assert "+    return a + b" in result.stderr
    assert "scratch copy removed: the run has ended" in result.stderr  # it finished
    assert _digest(example) == before


def test_quickstart_json_ends_with_run_finished_exit_0() -> None:
    from tests.integration.cli.helpers import json_lines

    result = run_io(["run", "-w", str(REPO / "examples" / "quickstart"), "--scratch", "--json"])
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    assert events[0]["kind"] == "run_started"
    assert events[-1]["kind"] == "run_finished"
    assert events[-1]["exit_code"] == 0 and events[-1]["status"] == "finished"
    assert all("run_id" in e and e["schema"] == 1 for e in events)
    gates = [e for e in events if e["kind"] == "verification"]
    assert gates and gates[-1]["passed"] is True
