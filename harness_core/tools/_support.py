"""Shared steps of the built-in tools: argument checks, path gating, output bounds.

Every path a built-in touches goes through `gated_path`, which resolves it with the
one workspace resolver and checks the act through the run's one gate.
"""

from __future__ import annotations

import codecs
from typing import Any

from harness_core.errors import InvalidToolArguments, PathEscape, WorkspaceError
from harness_core.messages import escape_surrogates
from harness_core.policy import Act, ActKind, Decision
from harness_core.tool_data import Refusal
from harness_core.tools._base import ToolContext, ToolOutcome

__all__ = [
    "bounded",
    "bounded_bytes",
    "gated_path",
    "opt_int",
    "refusal_outcome",
    "req_str",
    "shown_path",
]

NOT_UTF8_NOTE = (
    "[a name marked [not UTF-8] holds bytes that are not UTF-8; each \\xNN is one raw byte."
    " To name it in a call, write each such byte as the JSON escape \\udcNN]"
)
"""Said once under a listing that holds a name that is not UTF-8."""


def shown_path(path: str) -> tuple[str, bool]:
    """How a path read from disk is shown to the model, and whether it is not UTF-8.

    A name that is not UTF-8 comes from the OS with ``surrogateescape``; it is shown
    with each raw byte as ``\\xNN`` and an explicit ``[not UTF-8]`` marker, so it is
    never confused with a name that really holds those characters.
    """
    spelled = escape_surrogates(path)
    if spelled == path:
        return path, False
    return f"{spelled} [not UTF-8]", True


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


def bounded_bytes(raw: bytes, cap: int, dropped: int = 0) -> tuple[str, int]:
    """Raw output cut to `cap` bytes and decoded, and how many bytes were not shown.

    The count is the true cut: bytes of `raw` past the cap (a character split by the cap
    included) plus `dropped`, the bytes the capture never kept. Counting the raw bytes,
    not a re-encoding of the decoded text, keeps the number right for output that is not
    UTF-8 (where each bad byte would otherwise count as the three of U+FFFD).
    """
    if len(raw) <= cap and not dropped:
        return raw.decode("utf-8", errors="replace"), 0
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    kept = decoder.decode(raw[:cap], final=False)
    shown = min(len(raw), cap) - len(decoder.getstate()[0])
    cut = len(raw) - shown + dropped
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
    except WorkspaceError as exc:
        # A path the workspace cannot even resolve (a NUL byte, a lone surrogate, a link
        # loop) is the model's input to fix, not the end of the run.
        return "", ToolOutcome(output=f"error: {exc}", is_error=True)
    act = Act(kind, rel)
    decision = ctx.gate.check(act)
    if not decision.is_allowed:
        return "", refusal_outcome(act, decision)
    return rel, None
