"""A run's gates and document tools read documents under the run's own `[documents]`
limits, pinned (mutation testing's survivors in `run/_verify.py`, `_run_gates`, and
`run/_open.py`'s tool context): a `document_contains` gate, or a `docx_read` call, on a
file past the spec's limits fails though the same file passes under the default limits.
Real runs of the shipped scripted provider over a real SQLite store; a real .docx
written by python-docx."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core import DocumentLimits, Runner, RunStatus, Store, TaskContract
from harness_core.verification import CriterionKind, VerifyCriterion
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import call, line, scripted, workspace
from tests.unit.session.support import spec_for


def _report(path: Path) -> None:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.add_paragraph("Revenue grew")
    document.save(str(path))


def _run(tmp_path: Path, limits: DocumentLimits | None) -> tuple[RunStatus, bool | None]:
    ws = workspace(tmp_path)
    _report(ws / "report.docx")
    gate = VerifyCriterion(kind=CriterionKind.DOCUMENT_CONTAINS, path="report.docx",
                           text="Revenue grew")
    spec = spec_for(ws, "go", contract=TaskContract(goal="go", verify=(gate,)),
                    **({"documents": limits} if limits is not None else {}))
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, scripted(tmp_path, [line("done")] * 3),
                         clock=ManualClock()).start(spec)
        return outcome.status, outcome.verified


def test_a_document_gate_reads_under_the_runs_document_limits(tmp_path: Path) -> None:
    assert _run(tmp_path / "default", None) == (RunStatus.FINISHED, True)
    status, verified = _run(tmp_path / "tight", DocumentLimits(max_members=2))
    assert verified is False and status is not RunStatus.FINISHED


def test_a_document_tool_reads_under_the_runs_document_limits(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    _report(ws / "report.docx")
    lines = [line("read", call("docx_read", path="report.docx")), line("done")]
    observations: list[tuple[bool, str]] = []
    for limits in (None, DocumentLimits(max_members=2)):
        with Store(tmp_path / f"state-{len(observations)}.db") as store:
            spec = spec_for(ws, "go", **({"documents": limits} if limits is not None else {}))
            done = Runner(store, scripted(tmp_path, lines), clock=ManualClock()).start(spec)
            [entry] = store.ledger(done.run_id)
            observations.append((entry.is_error, entry.observation or ""))
    (default_error, default_text), (tight_error, tight_text) = observations
    assert not default_error and "Revenue grew" in default_text
    assert tight_error and "Revenue grew" not in tight_text
