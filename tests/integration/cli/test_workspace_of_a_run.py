"""A run (or a session) acts in the workspace it was recorded in (#23 audit): `io resume
ID -w OTHER` resumed another project's paused run in OTHER, ran the approved act there
and still printed "resumed in" the recorded one. `-w` naming another existing workspace
is a usage error (exit 2) for `io resume`, `io undo`/`io rewind` and `io session turn`;
`-w` naming the recorded workspace, or no `-w`, works; a recorded workspace that no
longer exists (moved) may be named anew with `-w`."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

_ASK = '[policy]\napproval = "ask"\n'


def _paused(tmp_path: Path) -> tuple[Path, Path, str]:
    mine = make_workspace(tmp_path / "mine", [
        replay_line("touching", ("exec", {"argv": ["touch", "a.txt"]})), replay_line("done")],
        toml_extra=_ASK)
    other = make_workspace(tmp_path / "other", [replay_line("other done")])
    paused = run_io(["run", "goal", "-w", str(mine), "--json"])
    assert paused.returncode == 4, paused.stderr
    return mine, other, str(json_lines(paused.stdout)[-1]["run_id"])


def _refused(result_stderr: str, returncode: int, recorded: Path) -> None:
    assert returncode == 2, result_stderr
    assert f"workspace {str(recorded.resolve())!r}" in result_stderr, result_stderr
    assert "hint:" in result_stderr and "Traceback" not in result_stderr


def test_resume_with_another_workspace_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    mine, other, run_id = _paused(tmp_path)
    refused = run_io(["resume", run_id, "-w", str(other), "--approve"])
    _refused(refused.stderr, refused.returncode, mine)
    assert not (other / "a.txt").exists() and not (mine / "a.txt").exists()
    same = run_io(["resume", run_id, "-w", str(mine), "--approve"])
    assert same.returncode == 0, same.stderr
    assert (mine / "a.txt").exists() and not (other / "a.txt").exists()


def test_resume_of_a_moved_workspace_takes_the_new_place(tmp_path: Path) -> None:
    mine, _, run_id = _paused(tmp_path)
    moved = tmp_path / "moved"
    shutil.move(str(mine), str(moved))
    resumed = run_io(["resume", run_id, "-w", str(moved), "--approve"])
    assert resumed.returncode == 0, resumed.stderr
    assert (moved / "a.txt").exists()


def test_undo_and_rewind_with_another_workspace_are_refused(tmp_path: Path) -> None:
    mine = make_workspace(tmp_path / "mine", [
        replay_line("writing", ("write_file", {"path": "f.txt", "content": "new"})),
        replay_line("done")], files={"f.txt": "old"})
    other = make_workspace(tmp_path / "other", [replay_line("x")], files={"f.txt": "theirs"})
    done = run_io(["run", "goal", "-w", str(mine), "--json"])
    run_id = str(json_lines(done.stdout)[-1]["run_id"])
    for argv in (["undo", run_id], ["rewind", run_id, "--to", "0"]):
        refused = run_io([*argv, "-w", str(other)])
        _refused(refused.stderr, refused.returncode, mine)
        assert (other / "f.txt").read_text() == "theirs"
    assert (mine / "f.txt").read_text() == "new"


def test_a_session_turn_with_another_workspace_is_refused(tmp_path: Path) -> None:
    mine = make_workspace(tmp_path / "mine", [replay_line("ok")])
    other = make_workspace(tmp_path / "other", [replay_line("ok")])
    session_id = run_io(["session", "new", "-w", str(mine)]).stdout.strip()
    refused = run_io(["session", "turn", session_id, "hi", "-w", str(other)])
    _refused(refused.stderr, refused.returncode, mine)
    assert run_io(["session", "turn", session_id, "hi", "-w", str(mine)]).returncode == 0
