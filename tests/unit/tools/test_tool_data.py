"""A tool's data is a typed record: each kind writes the JSON object its dict wrote (keys
in the same order), reads it back into the same record, and the ledger hands back the
record of the entry's tool with the refusal and raw arguments split out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    AnswerData,
    ChildRunData,
    DirListing,
    DocumentRead,
    Edit,
    ExecData,
    FileRead,
    FileWritten,
    FindData,
    GitCommitData,
    GitDiffData,
    GitStatusData,
    GrepData,
    HandleData,
    HandleStarted,
    ImageData,
    McpData,
    Message,
    OpenData,
    PlanData,
    Refusal,
    ShellData,
    SpawnRefused,
    Store,
    TodoItem,
    ToolCall,
    ToolData,
    ToolOutcome,
    ToolResult,
    read_tool_data,
)

EDIT = Edit("a.txt", 1, 0, 0, 2)

# (tool, record, the JSON object the dict-era code wrote for it, key order included)
CASES: list[tuple[str, ToolData, dict[str, Any]]] = [
    ("shell", ShellData("linux", 1, "o", "e", 3, False),
     {"sandbox": "linux", "exit_status": 1, "stdout": "o", "stderr": "e", "truncated": 3,
      "timed_out": False}),
    ("exec", ExecData(None, "", "", 0, True, "floor"),
     {"exit_status": None, "stdout": "", "stderr": "", "truncated": 0, "timed_out": True,
      "sandbox": "floor"}),
    ("shell_start", HandleStarted("h1", (10, 11)), {"handle": "h1", "pids": [10, 11]}),
    ("shell_poll", HandleData("h1", True, None, None, 5, 0, False, "out"),
     {"handle": "h1", "running": True, "exit_status": None, "end_reason": None, "cursor": 5,
      "pending": 0, "orphaned": False, "output": "out"}),
    ("read_file", FileRead("a.txt", 0), {"path": "a.txt", "truncated": 0}),
    ("write_file", FileWritten("a.txt", (EDIT,)), {"path": "a.txt", "edits": [EDIT.to_json()]}),
    ("xlsx_edit", FileWritten("t.xlsx", (EDIT,), {"cells": [{"cell": "A1", "new": 1}]}),
     {"path": "t.xlsx", "edits": [EDIT.to_json()], "cells": [{"cell": "A1", "new": 1}]}),
    ("list_dir", DirListing("", ("a", "b/"), 0), {"path": "", "entries": ["a", "b/"],
                                                  "truncated": 0}),
    ("find", FindData(("a.txt",), 0), {"matches": ["a.txt"], "truncated": 0}),
    ("grep", GrepData(2, 0), {"count": 2, "truncated": 0}),
    ("git_status", GitStatusData("main", "abc", None, None, None, ({"path": "x"},), 0),
     {"branch": "main", "commit": "abc", "upstream": None, "ahead": None, "behind": None,
      "entries": [{"path": "x"}], "truncated": 0}),
    ("git_diff", GitDiffData("staged", None, ("a",), ("s.env",), 10, 0),
     {"mode": "staged", "ref": None, "files": ["a"], "skipped": ["s.env"], "total_bytes": 10,
      "truncated": 0}),
    ("git_commit", GitCommitData("abc", ("a",), None), {"commit": "abc", "files": ["a"],
                                                       "call": None}),
    ("git_commit", GitCommitData("abc", call="r/1/0", recovered=True),
     {"commit": "abc", "call": "r/1/0", "recovered": True}),
    ("todo_write", PlanData((TodoItem("read", "done"),), 2),
     {"todos": [{"content": "read", "status": "done"}], "revision": 2}),
    ("ask_question", AnswerData("yes", "responder", question="ok?"),
     {"question": "ok?", "answer": "yes", "answered_by": "responder"}),
    ("ask_question", AnswerData("yes", "person"), {"answer": "yes", "answered_by": "person"}),
    ("spawn_agent", ChildRunData("c1", None, "finished", 2, True, "done"),
     {"child_run_id": "c1", "agent": None, "status": "finished", "steps": 2, "verified": True,
      "answer": "done"}),
    ("spawn_agent", SpawnRefused("too deep"), {"spawn_refused": "too deep"}),
    ("view_image", ImageData("i.png", "image/png", 4, 3, 99, "ff"),
     {"path": "i.png", "media_type": "image/png", "width": 4, "height": 3, "bytes": 99,
      "sha256": "ff"}),
    ("xlsx_read", DocumentRead("t.xlsx", {"sheets": ["S"], "read": [{"rows": [[1]]}]}, 0),
     {"path": "t.xlsx", "sheets": ["S"], "read": [{"rows": [[1]]}], "truncated": 0}),
    ("barcode_decode", DocumentRead("q.png", {"barcodes": []}),
     {"path": "q.png", "barcodes": []}),
    ("pdf_fill_form", DocumentRead("f.pdf", {"fields": []}), {"path": "f.pdf", "fields": []}),
    ("mcp__time__now", McpData("time", "now", {"t": 1}, 7),
     {"server": "time", "tool": "now", "structured": {"t": 1}, "truncated_bytes": 7}),
    ("mcp__time__now", McpData("time", "now"), {"server": "time", "tool": "now"}),
    ("my_tool", OpenData({"b": 1, "a": [2]}), {"b": 1, "a": [2]}),
]


@pytest.mark.parametrize(("tool", "record", "wire"), CASES,
                         ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(CASES)])
def test_a_record_writes_the_old_object_and_reads_back_as_itself(
        tool: str, record: ToolData, wire: dict[str, Any]) -> None:
    assert json.dumps(record.to_json()) == json.dumps(wire)  # same keys, same order
    back = read_tool_data(tool, json.loads(json.dumps(wire)))
    assert type(back) is type(record) and back == record


def test_data_that_does_not_fit_its_tool_reads_back_open_and_unchanged() -> None:
    odd = {"exit_code": 3, "note": "another version's shape"}
    back = read_tool_data("shell", odd)
    assert back == OpenData(odd) and back.to_json() == odd
    assert read_tool_data("not_a_builtin", {"server": "s", "tool": "t"}) == OpenData(
        {"server": "s", "tool": "t"})


def test_a_mapping_given_as_data_is_kept_as_open_data() -> None:
    # A caller's own tool written against the dict-era API keeps working.
    outcome = ToolOutcome("ok", data={"rows": 3})  # type: ignore[arg-type]
    assert outcome.data == OpenData({"rows": 3})
    assert ToolOutcome("ok", data={}).data is None  # type: ignore[arg-type]
    assert ToolOutcome("ok").data is None


def test_the_ledger_splits_the_refusal_and_raw_arguments_from_the_tool_record(
        tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.create_run("r", goal="g", workspace="/w", model="m", settings={}, policy={},
                     sandbox=None, messages=[Message.user("g")])
    calls = [ToolCall("c0", "shell", {"line": "x"}), ToolCall("c1", "shell", {}, "{not json"),
             ToolCall("c2", "mcp__s__t", {"q": 1})]
    for i, call in enumerate(calls):
        store.record_intent("r", 0, i, call)
    refusal = Refusal("denied", act="exec", target="x", rule="x*", layer="project")
    ran = ShellData("off", 0, "", "", 0, False)
    store.record_observation("r", 0, 0, ToolResult("c0", "shell", "refused", True),
                             data=ran, refused=refusal)
    store.record_observation("r", 0, 1, ToolResult("c1", "shell", "bad args", True))
    store.record_observation("r", 0, 2, ToolResult("c2", "mcp__s__t", "ok"),
                             data=McpData("s", "t", [1, 2]))
    first, second, third = store.ledger("r")
    assert first.data == ran and first.refused == refusal
    assert first.data_json() == {**ran.to_json(), "refused": refusal.to_json()}
    assert second.data is None and second.refused is None
    assert second.raw_arguments == "{not json" and second.arguments == {}
    assert second.arguments_json() == {"__raw__": "{not json"}
    assert second.call == calls[1]
    assert third.data == McpData("s", "t", [1, 2]) and third.call == calls[2]


def test_a_refusal_reads_back_from_its_json() -> None:
    full = Refusal("r", act="write", target="a", construct=None, column=None, rule="a",
                   layer="tier")
    assert Refusal.from_json(full.to_json()) == full
    construct = Refusal("no", construct="command substitution", column=6)
    assert Refusal.from_json(construct.to_json()) == construct
