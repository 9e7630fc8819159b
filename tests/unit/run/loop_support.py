"""What the run loop's mutation tests (`test_mutants_loop*.py`) share: scripted turns
with fixed usage, the shipped scripted provider over a script file, and a workspace."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from harness_core.policy import ApprovalDecision
from harness_core.providers._config import ProviderConfig
from harness_core.providers.scripted import ScriptedProvider

USAGE = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
"""The usage every scripted turn reports."""


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A tool call of a scripted turn."""
    return {"name": name, "arguments": arguments}


def line(text: str, *calls: dict[str, Any]) -> dict[str, Any]:
    """A scripted turn: `text`, `calls`, and `USAGE`."""
    turn: dict[str, Any] = {"text": text, "usage": USAGE}
    if calls:
        turn["tool_calls"] = list(calls)
    return turn


def scripted(tmp_path: Path, lines: list[dict[str, Any]]) -> ScriptedProvider:
    """The scripted provider replaying `lines` (written to a script under `tmp_path`)."""
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(turn) + "\n" for turn in lines))
    return ScriptedProvider(ProviderConfig(kind="scripted", script=script))


def workspace(tmp_path: Path) -> Path:
    """An empty workspace directory under `tmp_path` (made once, reused after)."""
    ws = tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    return ws


def write(path: str, content: str) -> dict[str, Any]:
    """A `write_file` call of a scripted turn."""
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def crash_in_step_1(path: Path, run_id: str) -> None:
    """Leave the store at `path` as a `kill -9` during step 1's call leaves it: step 1's
    completion and intent recorded, no observation, no checkpoint; the run `running`
    under an owner that is gone."""
    conn = sqlite3.connect(path)
    conn.execute("UPDATE ledger SET observation = NULL, is_error = 0, data = NULL,"
                 " observed_at = NULL WHERE run_id = ? AND step_index = 1", (run_id,))
    conn.execute("DELETE FROM messages WHERE run_id = ? AND step_index = 1 AND role = 'tool'",
                 (run_id,))
    for table in ("edits", "checkpoints", "budget_draws"):
        conn.execute(f"DELETE FROM {table} WHERE run_id = ? AND step_index >= 1",  # noqa: S608
                     (run_id,))
    conn.execute("UPDATE runs SET status = 'running', reason = NULL, steps_used = 1,"
                 " tokens_used = 12, owner_pid = 999999999 WHERE run_id = ?", (run_id,))
    conn.commit()
    conn.close()


class Approves:
    """An approver that approves every act and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def decide(self, act: Any, decision: Any) -> ApprovalDecision:
        self.asked.append(act.describe())
        return ApprovalDecision.APPROVE
