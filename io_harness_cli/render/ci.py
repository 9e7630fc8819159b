"""CI formats of a run's result: the gate rounds as JUnit XML, and a Markdown summary for
GitHub's job page (`GITHUB_STEP_SUMMARY`). Pure: text in, text out; the standard
library only (`xml.etree`)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.etree import ElementTree

from harness_core import record

if TYPE_CHECKING:
    from harness_core import VerificationRecord

__all__ = ["RunSummary", "junit_xml", "step_summary"]


@record
class RunSummary:
    """What the CI formats say about one drive of a run.

    Attributes:
        run_id: The run.
        status: Where it stands (`RunStatus` value).
        exit_code: What `io` exits with.
        why: Why that code.
        steps: Steps committed.
        tokens: Billed tokens the run used.
        cost: Derived cost in USD, or None when some call is unpriced or there are no
            `[prices]`.
        rounds: Every gate round, oldest first (each the gates run after one step).
        trace: The command that shows the whole trace.
    """

    run_id: str
    status: str
    exit_code: int
    why: str
    steps: int
    tokens: int
    cost: float | None
    rounds: tuple[tuple[VerificationRecord, ...], ...]
    trace: str


def _seconds(value: float | None) -> str:
    return f"{value or 0.0:.3f}"


def junit_xml(summary: RunSummary) -> bytes:
    """The gate rounds as JUnit XML: one `<testsuite>` per round, one `<testcase>` per
    gate. The last round decides: its failed gates are `<failure>`s; a gate that failed
    in an earlier round (which a later round superseded) is `<skipped>` with what
    happened, so the report is red exactly when the run's verification failed."""
    last = len(summary.rounds) - 1
    failures = sum(1 for g in summary.rounds[-1] if not g.passed) if summary.rounds else 0
    root = ElementTree.Element("testsuites", {
        "name": f"io run {summary.run_id}",
        "tests": str(sum(len(r) for r in summary.rounds)), "failures": str(failures),
        "errors": "0", "time": _seconds(sum(g.duration_seconds or 0.0
                                            for r in summary.rounds for g in r))})
    if not summary.rounds:
        suite = ElementTree.SubElement(root, "testsuite", {
            "name": "gates", "tests": "0", "failures": "0", "errors": "0", "skipped": "0"})
        _properties(suite, summary)
    for index, gates in enumerate(summary.rounds):
        _suite(root, summary, index, gates, final=index == last)
    ElementTree.indent(root)
    return bytes(ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)) + b"\n"


def _suite(root: ElementTree.Element, summary: RunSummary, index: int,
           gates: tuple[VerificationRecord, ...], *, final: bool) -> None:
    step = gates[0].step_index if gates else 0
    failed = [g for g in gates if not g.passed]
    suite = ElementTree.SubElement(root, "testsuite", {
        "name": f"gates round {index + 1} (after step {step})"
                + ("" if final else " (superseded)"),
        "tests": str(len(gates)), "failures": str(len(failed) if final else 0), "errors": "0",
        "skipped": str(0 if final else len(failed)),
        "time": _seconds(sum(g.duration_seconds or 0.0 for g in gates))})
    if final:
        _properties(suite, summary)
    for gate in gates:
        case = ElementTree.SubElement(suite, "testcase", {
            "classname": "io.gates", "name": gate.criterion,
            "time": _seconds(gate.duration_seconds)})
        exit_status = "-" if gate.exit_status is None else str(gate.exit_status)
        if not gate.passed and final:
            failure = ElementTree.SubElement(case, "failure", {
                "message": f"exit {exit_status}", "type": "gate"})
            failure.text = gate.output
        elif not gate.passed:
            ElementTree.SubElement(case, "skipped", {
                "message": f"failed (exit {exit_status}) in round {index + 1}; a later round"
                           " superseded it"})
        if gate.output:
            ElementTree.SubElement(case, "system-out").text = gate.output


def _properties(suite: ElementTree.Element, summary: RunSummary) -> None:
    props = ElementTree.SubElement(suite, "properties")
    for name, value in (("run_id", summary.run_id), ("status", summary.status),
                        ("exit_code", str(summary.exit_code)), ("why", summary.why),
                        ("trace", summary.trace)):
        ElementTree.SubElement(props, "property", {"name": name, "value": value})


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def step_summary(summary: RunSummary) -> str:
    """The run as Markdown for GitHub's job summary: outcome, gates, spend, trace."""
    mark = {0: "✅", 1: "❌", 3: "⏹️", 4: "⏸️", 130: "⏹️"}.get(summary.exit_code, "⚠️")
    cost = "unpriced" if summary.cost is None else f"${summary.cost:.4f}"
    lines = [
        f"### {mark} io run `{summary.run_id}`: exit {summary.exit_code}",
        "",
        "| | |", "|---|---|",
        f"| outcome | {_cell(summary.status)} (exit {summary.exit_code}): {_cell(summary.why)} |",
        f"| steps | {summary.steps} |",
        f"| spend | {summary.tokens} tokens, {cost} |",
        f"| trace | `{_cell(summary.trace)}` |",
        "",
    ]
    if not summary.rounds:
        lines += ["No gates configured: nothing verified the result.", ""]
        return "\n".join(lines) + "\n"
    gates = summary.rounds[-1]
    lines += [f"Gates (round {len(summary.rounds)}, after step {gates[0].step_index}):", "",
              "| gate | result | exit | seconds |", "|---|---|---|---|"]
    for g in gates:
        exit_status = "-" if g.exit_status is None else str(g.exit_status)
        lines.append(f"| `{_cell(g.criterion)}` | {'passed' if g.passed else '**failed**'}"
                     f" | {exit_status} | {_seconds(g.duration_seconds)} |")
    return "\n".join(lines) + "\n\n"
