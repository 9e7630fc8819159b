"""The system prompt and the opening messages of a run. Not a public contract."""

from __future__ import annotations

from harness_core.messages import Message
from harness_core.run._spec import RunSpec

__all__ = ["opening_messages"]


def opening_messages(spec: RunSpec) -> list[Message]:
    """System prompt, earlier turns (sessions), then the goal with its constraints."""
    lines = [
        "You are an agent working in a software workspace through tools.",
        "Every file access and command is checked against the operator's policy; a refused"
        " act comes back as an observation. Do not try to work around a refusal.",
        "When the task is complete, reply without calling any tool; the operator's"
        " verification gates then run, and a failure comes back to you.",
    ]
    if spec.role:
        lines.append(f"Your role: {spec.role}")
    if spec.skills:
        lines.append("Skills (instructions for particular tasks): when one applies, read its"
                     " file with read_file before you start.")
        lines.extend(f"- {s.name}: {s.description} ({s.path})" for s in spec.skills)
    tc = spec.toolchain
    if tc.ecosystem:
        manager = f" ({tc.package_manager})" if tc.package_manager else ""
        lines.append(f"Detected project: {tc.ecosystem}{manager}.")
    for label, command in (("test", tc.test), ("build", tc.build), ("lint", tc.lint)):
        if command:
            lines.append(f"Conventional {label} command: {command}")
    if spec.contract.verify:
        gates = ", ".join(c.command or c.kind.value for c in spec.contract.verify)
        lines.append(f"Verification gates: {gates}")
        if any(not c.editable for c in spec.contract.verify):
            lines.append("The files those gates depend on (tests and their configuration)"
                         " are write-protected: make the gates pass by changing the code"
                         " they check, not the gates.")
    goal = spec.contract.goal
    if spec.contract.constraints:
        goal += "\n\nConstraints:\n" + "\n".join(f"- {c}" for c in spec.contract.constraints)
    return [Message.system("\n".join(lines)), *spec.history, Message.user(goal)]
