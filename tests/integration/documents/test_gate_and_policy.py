"""The document_contains gate, the policy on every document path, `io tool`, and what
happens when an extra is missing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness_core.documents import check_document, default_toolbox, is_installed
from harness_core.errors import ConfigError, MissingExtra
from harness_core.policy import Policy, Tier
from harness_core.verification import (
    CriterionKind,
    TaskContract,
    VerifyCriterion,
    require_gate_extras,
    run_gates,
)
from harness_core.workspace import Workspace
from tests.conftest import run_io
from tests.integration.documents.conftest import call, make_ctx


def _gate(path: str, **kw: object) -> VerifyCriterion:
    return VerifyCriterion(kind=CriterionKind.DOCUMENT_CONTAINS, path=path, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("criterion", "passed"), [
    (_gate("orders.xlsx", text="Gadget"), True),
    (_gate("orders.xlsx", text="Zürich", sheet="Notes"), True),
    (_gate("orders.xlsx", text="Zürich", sheet="Orders"), False),
    (_gate("orders.xlsx", text="x", sheet="Nope"), False),
    (_gate("report.docx", regex=r"Revenue grew in \w+ region"), True),
    (_gate("report.docx", text="Confidential footer"), True),
    (_gate("report.docx", text="Quarterly Loss"), False),
    (_gate("deck.pptx", text="Budget", page=2), True),
    (_gate("deck.pptx", text="Budget", page=1), False),
    (_gate("deck.pptx", text="budget risk"), True),
    (_gate("deck.pdf", text="Launch Plan", page=1), True),
    (_gate("deck.pdf", text="Launch Plan", page=2), False),
    (_gate("deck.pdf", text="x", page=9), False),
    (_gate("missing.pdf", text="x"), False),
    (_gate("notes.txt", text="x"), False),
    (_gate("../outside.pdf", text="x"), False),
])
def test_document_contains_gate(workspace: Path, criterion: VerifyCriterion,
                                 passed: bool) -> None:
    (workspace / "notes.txt").write_text("x")
    [result] = run_gates(TaskContract(verify=(criterion,)), Workspace(workspace), None)  # type: ignore[arg-type]
    assert result.passed is passed, result.output
    assert result.criterion.startswith(f"document_contains {criterion.path}")


def test_gate_from_io_toml_runs_in_a_real_run(workspace: Path) -> None:
    (workspace / "replay.jsonl").write_text('{"text": "done"}\n')
    (workspace / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n'
        '[contract]\ngoal = "check the report"\n'
        '[[contract.verify]]\nkind = "document_contains"\npath = "report.docx"\n'
        'text = "Quarterly Report"\n'
        '[[contract.verify]]\nkind = "document_contains"\npath = "orders.xlsx"\n'
        'regex = "Grand total"\nsheet = "Orders"\n')
    done = run_io(["run", "--json", "-w", str(workspace)])
    events = [json.loads(line) for line in done.stdout.splitlines()]
    gates = [e for e in events if e["kind"] == "verification"]
    assert [g["passed"] for g in gates] == [True, True], done.stderr
    assert done.returncode == 0


def test_gate_config_needs_exactly_one_of_text_and_regex(workspace: Path) -> None:
    (workspace / "io.toml").write_text(
        '[[contract.verify]]\nkind = "document_contains"\npath = "report.docx"\n')
    done = run_io(["config", "check", "-w", str(workspace)])
    assert done.returncode == 2 and "exactly one of `text` and `regex`" in done.stderr


def test_missing_extra_is_a_typed_error_naming_the_install(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Hide openpyxl from this process: find_spec answers None for a None module entry.
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    is_installed.cache_clear()
    try:
        assert not is_installed("xlsx")
        with pytest.raises(MissingExtra) as caught:
            require_gate_extras(_gate("orders.xlsx", text="x"))
        assert isinstance(caught.value, ConfigError)
        assert caught.value.install == "pip install 'io-harness[xlsx]'"
        [result] = run_gates(TaskContract(verify=(_gate("orders.xlsx", text="x"),)),
                             Workspace(workspace), None)  # type: ignore[arg-type]
        assert not result.passed and "pip install 'io-harness[xlsx]'" in result.output
        with pytest.raises(MissingExtra):
            check_document(Workspace(workspace), "orders.xlsx", text="x")
        box = default_toolbox(include_shell=False)
        assert "xlsx_read" not in box.names() and "docx_read" in box.names()
        out = call(make_ctx(workspace), "xlsx_read", path="orders.xlsx")
        assert out.is_error and "pip install 'io-harness[xlsx]'" in out.output
    finally:
        monkeypatch.undo()
        is_installed.cache_clear()


def test_io_tool_without_the_extra_exits_2_naming_the_install(workspace: Path) -> None:
    code = ("import sys; sys.modules['pypdf'] = None\n"
            "from io_harness_cli.main import main\n"
            "sys.argv = ['io', 'tool', 'pdf_read', '--args', '{\"path\": \"deck.pdf\"}']\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=workspace, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "pip install 'io-harness[pdf]'" in done.stderr


def test_io_tool_runs_each_document_tool(workspace: Path) -> None:
    done = run_io(["tool", "xlsx_read", "--json", "-w", str(workspace), "--args",
                   json.dumps({"path": "orders.xlsx", "sheet": "Notes"})])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] is True and result["data"]["read"][0]["rows"] == [
        ["Supplier", "Zürich Parts AG"]]
    broken = run_io(["tool", "pdf_read", "-w", str(workspace), "--args", '{"path": "x.pdf"}'])
    assert broken.returncode == 1


def test_deny_read_refuses_every_reading_tool(workspace: Path) -> None:
    policy = Policy.from_lists(tier=Tier.WORKSPACE_WRITE, deny_read=["**/*.xlsx", "*.pdf"],
                               approval="deny")
    ctx = make_ctx(workspace, policy)
    for name, path in (("xlsx_read", "orders.xlsx"), ("pdf_read", "deck.pdf"),
                       ("pdf_fill_form", "form.pdf"), ("pdf_watermark", "deck.pdf")):
        args = {"path": path, "text": "x"} if name == "pdf_watermark" else {"path": path}
        out = call(ctx, name, **args)
        assert out.refused is not None and out.refused.act == "read", (name, out.output)


def test_writes_go_through_the_policy_and_the_resolver(workspace: Path) -> None:
    policy = Policy.from_lists(tier=Tier.WORKSPACE_WRITE, deny_write=["locked/**"],
                               approval="deny")
    ctx = make_ctx(workspace, policy)
    out = call(ctx, "xlsx_write", path="locked/a.xlsx", sheets=[{"rows": [[1]]}])
    assert out.refused is not None and out.refused.act == "write"
    assert not (workspace / "locked").exists()
    escape = call(ctx, "docx_write", path="../escape.docx",
                  blocks=[{"type": "paragraph", "text": "x"}])
    assert escape.refused is not None and not (workspace.parent / "escape.docx").exists()
    read_only = make_ctx(workspace, Policy.from_lists(tier=Tier.READ_ONLY, approval="deny"))
    edit = call(read_only, "xlsx_edit", path="orders.xlsx", cells={"A1": "x"})
    assert edit.refused is not None and edit.refused.act == "write"


def test_a_written_document_is_recorded_as_an_edit(workspace: Path) -> None:
    out = call(make_ctx(workspace), "pdf_write", path="out/new.pdf",
               blocks=[{"type": "paragraph", "text": "hello"}])
    assert out.changed and out.data.edits[0].path == "out/new.pdf"
    assert out.data.edits[0].bytes_after == (workspace / "out/new.pdf").stat().st_size


def test_io_config_check_refuses_a_document_gate_without_its_extra(workspace: Path) -> None:
    (workspace / "io.toml").write_text(
        '[[contract.verify]]\nkind = "document_contains"\npath = "deck.pptx"\ntext = "x"\n')
    code = ("import sys; sys.modules['pptx'] = None\n"
            "from io_harness_cli.main import main\n"
            "sys.argv = ['io', 'config', 'check']\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=workspace, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "pip install 'io-harness[pptx]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_every_document_tool_is_a_reserved_builtin_offered_with_its_extra() -> None:
    from harness_core.documents import TOOL_EXTRAS
    from harness_core.tools import RESERVED_TOOL_NAMES

    assert set(TOOL_EXTRAS) <= RESERVED_TOOL_NAMES
    assert set(TOOL_EXTRAS) <= set(default_toolbox().names())


def test_an_ask_on_a_document_path_pauses_for_approval(workspace: Path) -> None:
    from harness_core.tools import PauseRequested

    policy = Policy.from_lists(tier=Tier.READ_ONLY, approval="ask")
    with pytest.raises(PauseRequested) as paused:
        call(make_ctx(workspace, policy), "docx_write", path="new.docx",
             blocks=[{"type": "paragraph", "text": "x"}])
    assert paused.value.kind == "approval"
    assert not (workspace / "new.docx").exists()
