"""docs/CONTRACT.md, "What is public": the JSON line shape of `io run --json`, the
closed enumerations, the checkpoint format number the page states, and the typed
records whose JSON forms the store and `io run --json` carry."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness_core import (
    CHECKPOINT_FORMAT,
    ActKind,
    ApprovalDecision,
    ApprovalMode,
    CheckpointState,
    Effect,
    Pause,
    Store,
    Tier,
    ToolCall,
    Usage,
    Verdict,
)
from tests.conftest import REPO, io_cmd, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

CONTRACT = (REPO / "docs" / "CONTRACT.md").read_text()


def test_every_json_line_has_schema_kind_and_run_id_and_the_last_is_run_finished(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("look", ("list_dir", {})),
                                         replay_line("done")])
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    assert events and all({"schema", "kind", "run_id"} <= set(e) for e in events)
    last = events[-1]
    assert last["kind"] == "run_finished"
    assert last["status"] == "finished" and last["exit_code"] == 0
    assert [e["kind"] for e in events].count("run_finished") == 1


# The members each closed enumeration has today; adding one is a break the page forbids.
CLOSED = {
    ActKind: {"read", "write", "exec", "net", "mcp"},
    Verdict: {"allow", "deny", "ask"},
    Effect: {"allow", "deny"},
    Tier: {"read-only", "workspace-write", "full"},
    ApprovalMode: {"ask", "deny"},
    ApprovalDecision: {"approve", "deny"},
}


@pytest.mark.parametrize("enum", list(CLOSED), ids=lambda e: e.__name__)
def test_the_closed_enumerations_have_exactly_their_members(enum: type) -> None:
    assert {m.value for m in enum} == CLOSED[enum]  # type: ignore[attr-defined]
    assert f"`{enum.__name__}`" in CONTRACT.split("are closed")[0].rsplit("\n\n", 1)[-1]


def test_the_checkpoint_format_the_page_states_is_the_code_s() -> None:
    stated = re.search(r"`CHECKPOINT_FORMAT` \(\*\*(\d+)\*\*\)", CONTRACT)
    assert stated is not None
    assert int(stated.group(1)) == CHECKPOINT_FORMAT == 7


def test_records_are_typed_and_their_json_is_what_io_run_json_carries(
        tmp_path: Path, isolated_env: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("look", ("list_dir", {})),
        replay_line("make", ("exec", {"argv": ["touch", "made.txt"]})),
        replay_line("done"),
    ], toml_extra='[policy]\napproval = "ask"\n')
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 4, result.stderr
    finished = json_lines(result.stdout)[-1]
    run_id = str(finished["run_id"])
    with Store(isolated_env / "state" / "io" / "state.db") as store:
        record = store.run(run_id)
        steps = store.steps(run_id)
        checkpoint = store.last_checkpoint(run_id)
    assert isinstance(record.pause, Pause) and record.pause.kind == "approval"
    assert finished["pause"] == record.pause.to_json()  # the JSON form, unchanged
    assert all(isinstance(s.usage, Usage) for s in steps)
    assert all(isinstance(s.tool_calls, tuple) and all(isinstance(c, ToolCall)
                                                       for c in s.tool_calls) for s in steps)
    assert steps[0].tool_calls[0].name == "list_dir"
    assert checkpoint is not None and isinstance(checkpoint.state, CheckpointState)


@pytest.mark.parametrize(("argv", "stdin"), [
    ([b"run", b"goal", b"--json", b"--no-such-option"], b""),
    ([b"run", b"caf\xe9", b"--json"], b""),
    ([b"run", b"-", b"--json"], b"caf\xe9"),
    ([b"resume", b"", b"--json"], b""),
    ([b"resume", b"nope-no-such-run", b"--json"], b""),
    ([b"run", b"--json"], b""),
], ids=["unknown-option", "arg-not-utf8", "stdin-not-utf8", "empty-id", "unknown-run",
        "no-goal"])
def test_json_ends_with_run_finished_even_when_the_command_line_is_refused(
        tmp_path: Path, argv: list[bytes], stdin: bytes) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    result = subprocess.run([*(a.encode() for a in io_cmd()), *argv], cwd=ws, input=stdin,
                            capture_output=True, timeout=60)
    assert result.returncode == 2, result.stderr
    events = json_lines(result.stdout.decode())
    assert [e["kind"] for e in events] == ["run_finished"]
    assert events[0]["exit_code"] == 2 and events[0]["status"] == "error"
    assert {"schema", "kind", "run_id"} <= set(events[0])
