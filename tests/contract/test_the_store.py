"""docs/CONTRACT.md, "The store": a sound, up-to-date store is not written by the
read-only commands, nor by `io store check PATH`; `io store check --json` of a damaged
file is one object and exit 1 (real `io`, the file's bytes and its directory compared)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def _snapshot(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.iterdir()
            if p.is_file()}


def test_reading_commands_leave_a_sound_store_byte_for_byte(tmp_path: Path) -> None:
    store = tmp_path / "st" / "state.db"
    env = {"IO_STORE": str(store)}
    ws = make_workspace(tmp_path / "w", [replay_line("look", ("list_dir", {})),
                                         replay_line("done")])
    run = run_io(["run", "goal", "-w", str(ws), "--json"], env=env)
    assert run.returncode == 0, run.stderr
    run_id = str(json_lines(run.stdout)[-1]["run_id"])
    before = _snapshot(store.parent)
    for argv in (["runs"], ["trace", run_id], ["spend"], ["runs", "--json"],
                 ["store", "check", str(store)], ["store", "check", "--json"]):
        done = run_io([*argv, "-w", str(ws)], env=env)
        assert done.returncode == 0, (argv, done.stderr)
        assert _snapshot(store.parent) == before, argv


def test_store_check_json_of_a_damaged_store_is_one_object_and_exit_1(tmp_path: Path) -> None:
    store = tmp_path / "st" / "state.db"
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    assert run_io(["run", "goal", "-w", str(ws)], env={"IO_STORE": str(store)}).returncode == 0
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(store.read_bytes()[:5000])  # cut mid-page
    before = _snapshot(tmp_path)
    result = run_io(["store", "check", str(damaged), "--json"])
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert report["ok"] is False and report["problems"] and "truncated" in report["problems"][0]
    assert _snapshot(tmp_path) == before
