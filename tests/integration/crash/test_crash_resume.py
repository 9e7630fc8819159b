"""kill -9 of a real runner at named points and at random times, then resume: nothing
committed is lost or requested again, and a tool call runs at most once."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness_core import INTERRUPTED_OBSERVATION, RunNotFound, RunStatus, Store

RUNNER = Path(__file__).with_name("crash_runner.py")
STEPS = 4


def _replay(path: Path, steps: int, *, big_write_at: int | None = None) -> None:
    lines = []
    for step in range(steps):
        calls = [{"name": "append_line", "arguments": {"text": f"{step}:line"}}]
        if step == big_write_at:
            calls.append({"name": "write_file",
                          "arguments": {"path": "big.txt", "content": "new" * 100_000}})
        lines.append(json.dumps({"text": f"step {step}", "tool_calls": calls,
                                 "usage": {"total_tokens": 5}}))
    lines.append(json.dumps({"text": "done", "usage": {"total_tokens": 1}}))
    path.write_text("\n".join(lines) + "\n")


def _spawn(tmp: Path, mode: str, point: str = "none", step: int = -1) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(RUNNER), str(tmp / "state.db"), str(tmp / "ws"),
         str(tmp / "replay.jsonl"), mode, point, str(step)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def _resume_until_done(tmp: Path) -> None:
    for _ in range(5):
        code, out, err = _finish(_spawn(tmp, "resume:run-crash"))
        assert code == 0, err
        if out.startswith("finished"):
            return
    raise AssertionError("run did not finish after resuming")


def _requests(tmp: Path) -> list[int]:
    log = tmp / "requests.log"
    return [int(x) for x in log.read_text().split()] if log.exists() else []


def _check_store(tmp: Path, steps: int) -> Store:
    store = Store(tmp / "state.db")
    assert store.integrity_check() == "ok"
    assert [s.step_index for s in store.steps("run-crash")] == list(range(steps + 1))
    assert store.run("run-crash").status is RunStatus.FINISHED
    return store


def _has_run(tmp: Path) -> bool:
    if not (tmp / "state.db").exists():
        return False
    with Store(tmp / "state.db") as store:
        try:
            store.run("run-crash")
        except RunNotFound:
            return False
    return True


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "big.txt").write_text("old")
    _replay(tmp_path / "replay.jsonl", STEPS, big_write_at=1)
    return tmp_path


@pytest.mark.parametrize("point", ["before_request", "after_response", "mid_commit"])
def test_kill_before_a_completion_commits_requests_it_again_and_loses_nothing(
        tmp: Path, point: str) -> None:
    code, _, _ = _finish(_spawn(tmp, "start", point, 2))
    assert code == -9
    _resume_until_done(tmp)
    store = _check_store(tmp, STEPS)
    lines = (tmp / "ws" / "log.txt").read_text().splitlines()
    assert lines == [f"{s}:line" for s in range(STEPS)]
    requests = _requests(tmp)
    # Steps committed before the kill were never requested again.
    assert requests.count(0) == 1 and requests.count(1) == 1 and requests.count(3) == 1
    assert requests.count(2) == (1 if point == "before_request" else 2)
    store.close()


def test_kill_after_a_side_effect_never_reruns_the_call(tmp: Path) -> None:
    code, _, _ = _finish(_spawn(tmp, "start", "after_effect", 2))
    assert code == -9
    _resume_until_done(tmp)
    store = _check_store(tmp, STEPS)
    lines = (tmp / "ws" / "log.txt").read_text().splitlines()
    assert lines.count("2:line") == 1  # exactly once: not re-run after resume
    assert lines == [f"{s}:line" for s in range(STEPS)]
    entry = [e for e in store.ledger("run-crash", 2) if e.name == "append_line"][0]
    assert entry.observation == INTERRUPTED_OBSERVATION
    assert sorted(_requests(tmp)) == list(range(STEPS + 1))
    store.close()


def test_kill_right_after_an_intent_commits_never_runs_the_call(tmp: Path) -> None:
    """Write point 1 of a step (`StepWrites.intent`): the intent is committed and the
    process dies before the call starts. The resume does not run it (its outcome is
    unknown to io) and tells the model so; no completion is requested again."""
    code, _, _ = _finish(_spawn(tmp, "start", "after_intent", 2))
    assert code == -9
    _resume_until_done(tmp)
    store = _check_store(tmp, STEPS)
    lines = (tmp / "ws" / "log.txt").read_text().splitlines()
    assert lines == [f"{s}:line" for s in range(STEPS) if s != 2]
    entry = [e for e in store.ledger("run-crash", 2) if e.name == "append_line"][0]
    assert entry.observation == INTERRUPTED_OBSERVATION
    assert sorted(_requests(tmp)) == list(range(STEPS + 1))
    store.close()


@pytest.mark.parametrize("step", [1, 2])
def test_kill_right_after_an_observation_commits_keeps_it_and_goes_on(
        tmp: Path, step: int) -> None:
    """Write point 2 (`StepWrites.observation`): at step 2 the only call's observation,
    which carries the step's checkpoint; at step 1 the first of two calls' (the second
    has no intent yet). Nothing observed runs again, the rest runs once."""
    code, _, _ = _finish(_spawn(tmp, "start", "after_observation", step))
    assert code == -9
    _resume_until_done(tmp)
    store = _check_store(tmp, STEPS)
    lines = (tmp / "ws" / "log.txt").read_text().splitlines()
    assert lines == [f"{s}:line" for s in range(STEPS)]
    observed = {e.name: e.observation for e in store.ledger("run-crash", step)}
    assert observed["append_line"] == f"appended {step}:line"
    assert INTERRUPTED_OBSERVATION not in observed.values()
    assert (tmp / "ws" / "big.txt").read_text() == "new" * 100_000
    assert sorted(_requests(tmp)) == list(range(STEPS + 1))
    store.close()


def test_kill_right_after_a_checkpoint_commits_resumes_at_the_next_point(tmp: Path) -> None:
    """Write point 3 (`StepWrites.checkpoint`), written alone for the final answer's
    step (it has no call to carry it): the resume checks the answer and ends the run
    without asking the model again."""
    code, _, _ = _finish(_spawn(tmp, "start", "after_checkpoint", STEPS))
    assert code == -9
    _resume_until_done(tmp)
    _check_store(tmp, STEPS).close()
    assert sorted(_requests(tmp)) == list(range(STEPS + 1))


def test_kill_mid_write_file_leaves_the_old_or_the_new_file_never_a_torn_one(tmp: Path) -> None:
    code, _, _ = _finish(_spawn(tmp, "start", "mid_write", 1))
    assert code == -9
    assert (tmp / "ws" / "big.txt").read_text() in ("old", "new" * 100_000)
    _resume_until_done(tmp)
    assert (tmp / "ws" / "big.txt").read_text() in ("old", "new" * 100_000)
    _check_store(tmp, STEPS).close()


def test_kill_after_the_final_answer_was_checked_ends_the_run_on_resume(tmp: Path) -> None:
    """Killed after the final answer's gates were recorded as passed (none here) but
    before the run's end: the resume ends it finished, asking the model for nothing
    (it asked for one more step, and a scripted replay ran out)."""
    code, _, _ = _finish(_spawn(tmp, "start", "after_verify", STEPS))
    assert code == -9
    code, out, err = _finish(_spawn(tmp, "resume:run-crash"))
    assert code == 0, err
    assert out.startswith("finished"), out
    assert _requests(tmp).count(STEPS + 1) == 0
    with Store(tmp / "state.db") as store:
        run = store.run("run-crash")
        assert run.status is RunStatus.FINISHED and run.reason == "done; no gates configured"


def test_resuming_a_finished_run_makes_no_provider_call(tmp: Path) -> None:
    code, out, _ = _finish(_spawn(tmp, "start"))
    assert code == 0 and out.startswith("finished")
    before = _requests(tmp)
    code, out, _ = _finish(_spawn(tmp, "resume:run-crash"))
    assert code == 0 and out.startswith("finished")
    assert _requests(tmp) == before


@pytest.mark.parametrize("seed", range(10))
def test_random_kills_then_resume_keep_every_invariant(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    steps = 25
    (tmp_path / "ws").mkdir()
    _replay(tmp_path / "replay.jsonl", steps)
    mode = "start"
    for _ in range(6):
        proc = _spawn(tmp_path, mode)
        try:
            proc.wait(timeout=rng.uniform(0.05, 0.6))
        except subprocess.TimeoutExpired:
            proc.kill()
        out, _ = proc.communicate(timeout=60)
        if _has_run(tmp_path):
            mode = "resume:run-crash"
        if proc.returncode == 0 and out.startswith("finished"):
            break
    if not _has_run(tmp_path):
        code, out, err = _finish(_spawn(tmp_path, "start"))
        assert code == 0, err
    else:
        _resume_until_done(tmp_path)
    store = _check_store(tmp_path, steps)
    lines = (tmp_path / "ws" / "log.txt").read_text().splitlines()
    for step in range(steps):
        assert lines.count(f"{step}:line") <= 1  # at most once, whatever the kill hit
    observed = {e.step_index for e in store.ledger("run-crash") if e.observation
                and e.observation != INTERRUPTED_OBSERVATION}
    for step in observed:
        assert lines.count(f"{step}:line") == 1
    conn = sqlite3.connect(tmp_path / "state.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    store.close()
