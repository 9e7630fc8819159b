"""The `exec` built-in: run one argv (no shell) through the run's launcher.

The gate checks `Act.exec` on the program and the whole argv first. The command runs in
the workspace root (or a directory under it), through the selected sandbox launcher; a
timeout kills its whole process tree. Output is bounded and the cut is stated.
"""

from __future__ import annotations

import os
from typing import Any

from harness_core.errors import (
    InvalidToolArguments,
    PathEscape,
    SandboxUnavailable,
    ToolError,
    WorkspaceError,
)
from harness_core.messages import ToolSpec
from harness_core.policy import Act
from harness_core.sandbox import LaunchRequest, run_command
from harness_core.tool_data import ExecData
from harness_core.tools._base import ToolContext, ToolOutcome
from harness_core.tools._support import bounded_bytes, refusal_outcome

__all__ = ["Exec"]


def _unusable_argument(argv: list[str]) -> str | None:
    """Why no process could receive `argv` (a NUL byte, a lone surrogate), or None."""
    for position, arg in enumerate(argv):
        if "\0" in arg:
            return f"argument {position} holds a NUL byte, which no program argument can hold"
        try:
            os.fsencode(arg)
        except UnicodeEncodeError:
            return f"argument {position} holds a lone surrogate, which cannot be encoded"
    return None


class Exec:
    """Run a program with arguments (no shell)."""

    spec = ToolSpec(
        "exec",
        "Run `argv` without a shell, in the workspace root or `cwd` under it.",
        {
            "type": "object",
            "properties": {
                "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "cwd": {"type": "string"},
                "timeout_seconds": {"type": "number"},
            },
            "required": ["argv"],
            "additionalProperties": False,
        },
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        argv = args.get("argv")
        if (not isinstance(argv, list) or not argv
                or not all(isinstance(a, str) for a in argv) or not argv[0]):
            raise InvalidToolArguments("exec: `argv` must be a non-empty list of strings")
        cwd = args.get("cwd", ".")
        timeout = args.get("timeout_seconds", ctx.exec_timeout)
        if not isinstance(cwd, str):
            raise InvalidToolArguments("exec: `cwd` must be a string")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InvalidToolArguments("exec: `timeout_seconds` must be a positive number")
        timeout = min(float(timeout), ctx.exec_timeout)
        unusable = _unusable_argument(argv)
        if unusable is not None:
            return ToolOutcome(output=f"exec: {unusable}; nothing was run", is_error=True)
        act = Act.exec(argv)
        decision = ctx.gate.check(act)
        if not decision.is_allowed:
            return refusal_outcome(act, decision)
        try:
            cwd_rel = ctx.workspace.resolve(cwd)
        except PathEscape as exc:
            return ToolOutcome(output=f"exec: cwd {cwd!r} {exc.reason}", is_error=True)
        except WorkspaceError as exc:
            return ToolOutcome(output=f"exec: cwd: {exc}", is_error=True)
        if not ctx.workspace.is_dir(cwd_rel):
            return ToolOutcome(output=f"exec: cwd {cwd!r} is not a directory", is_error=True)
        request = LaunchRequest(argv=argv, cwd=ctx.workspace.abspath(cwd_rel))
        try:  # through the run's launcher; the whole tree dies on timeout
            result = run_command(ctx.launcher, request, timeout=timeout,
                                 max_output=ctx.output_cap)
        except (ToolError, SandboxUnavailable) as exc:
            return ToolOutcome(output=f"exec: {exc}", is_error=True)
        timed_out = result.timed_out
        status: int | None = None if timed_out else result.exit_status
        half = max(ctx.output_cap // 2, 1)
        stdout, cut_out = bounded_bytes(result.stdout, half, result.stdout_dropped)
        stderr, cut_err = bounded_bytes(result.stderr, half, result.stderr_dropped)
        head = (f"timed out after {timeout:g}s; the process tree was killed" if timed_out
                else f"exit status {status}")
        parts = [head]
        if stdout:
            parts.append("stdout:\n" + stdout)
        if stderr:
            parts.append("stderr:\n" + stderr)
        return ToolOutcome(
            output="\n".join(parts),
            is_error=timed_out or status != 0,
            data=ExecData(exit_status=status, stdout=stdout, stderr=stderr,
                          truncated=cut_out + cut_err, timed_out=timed_out,
                          sandbox=ctx.launcher.selected.backend.value),
            changed=True,
        )
