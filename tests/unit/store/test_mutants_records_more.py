"""The typed records read back from JSON, the defaults mutation testing left
(`store/_records.py`, `store/_steps.py`): a row missing its numbers or text reads as 0 or
"", a policy or sandbox that is not an object as {} or None, an inputs' fate keeps
whether it was untouched, a ledger row's data and arguments, a verification's inputs in
its row, and a checkpoint committed with an observation drawing nothing unless told."""

from __future__ import annotations

from pathlib import Path

from harness_core import CheckpointState, Store, ToolCall, ToolResult
from harness_core.store._records import (
    AttemptRecord,
    DriveRecord,
    EditRecord,
    InputsFate,
    VerificationRecord,
    ledger_entry,
)
from harness_core.tool_data import FileWritten


def test_records_missing_their_numbers_read_as_zero_and_empty() -> None:
    attempt = AttemptRecord.from_json({"provider": "p", "model": "m", "ok": True})
    assert (attempt.step_index, attempt.seq) == (0, 0)
    drive = DriveRecord.from_json({})
    assert (drive.seq, drive.started_at, drive.pid, drive.policy, drive.sandbox) == (
        0, "", 0, {}, None)
    odd = DriveRecord.from_json({"seq": 2, "policy": "all", "sandbox": ["x"]})
    assert (odd.seq, odd.policy, odd.sandbox) == (2, {}, None)
    kept = DriveRecord.from_json({"policy": {"tier": "full"}, "sandbox": {"backend": "off"}})
    assert (kept.policy, kept.sandbox) == ({"tier": "full"}, {"backend": "off"})
    edit = EditRecord.from_json({"path": "a.txt", "bytes_written": 1})
    assert (edit.step_index, edit.call_id, edit.edit.path) == (0, "", "a.txt")


def test_an_inputs_fate_keeps_whether_it_was_untouched() -> None:
    assert InputsFate.from_json({"inputs": ["a"], "untouched": True}).untouched is True
    assert InputsFate.from_json({"inputs": ["a"], "untouched": False}).untouched is False
    assert InputsFate.from_json({"inputs": ["a"]}).untouched is None


def test_a_verifications_row_carries_its_inputs() -> None:
    fate = InputsFate(("a",), False, True, ())
    record = VerificationRecord(0, "true", True, 0, "", None, "off", fate)
    assert record.row_json()["inputs"] == fate.to_json()
    assert VerificationRecord(0, "true", True, 0, "", None, "off", None).row_json()[
        "inputs"] is None


def test_a_ledger_rows_data_and_arguments_read_back() -> None:
    refused = {"refused": {"reason": "no", "act": "write", "target": "write a", "layer": "x"}}
    entry = ledger_entry(0, 0, "c", "write_file", "not an object", "refused", True, refused)
    assert (entry.arguments, entry.data) == ({}, None)
    assert entry.refused is not None and entry.refused.reason == "no"
    written = FileWritten("a.txt").to_json()
    with_data = ledger_entry(0, 0, "c", "write_file", {"path": "a.txt"}, "ok", False,
                             dict(written))
    assert (with_data.arguments, with_data.data) == ({"path": "a.txt"}, FileWritten("a.txt"))
    assert with_data.data_json() == written

def test_a_checkpoint_with_an_observation_draws_nothing_unless_told(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        store.create_run("r1", goal="g", workspace=str(tmp_path), model="m", settings={},
                         policy={}, sandbox=None, messages=[])
        call = ToolCall("c1", "read_file", {"path": "a"})
        store.record_intent("r1", 0, 0, call)
        store.record_observation("r1", 0, 0, ToolResult("c1", "read_file", "ok"),
                                 checkpoint=CheckpointState(0))
        run = store.run("r1")
        assert (run.steps_used, run.tokens_used, run.wall_used) == (1, 0, 0.0)
