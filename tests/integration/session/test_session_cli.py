"""`io session` through the real CLI: the tree is append-only and readable, a second
driver gets a clear error, and a turn killed with SIGKILL resumes by its run id."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line
from tests.integration.session.helpers import Blocker, first_event, open_store


def _workspace(tmp_path: Path, blocker: Blocker | None = None) -> Path:
    """io.toml replays one plain answer; block.toml replays a blocking call first."""
    ws = make_workspace(tmp_path / "w", [replay_line("ok")],
                        toml_extra='[policy]\ntier = "full"\n')
    if blocker is not None:
        (ws / "block.jsonl").write_text("\n".join([
            replay_line("wait", blocker.call()), replay_line("done")]) + "\n")
        (ws / "block.toml").write_text(
            (ws / "io.toml").read_text().replace("replay.jsonl", "block.jsonl"))
    return ws


def _new(ws: Path) -> str:
    made = run_io(["session", "new", "-w", str(ws), "--title", "demo"])
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def _show(ws: Path, session: str) -> dict[str, Any]:
    shown = run_io(["session", "show", session, "-w", str(ws), "--json"])
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


def _turns(ws: Path, session: str) -> list[dict[str, Any]]:
    return list(_show(ws, session)["turns"])


def test_turns_and_a_branch_form_a_tree_and_the_old_branch_stays_readable(tmp_path: Path
                                                                          ) -> None:
    ws = _workspace(tmp_path)
    session = _new(ws)
    for text in ("first", "second", "third"):
        turn = run_io(["session", "turn", session, text, "-w", str(ws), "--json"])
        assert turn.returncode == 0, turn.stderr
        assert json_lines(turn.stdout)[-1]["status"] == "finished"
    before = _turns(ws, session)
    with open_store() as store:
        old = {t["run_id"]: store.messages(t["run_id"]) for t in before}

    branch = run_io(["session", "branch", session, "instead", "--from", "1", "-w", str(ws),
                     "--json"])
    assert branch.returncode == 0, branch.stderr
    after = _show(ws, session)
    turns = after["turns"]
    assert [(t["number"], t["parent"]) for t in turns] == [(1, None), (2, 1), (3, 2), (4, 1)]
    assert turns[:3] == before and after["latest"] == 4
    with open_store() as store:
        assert {r: store.messages(r) for r in old} == old  # nothing edited
        seen = [m.content for m in store.messages(turns[3]["run_id"])]
    assert "first" in seen and "second" not in seen and seen[-2:] == ["instead", "ok"]

    plain = run_io(["session", "show", session, "-w", str(ws)])
    lines = plain.stdout.splitlines()
    assert lines[0].startswith(f"session {session}") and "4 turns" in lines[0]
    assert [ln.split()[0] if not ln.lstrip().startswith("└") else "branch" for ln in lines[1:]] \
        == ["#1", "branch", "#2", "#3"]
    assert "(branch from #1)" in lines[2] and "← latest" in lines[2]
    listed = run_io(["session", "list", "-w", str(ws), "--json"])
    assert json_lines(listed.stdout)[0]["turns"] == 4


def test_a_second_process_taking_a_turn_mid_turn_gets_a_clear_error(tmp_path: Path) -> None:
    blocker = Blocker(tmp_path)
    ws = _workspace(tmp_path, blocker)
    session = _new(ws)
    proc = subprocess.Popen(
        [*io_cmd(), "session", "turn", session, "long", "-w", str(ws), "-c",
         str(ws / "block.toml"), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_id = first_event(proc)["run_id"]
        blocker.wait_started(proc)
        second = run_io(["session", "turn", session, "meanwhile", "-w", str(ws)])
        assert second.returncode == 5  # busy: another process takes a turn (#23)
        assert "has a turn in flight" in second.stderr and run_id in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        blocker.release()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert [t["message"] for t in _turns(ws, session)] == ["long"]
    after = run_io(["session", "turn", session, "now", "-w", str(ws)])
    assert after.returncode == 0, after.stderr


def test_a_turn_killed_with_sigkill_resumes_by_run_id_and_the_session_goes_on(
        tmp_path: Path) -> None:
    blocker = Blocker(tmp_path)
    ws = _workspace(tmp_path, blocker)
    session = _new(ws)
    proc = subprocess.Popen(
        [*io_cmd(), "session", "turn", session, "long", "-w", str(ws), "-c",
         str(ws / "block.toml"), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_id = first_event(proc)["run_id"]
    blocker.wait_started(proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    blocker.release()

    [killed] = _turns(ws, session)
    assert killed["run_id"] == run_id and killed["status"] == "running"
    resumed = run_io(["resume", run_id, "-w", str(ws), "-c", str(ws / "block.toml"), "--json"])
    assert resumed.returncode == 0, resumed.stderr
    [finished] = _turns(ws, session)
    assert finished["status"] == "finished"
    # the killed driver's session lock does not block the next turn
    nxt = run_io(["session", "turn", session, "next", "-w", str(ws), "--json"])
    assert nxt.returncode == 0, nxt.stderr
    assert _turns(ws, session)[1]["parent"] == 1


def test_unknown_session_and_bad_turn_are_usage_errors(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    missing = run_io(["session", "show", "nope", "-w", str(ws)])
    assert missing.returncode == 2 and "no session" in missing.stderr
    session = _new(ws)
    bad = run_io(["session", "branch", session, "x", "--from", "7", "-w", str(ws), "--json"])
    assert bad.returncode == 2 and "has no turn" in bad.stderr
    assert json_lines(bad.stdout)[-1]["kind"] == "run_finished"
