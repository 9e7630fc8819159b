"""`load_trace` / `load_tree`: the read-only projection of a run from a real store file,
driven by the real loop (a recording provider stands in for a vendor)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from harness_core import (
    ActKind,
    Effect,
    ModelPrice,
    Policy,
    PriceTable,
    Rule,
    Runner,
    Store,
    load_trace,
    load_tree,
)
from tests.unit.session.support import RecordingProvider, spec_for


def _run(tmp_path: Path, lines: list[Any], files: dict[str, str] | None = None,
         **spec: Any) -> tuple[Store, str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, text in (files or {}).items():
        (ws / name).write_text(text)
    store = Store(tmp_path / "state.db")
    outcome = Runner(store, RecordingProvider(lines)).start(spec_for(ws, "goal", **spec))
    return store, outcome.run_id


def test_a_created_file_has_an_exact_diff_and_an_unread_edit_only_its_hunk(
        tmp_path: Path) -> None:
    store, run_id = _run(tmp_path, [
        ("", [("write_file", {"path": "new.txt", "content": "a\nb\n"}),
              ("edit_file", {"path": "new.txt", "old": "b", "new": "c"}),
              ("edit_file", {"path": "old.txt", "old": "x", "new": "y"})]),
        ("done", []),
    ], files={"old.txt": "1\nx\n2\n"})
    trace = load_trace(store, run_id)
    by_path = {c.path: c for c in trace.changes}
    new, old = by_path["new.txt"], by_path["old.txt"]
    assert new.created and new.complete
    assert "+a" in new.edits[0].diff and "+c" in new.edits[1].diff and "-b" in new.edits[1].diff
    assert "@@ -1,2 +1,2 @@" in new.edits[1].diff  # the whole file, known from the write
    assert not old.created and not old.complete
    assert "-x" in old.edits[0].diff and "+y" in old.edits[0].diff and "\n 2\n" not in old.edits[0].diff
    assert "position not recorded" in old.edits[0].diff
    assert (old.lines_added, old.lines_removed) == (1, 1)


def test_an_edit_after_a_whole_read_is_exact(tmp_path: Path) -> None:
    store, run_id = _run(tmp_path, [
        ("", [("read_file", {"path": "old.txt"}),
              ("edit_file", {"path": "old.txt", "old": "x", "new": "y"})]),
        ("done", []),
    ], files={"old.txt": "1\nx\n2\n"})
    [change] = load_trace(store, run_id).changes
    assert change.complete
    assert " 1\n-x\n+y\n 2\n" in change.edits[0].diff


def test_cost_is_derived_from_prices_and_unpriced_calls_make_a_floor(tmp_path: Path) -> None:
    store, run_id = _run(tmp_path, [("", [("list_dir", {})]), ("done", [])])
    none = load_trace(store, run_id)
    assert none.cost.total_usd is None and none.cost.unpriced_calls == 2
    assert none.cost.as_of is None
    prices = PriceTable(dt.date(2026, 11, 1),
                        {"recorded": ModelPrice(input_per_mtok=3.0, output_per_mtok=15.0)})
    priced = load_trace(store, run_id, prices=prices)
    assert priced.cost.as_of == dt.date(2026, 11, 1) and not priced.cost.is_floor
    assert priced.cost.total_usd is not None
    assert abs(priced.cost.total_usd - 2 * (10 * 3.0 + 2 * 15.0) / 1e6) < 1e-12
    assert [s.cost_usd for s in priced.steps] == [s.cost_usd for s in priced.steps if s.cost_usd]
    other = PriceTable(dt.date(2026, 11, 1), {"else": ModelPrice(1.0, 1.0)})
    floor = load_trace(store, run_id, prices=other)
    assert floor.cost.is_floor and floor.cost.total_usd is None


def test_plan_revisions_refusals_and_calls_are_projected(tmp_path: Path) -> None:
    store, run_id = _run(tmp_path, [
        ("", [("todo_write", {"todos": [{"content": "a", "status": "in_progress"}]}),
              ("write_file", {"path": "secret.key", "content": "k"})]),
        ("", [("todo_write", {"todos": [{"content": "a", "status": "done"}]})]),
        ("done", []),
    ], policy=Policy(rules=(Rule(Effect.DENY, ActKind.WRITE, "*.key", layer="test"),)))
    trace = load_trace(store, run_id, output_limit=10)
    assert [p.revision for p in trace.plan] == [1, 2]
    assert trace.plan[1].items[0]["status"] == "done"
    [refusal] = trace.refusals
    assert refusal.rule == "*.key" and "secret.key" in refusal.target
    refused = [c for c in trace.calls if c.refused]
    assert refused and refused[0].name == "write_file"
    assert all(c.output is None or len(c.output) <= 10 for c in trace.calls)
    assert any(c.is_truncated for c in trace.calls)


def test_a_tree_is_read_parent_first_with_depths(tmp_path: Path) -> None:
    store, root = _run(tmp_path, [("done", [])])
    record = store.run(root)
    for child in ("child-a", "child-b"):
        store.create_run(child, goal="sub", workspace=record.workspace, model="recorded",
                         settings={}, policy={}, sandbox=None, messages=(),
                         parent_run_id=root)
    store.create_run("grandchild", goal="subsub", workspace=record.workspace, model="m",
                     settings={}, policy={}, sandbox=None, messages=(),
                     parent_run_id="child-a")
    tree = load_tree(store, root)
    assert [(t.run.run_id, t.depth) for t in tree] == [
        (root, 0), ("child-a", 1), ("grandchild", 2), ("child-b", 1)]
    assert tree[0].children == ("child-a", "child-b")
    assert [t.run.run_id for t in load_tree(store, "child-b")] == ["child-b"]


def test_command_calls_carry_their_exit_status_and_the_sandbox_that_ran_them(
        tmp_path: Path) -> None:
    store, run_id = _run(tmp_path, [
        ("", [("shell", {"line": "echo hi"}), ("exec", {"argv": ["false"]})]),
        ("done", []),
    ], policy=Policy(rules=(Rule(Effect.ALLOW, ActKind.EXEC, "echo*", layer="test"),
                            Rule(Effect.ALLOW, ActKind.EXEC, "false*", layer="test"))))
    trace = load_trace(store, run_id)
    shell, exec_ = trace.calls
    assert (shell.exit_status, shell.sandbox, shell.is_error) == (0, "off", False)
    assert (exec_.exit_status, exec_.sandbox, exec_.is_error) == (1, "off", True)
    assert trace.commands_ran == 2
