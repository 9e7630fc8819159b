"""The `shell`, `shell_start`, `shell_poll` and `shell_kill` built-ins.

`shell` runs one command line in the foreground; `shell_start` runs one as a process
handle. Both go through `harness_core.shell.prepare` — the same lexer, refusal set and
per-act checks — before anything starts, and both report a refusal as a `Refusal`
(the construct and its column, or the act, rule and layer), never as an exception.
The handle registry is a run service found in ``ctx.services.handles``; without one
(`io tool` outside a run) the handle tools say so. An orphaned handle is answered
from its record and never signalled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_core.errors import InvalidToolArguments, SandboxUnavailable, ToolError
from harness_core.messages import ToolSpec
from harness_core.policy import BUILTIN_LAYER
from harness_core.tool_data import HandleData, HandleStarted, Refusal, ShellData
from harness_core.tools._base import Tool, ToolContext, ToolOutcome
from harness_core.tools._support import req_str

if TYPE_CHECKING:
    from harness_core.shell import (
        Blocked,
        Capture,
        HandlePoll,
        HandleRegistry,
        LineResult,
        RunPlan,
    )

__all__ = ["Shell", "ShellKill", "ShellPoll", "ShellStart", "shell_tools"]

# The shell's lexer, parser, planner and runner are imported by the first call that
# needs them (`from harness_core.shell import ...` inside the calls), not with the
# tools: a run that never calls `shell` does not load them.

_LINE_HELP = (
    "Allowed: words, quotes, backslash escapes, | ; && ||, > >> < 2> 2>> 2>&1, cd. Refused: $ "
    "expansions, backticks, <( ), ( ), { }, heredocs, &, if/for/while/case etc., unquoted "
    "* ? [ ], ~, NAME=value. Single-quote a literal $. Every command and redirect target is "
    "checked before anything runs."
)


def _refusal(blocked: Blocked) -> Refusal:
    """The recorded refusal; a construct refused by the shell's own grammar names it as
    its rule (`construct:<name>`, layer `builtin`), so every refusal says what decided."""
    by_grammar = blocked.construct is not None and blocked.rule is None
    return Refusal(
        reason=blocked.reason, act=blocked.act, target=blocked.target,
        construct=blocked.construct, column=blocked.column,
        rule=f"construct:{blocked.construct}" if by_grammar else blocked.rule,
        layer=BUILTIN_LAYER if by_grammar and blocked.layer is None else blocked.layer,
    )


def _refused_text(blocked: Blocked) -> str:
    if blocked.construct is not None and blocked.act is None:
        return f"refused: {blocked.construct} at column {blocked.column}: {blocked.reason}"
    where = f" (rule {blocked.rule!r}, layer {blocked.layer})" if blocked.rule else (
        f" (layer {blocked.layer})" if blocked.layer else ""
    )
    return f"refused: {blocked.target}: {blocked.reason}{where}"


def _refused(blocked: Blocked) -> ToolOutcome:
    return ToolOutcome(_refused_text(blocked), is_error=True, refused=_refusal(blocked))


def _text(capture: Capture, name: str) -> str:
    head, tail = capture.parts()
    if not capture.omitted:
        return head.decode("utf-8", errors="replace")
    return (
        head.decode("utf-8", errors="replace")
        + f"\n[… {capture.omitted} bytes of {name} omitted …]\n"
        + tail.decode("utf-8", errors="replace")
    )


def _line_arg(args: dict[str, Any], tool: str) -> str:
    line = req_str(args, "line", tool)
    if not line.strip():
        raise InvalidToolArguments(f"{tool}: `line` is empty")
    return line


def _prepared(line: str, ctx: ToolContext) -> RunPlan | ToolOutcome:
    from harness_core.shell import Blocked, prepare

    prepared = prepare(line, ctx.workspace, ctx.gate)
    if isinstance(prepared, Blocked):
        return _refused(prepared)
    return prepared


def _registry(ctx: ToolContext, tool: str) -> HandleRegistry | ToolOutcome:
    registry = ctx.services.handles
    if registry is not None:
        return registry
    return ToolOutcome(
        f"{tool}: process handles need a run (they live and die with it); use `shell` for "
        "a command that finishes, or call this inside `io run`",
        is_error=True,
    )


class Shell:
    """Run one command line in the foreground (no `sh -c`: the pipeline is built here)."""

    spec = ToolSpec(
        "shell",
        "Run a command line from the workspace root. " + _LINE_HELP
        + " A timeout kills the whole line.",
        {
            "type": "object",
            "properties": {
                "line": {"type": "string"},
                "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["line"],
            "additionalProperties": False,
        },
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        line = _line_arg(args, "shell")
        timeout = args.get("timeout_seconds", ctx.exec_timeout)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InvalidToolArguments("shell: `timeout_seconds` must be a positive number")
        timeout = min(float(timeout), ctx.exec_timeout)
        from harness_core.shell import LineChecker, run_line

        plan = _prepared(line, ctx)
        if isinstance(plan, ToolOutcome):
            return plan
        checker = LineChecker(ctx.workspace, ctx.gate)
        try:
            result = run_line(
                plan, launcher=ctx.launcher, workspace=ctx.workspace, clock=ctx.clock,
                timeout=timeout, output_cap=max(ctx.output_cap // 2, 1),
                recheck=lambda stage: checker.recheck(stage, plan.base_cwd),
            )
        except SandboxUnavailable as exc:
            return ToolOutcome(f"shell: the sandbox could not start the line: {exc}",
                               is_error=True, changed=True)
        return _result_outcome(result, timeout, ctx.launcher.selected.backend.value)


def _result_outcome(result: LineResult, timeout: float, sandbox: str) -> ToolOutcome:
    stdout, stderr = _text(result.stdout, "stdout"), _text(result.stderr, "stderr")
    data = ShellData(sandbox=sandbox, exit_status=result.exit_status, stdout=stdout,
                     stderr=stderr, truncated=result.stdout.omitted + result.stderr.omitted,
                     timed_out=result.timed_out)
    if result.timed_out:
        head = (f"timed out after {timeout:g}s; every process of the line was killed "
                f"(exit status {result.exit_status})")
    else:
        head = f"exit status {result.exit_status}"
    parts = [head]
    if stdout:
        parts.append("stdout:\n" + stdout)
    if stderr:
        parts.append("stderr:\n" + stderr)
    text = "\n".join(parts)
    if result.blocked is not None:
        blocked = result.blocked
        return ToolOutcome(
            _refused_text(blocked) + "\n(what ran before the refusal)\n" + text,
            is_error=True, data=data, refused=_refusal(blocked), changed=True,
        )
    return ToolOutcome(text, is_error=result.timed_out or result.exit_status != 0, data=data,
                       changed=True)


class ShellStart:
    """Start a command line as a process handle (a dev server, a watch build …)."""

    spec = ToolSpec(
        "shell_start",
        "Start a line that keeps running (server, watcher); returns a handle for "
        "shell_poll/shell_kill. Syntax and checks as in shell. At most 8 at once; all killed at "
        "run end.",
        {
            "type": "object",
            "properties": {"line": {"type": "string"}},
            "required": ["line"],
            "additionalProperties": False,
        },
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        from harness_core.shell import Blocked, LineChecker

        line = _line_arg(args, "shell_start")
        registry = _registry(ctx, "shell_start")
        if isinstance(registry, ToolOutcome):
            return registry
        if not registry.has_room():
            blocked = Blocked(reason=registry.cap_reason(), target=line)
            return ToolOutcome(f"refused: {blocked.reason}", is_error=True,
                               refused=_refusal(blocked))
        plan = _prepared(line, ctx)
        if isinstance(plan, ToolOutcome):
            return plan
        checker = LineChecker(ctx.workspace, ctx.gate)
        try:
            started = registry.start(
                plan,
                recheck=lambda stage: checker.recheck(stage, plan.base_cwd, consult_gate=False),
            )
        except (ToolError, SandboxUnavailable) as exc:
            return ToolOutcome(f"shell_start: {exc}", is_error=True)
        if started.blocked is not None or started.handle_id is None:
            blocked = started.blocked or Blocked(reason="nothing started")
            return _refused(blocked)
        pids = ", ".join(str(p) for p in started.pids) or "none yet"
        return ToolOutcome(
            f"started handle {started.handle_id} (pids {pids}); read its output with "
            f"shell_poll and end it with shell_kill",
            data=HandleStarted(started.handle_id, tuple(started.pids)),
            changed=True,
        )


def _poll_data(poll: HandlePoll) -> HandleData:
    return HandleData(handle=poll.handle_id, running=poll.running, exit_status=poll.exit_status,
                      end_reason=poll.end_reason, cursor=poll.cursor, pending=poll.pending,
                      orphaned=poll.orphaned, output=poll.text)


def _orphan_text(poll: HandlePoll, asked: str) -> str:
    if poll.orphaned:
        return (
            f"handle {poll.handle_id} ({poll.line!r}) was started by an earlier io process "
            f"that is gone; it is orphaned and is never {asked}, signalled or re-attached "
            f"(its recorded pid may now belong to another program). {poll.cursor} bytes of "
            "its output were read before. Start again what you still need with shell_start."
        )
    return (
        f"handle {poll.handle_id} ({poll.line!r}) ended ({poll.end_reason}, exit status "
        f"{poll.exit_status}) in an earlier io process; nothing more can be read from it. "
        "Start again what you still need with shell_start."
    )


def _state_line(poll: HandlePoll) -> str:
    if poll.running:
        more = f"; {poll.pending} more bytes waiting" if poll.pending else ""
        return f"[handle {poll.handle_id} running{more}]"
    if poll.end_reason == "exited":
        more = f"; {poll.pending} more bytes waiting" if poll.pending else ""
        return f"[handle {poll.handle_id} exited with status {poll.exit_status}{more}]"
    return f"[handle {poll.handle_id} {poll.end_reason or 'ended'}]"


def _handle_arg(args: dict[str, Any], tool: str) -> str:
    handle = req_str(args, "handle", tool)
    if not handle:
        raise InvalidToolArguments(f"{tool}: `handle` is empty")
    return handle


class ShellPoll:
    """Read what a handle printed since the previous poll, and whether it still runs."""

    spec = ToolSpec(
        "shell_poll",
        "Read a handle's output since the last poll (stdout+stderr, bounded; the rest waits) "
        "and whether it still runs or its exit status.",
        {
            "type": "object",
            "properties": {
                "handle": {"type": "string"},
                "max_bytes": {"type": "integer", "minimum": 1},
            },
            "required": ["handle"],
            "additionalProperties": False,
        },
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        handle = _handle_arg(args, "shell_poll")
        max_bytes = args.get("max_bytes", ctx.output_cap)
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise InvalidToolArguments("shell_poll: `max_bytes` must be a positive integer")
        registry = _registry(ctx, "shell_poll")
        if isinstance(registry, ToolOutcome):
            return registry
        try:
            poll = registry.poll(handle, min(max_bytes, ctx.output_cap))
        except ToolError as exc:
            return ToolOutcome(f"shell_poll: {exc}", is_error=True)
        if poll.from_record:
            return ToolOutcome(_orphan_text(poll, "polled"), data=_poll_data(poll))
        text = poll.text + ("" if not poll.text or poll.text.endswith("\n") else "\n")
        if poll.blocked is not None:
            text += _refused_text(poll.blocked) + "\n"
        return ToolOutcome(text + _state_line(poll), data=_poll_data(poll))


class ShellKill:
    """End a handle and every process it started."""

    spec = ToolSpec(
        "shell_kill",
        "Kill a handle's process tree and free its slot; its output stays readable by shell_poll.",
        {
            "type": "object",
            "properties": {"handle": {"type": "string"}},
            "required": ["handle"],
            "additionalProperties": False,
        },
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        handle = _handle_arg(args, "shell_kill")
        registry = _registry(ctx, "shell_kill")
        if isinstance(registry, ToolOutcome):
            return registry
        try:
            poll = registry.kill(handle)
        except ToolError as exc:
            return ToolOutcome(f"shell_kill: {exc}", is_error=True)
        if poll.from_record:
            return ToolOutcome(_orphan_text(poll, "killed"), data=_poll_data(poll))
        if poll.end_reason == "killed":
            text = f"killed handle {poll.handle_id} and every process it started"
        else:
            text = (f"handle {poll.handle_id} had already ended ({poll.end_reason}, exit "
                    f"status {poll.exit_status}); nothing to kill")
        return ToolOutcome(text, data=_poll_data(poll), changed=True)


def shell_tools() -> list[Tool]:
    """The four shell built-ins."""
    return [Shell(), ShellStart(), ShellPoll(), ShellKill()]
