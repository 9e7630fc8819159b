"""kill -9 at git_commit's intent/observation boundary, then resume: the commit lands
exactly once, found by its `Io-Call` trailer when it had landed before the kill."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness_core import RunStatus, Store
from tests.unit.git.test_git_tools import git, make_repo

RUNNER = Path(__file__).with_name("git_crash_runner.py")


def _spawn(tmp: Path, mode: str, point: str = "none") -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, str(RUNNER), str(tmp / "state.db"), str(tmp / "ws"),
         str(tmp / "replay.jsonl"), mode, point], capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    make_repo(tmp_path / "ws")
    lines = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b\n"}}]},
        {"tool_calls": [{"name": "git_commit",
                         "arguments": {"message": "add b", "paths": ["b.txt"]}}]},
        {"text": "done"},
    ]
    (tmp_path / "replay.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return tmp_path


def _commits(tmp: Path) -> list[str]:
    return git(tmp / "ws", "log", "--format=%s").split("\n")[:-1]


def test_kill_after_the_commit_landed_reports_it_on_resume_not_twice(tmp: Path) -> None:
    code, _, _ = _spawn(tmp, "start", "before_observation")
    assert code == -9
    assert _commits(tmp) == ["add b", "first"]  # it landed before the kill
    assert "Io-Call: run-git/1/0" in git(tmp / "ws", "log", "-1", "--format=%B")
    (tmp / "ws" / "b.txt").write_text("changed after the crash\n")  # would commit again
    code, out, err = _spawn(tmp, "resume:run-git")
    assert code == 0 and out.startswith("finished"), err
    assert _commits(tmp) == ["add b", "first"]
    with Store(tmp / "state.db") as store:
        assert store.run("run-git").status is RunStatus.FINISHED
        entry = [e for e in store.ledger("run-git", 1) if e.name == "git_commit"][0]
        sha = git(tmp / "ws", "rev-parse", "HEAD").strip()
        assert entry.observation is not None and sha[:12] in entry.observation
        assert "not committed again" in entry.observation


def test_kill_before_the_commit_ran_commits_once_on_resume(tmp: Path) -> None:
    code, _, _ = _spawn(tmp, "start", "after_intent")
    assert code == -9
    assert _commits(tmp) == ["first"]
    code, out, err = _spawn(tmp, "resume:run-git")
    assert code == 0 and out.startswith("finished"), err
    assert _commits(tmp) == ["add b", "first"]
    assert "Io-Call: run-git/1/0" in git(tmp / "ws", "log", "-1", "--format=%B")
