"""Listing for scripts (issue 23): `io runs` and `io session list` show the workspace's
by default, `--all` every workspace's, `--status` filters, `--json` has stable fields,
and a shortened id that matches two runs lists them and exits 2."""

from __future__ import annotations

from pathlib import Path

from harness_core import Store
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

FIELDS = ["run_id", "created_at", "updated_at", "status", "exit_code", "steps", "tokens",
          "goal", "workspace", "session_id", "reason", "parent_run_id", "depth",
          "root_run_id", "agent", "pause", "resume"]
"""The stable keys of `io runs --json`, in order (scripts read them)."""


def _two_workspaces(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    mine = make_workspace(tmp_path / "mine", [replay_line("done")])
    other = make_workspace(tmp_path / "other", [
        replay_line("ask", ("exec", {"argv": ["touch", "x"]})), replay_line("done")])
    ids = []
    for ws in (mine, other):
        result = run_io(["run", "goal", "-w", str(ws), "--json"])
        ids.append(str(json_lines(result.stdout)[-1]["run_id"]))
    return mine, other, ids


def test_runs_shows_the_workspace_by_default_and_every_one_with_all(tmp_path: Path) -> None:
    mine, other, (mine_id, other_id) = _two_workspaces(tmp_path)
    listed = json_lines(run_io(["runs", "-w", str(mine), "--json"]).stdout)
    assert [r["run_id"] for r in listed] == [mine_id]
    assert list(listed[0]) == FIELDS and listed[0]["exit_code"] == 0
    from_cwd = json_lines(run_io(["runs", "--json"], cwd=other).stdout)  # -w defaults to .
    assert [r["run_id"] for r in from_cwd] == [other_id]
    everything = json_lines(run_io(["runs", "--all", "--json"], cwd=mine).stdout)
    assert {r["run_id"] for r in everything} == {mine_id, other_id}
    paused = json_lines(run_io(["runs", "--all", "--status", "paused", "--json"]).stdout)
    assert [(r["run_id"], r["exit_code"]) for r in paused] == [(other_id, 4)]
    two = json_lines(run_io(["runs", "--all", "--status", "paused", "--status", "finished",
                             "--json"]).stdout)
    assert len(two) == 2
    human = run_io(["runs", "-w", str(other)])
    assert other_id in human.stdout and mine_id not in human.stdout


def test_session_list_shows_the_workspace_by_default(tmp_path: Path) -> None:
    mine = make_workspace(tmp_path / "mine", [replay_line("ok")])
    other = make_workspace(tmp_path / "other", [replay_line("ok")])
    made = {}
    for ws in (mine, other):
        made[ws] = run_io(["session", "new", "-w", str(ws)]).stdout.strip()
    assert run_io(["session", "turn", made[mine], "hi", "-w", str(mine)]).returncode == 0
    listed = json_lines(run_io(["session", "list", "-w", str(mine), "--json"]).stdout)
    assert [s["session_id"] for s in listed] == [made[mine]]
    assert listed[0]["status"] == "finished" and listed[0]["turns"] == 1
    everything = json_lines(run_io(["session", "list", "--all", "--json"]).stdout)
    assert {s["session_id"] for s in everything} == set(made.values())
    finished = json_lines(run_io(["session", "list", "--all", "--status", "finished",
                                  "--json"]).stdout)
    assert [s["session_id"] for s in finished] == [made[mine]]


def test_an_ambiguous_short_id_lists_its_matches_and_exits_2(
        tmp_path: Path, isolated_env: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    ids = [f"7{n}aaaaaaaaaa" for n in range(2)]
    for run_id in ids:
        assert run_io(["run", "goal", "-w", str(ws), "--run-id", run_id]).returncode == 0
    with Store(isolated_env / "state" / "io" / "state.db") as store:
        assert {r.run_id for r in store.list_runs()} == set(ids)
    for argv in (["trace", "7"], ["resume", "7"]):
        result = run_io([*argv, "-w", str(ws)])
        assert result.returncode == 2, result.stderr
        assert "matches more than one run" in result.stderr
        assert all(run_id in result.stderr for run_id in ids)
        assert "no run '7'" not in result.stderr
    assert run_io(["trace", "70", "-w", str(ws)]).returncode == 0  # unique again


def test_an_unknown_status_is_a_usage_error(tmp_path: Path) -> None:
    result = run_io(["runs", "--status", "done"])
    assert result.returncode == 2 and "running, paused" in result.stderr
