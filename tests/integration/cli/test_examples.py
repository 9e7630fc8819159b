"""Every examples/ folder is run by a test, as its README says to run it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import REPO, run_io
from tests.integration.cli.helpers import json_lines


def test_every_example_folder_is_covered_by_a_test() -> None:
    folders = {p.name for p in (REPO / "examples").iterdir() if p.is_dir()}
    assert folders == {"quickstart", "approval", "policy-check", "rigged-gate", "documents",
                       "agent-tree", "compaction", "hooks", "org-floor"}
    # rigged-gate: tests/integration/gates/test_rigged_gate.py
    # compaction: tests/integration/longtask/test_compaction.py
    # hooks: tests/integration/hooks/test_hooks_sandbox.py
    # org-floor: tests/integration/cli/test_requirements_cli.py


def test_approval_example_pauses_then_resumes_with_approve(tmp_path: Path) -> None:
    ws = tmp_path / "approval"
    shutil.copytree(REPO / "examples" / "approval", ws)
    paused = run_io(["run", "create the marker", "-w", str(ws), "--json"])
    assert paused.returncode == 4, paused.stderr
    run_id = json_lines(paused.stdout)[-1]["run_id"]
    assert not (ws / "approved.txt").exists()
    resumed = run_io(["resume", str(run_id), "-w", str(ws), "--approve", "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert (ws / "approved.txt").exists()


def test_policy_check_example_gives_the_documented_answers(tmp_path: Path) -> None:
    ws = tmp_path / "policy-check"
    shutil.copytree(REPO / "examples" / "policy-check", ws)
    cases = [
        ("read_file", {"path": "notes.txt"}, 0, None),
        ("read_file", {"path": "secrets/prod.env"}, 1, "secrets/**"),
        ("exec", {"argv": ["git", "push"]}, 1, "git push*"),
        ("shell", {"line": "echo hi | tr a-z A-Z"}, 0, None),
        ("shell", {"line": "echo $(whoami)"}, 1, None),
        ("write_file", {"path": "io.toml", "content": ""}, 1, "io.toml"),
    ]
    before = (ws / "io.toml").read_text()
    for tool, args, code, rule in cases:
        result = run_io(["tool", tool, "--args", json.dumps(args), "-w", str(ws), "--json"])
        assert result.returncode == code, (tool, args, result.stdout, result.stderr)
        answer = json.loads(result.stdout)
        if code == 0:
            assert answer["ok"] is True
        else:
            refused = answer["refused"]
            assert refused["reason"]
            if rule is not None:
                assert refused["rule"] == rule, refused
    assert (ws / "io.toml").read_text() == before
    shout = run_io(["tool", "shell", "--args", json.dumps({"line": "echo hi | tr a-z A-Z"}),
                    "-w", str(ws), "--json"])
    assert json.loads(shout.stdout)["data"]["stdout"] == "HI\n"


def test_documents_example_passes_its_document_gates(tmp_path: Path) -> None:
    ws = tmp_path / "documents"
    shutil.copytree(REPO / "examples" / "documents", ws)
    done = run_io(["run", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    gates = [e for e in json_lines(done.stdout) if e["kind"] == "verification"]
    assert [g["passed"] for g in gates] == [True, True, True]
    assert all(g["command"].startswith("document_contains out/") for g in gates)
    for name in ("totals.xlsx", "report.docx", "report.pdf"):
        assert (ws / "out" / name).stat().st_size > 0


def test_agent_tree_example_writes_then_reviews_under_a_narrower_policy(tmp_path: Path) -> None:
    ws = tmp_path / "agent-tree"
    shutil.copytree(REPO / "examples" / "agent-tree", ws)
    result = run_io(["run", "--workspace", str(ws), "--json", "--template", "notes",
                     "version=1.2.0", "--", "keep", "it", "short"])
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    root = str(events[-1]["run_id"])
    assert events[0]["goal"].startswith("Write release notes for version 1.2.0")
    assert "keep it short" in events[0]["goal"]
    assert (ws / "NOTES.md").read_text().startswith("## 1.2.0")
    refused = [e for e in events if e["kind"] == "tool_result" and e.get("refused")]
    assert len(refused) == 1 and refused[0]["run_id"] != root
    traced = json.loads(run_io(["trace", root, "--workspace", str(ws), "--json"]).stdout)
    assert [(n["depth"], n["agent"], n["status"]) for n in traced["tree"]] == [
        (0, None, "finished"), (1, None, "finished"), (1, "reviewer", "finished")]
