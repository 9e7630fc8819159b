"""docs/CONTRACT.md, "The store": a sound, up-to-date store is not written by the
read-only commands, nor by `io store check PATH` (real `io`, the file's bytes and its
directory compared)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def _snapshot(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.iterdir()}


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
