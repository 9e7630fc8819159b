"""One entry point from a line of text to a checked plan: parse, then check.

`shell` and `shell_start` both go through `prepare`, so a handle's line meets exactly
the refusal set, the per-stage exec check and the per-redirect path check a
foreground line meets. A lexer refusal becomes a `Blocked` naming the construct; a
policy refusal a `Blocked` naming the act. Nothing here starts a process.
"""

from __future__ import annotations

from harness_core.errors import ShellRefused
from harness_core.shell._check import Gate, LineChecker
from harness_core.shell._parser import parse
from harness_core.shell._plan import Blocked, RunPlan
from harness_core.workspace import Workspace

__all__ = ["prepare"]


def prepare(line: str, workspace: Workspace, gate: Gate, base_cwd: str = "") -> RunPlan | Blocked:
    """Parse `line` and check every act it would take, before anything runs.

    Args:
        line: The command line.
        workspace: The resolver.
        gate: The run's gate.
        base_cwd: The directory the line starts in, relative to the root.

    Returns:
        The plan ready for the runner, or why the line may not run.
    """
    try:
        plan = parse(line)
    except ShellRefused as exc:
        return Blocked(reason=exc.reason, construct=exc.construct, column=exc.column)
    return LineChecker(workspace, gate).check(plan, base_cwd)
