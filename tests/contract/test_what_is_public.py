"""docs/CONTRACT.md, "What is public": the JSON line shape of `io run --json`, the
closed enumerations, and the checkpoint format number the page states."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness_core import (
    CHECKPOINT_FORMAT,
    ActKind,
    ApprovalDecision,
    ApprovalMode,
    Effect,
    Tier,
    Verdict,
)
from tests.conftest import REPO, run_io
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
    ActKind: {"read", "write", "exec", "net"},
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
