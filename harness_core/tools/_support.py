"""Shared steps of the built-in tools: argument checks, path gating, output bounds.

Every path a built-in touches goes through `gated_path`, which resolves it with the
one workspace resolver and checks the act through the run's one gate.
"""

from __future__ import annotations

from typing import Any

from harness_core.errors import InvalidToolArguments, PathEscape
from harness_core.policy import Act, ActKind, Decision
from harness_core.tools._base import Refusal, ToolContext, ToolOutcome

__all__ = [
    "bounded",
    "gated_path",
    "opt_int",
    "refusal_outcome",
    "req_str",
]


def req_str(args: dict[str, Any], key: str, tool: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise InvalidToolArguments(f"{tool}: argument {key!r} must be a string")
    return value


def opt_int(args: dict[str, Any], key: str, tool: str, default: int) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidToolArguments(f"{tool}: argument {key!r} must be an integer")
    return value


def bounded(text: str, cap: int) -> tuple[str, int]:
    """`text` cut to `cap` bytes of UTF-8, and how many bytes were cut."""
    raw = text.encode("utf-8", errors="replace")
    if len(raw) <= cap:
        return text, 0
    cut = len(raw) - cap
    kept = raw[:cap].decode("utf-8", errors="ignore")
    return kept + f"\n[output truncated: {cut} more bytes not shown]", cut


def refusal_outcome(act: Act, decision: Decision) -> ToolOutcome:
    """The observation for an act the gate refused."""
    refusal = Refusal(
        reason=decision.reason,
        act=act.kind.value,
        target=act.describe(),
        rule=decision.rule,
        layer=decision.layer,
    )
    where = f" (rule {decision.rule!r}, layer {decision.layer})" if decision.rule else (
        f" (layer {decision.layer})" if decision.layer else ""
    )
    return ToolOutcome(
        output=f"refused: {act.describe()}: {decision.reason}{where}",
        is_error=True,
        refused=refusal,
    )


def gated_path(ctx: ToolContext, path: str, kind: ActKind) -> tuple[str, ToolOutcome | None]:
    """Resolve `path` and check the act; returns (relative path, None) or ("", refusal)."""
    try:
        rel = ctx.workspace.resolve(path)
    except PathEscape as exc:
        act = Act(kind, path)
        decision = ctx.gate.refuse(act, exc.reason)
        return "", refusal_outcome(act, decision)
    act = Act(kind, rel)
    decision = ctx.gate.check(act)
    if not decision.is_allowed:
        return "", refusal_outcome(act, decision)
    return rel, None
