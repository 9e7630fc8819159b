"""What a hook answered: its exit status and stdout read by the convention io documents.

The convention (docs/guide/hooks.md):

- exit 0 with empty stdout: no objection.
- exit 0 with a JSON object on stdout: its `decision` (``allow``, ``deny``, ``ask``),
  `reason` and `context` (text for the model) are read; any other key, another JSON
  type or text that is not JSON is *unreadable*.
- exit 2: a refusal (`deny`); stderr is the reason (for `post_tool`: context for the
  model; for `stop`: the reason to go on).
- any other exit status, a kill by a signal, a timeout, a program that cannot start:
  an *error*.

For `pre_tool` an error and unreadable output are refusals (fail closed); for the other
events they are recorded and reported, and the run goes on as if the hook had no
objection. This module only reads; it starts nothing.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

from harness_core._record import record

__all__ = ["DENY_EXIT_STATUS", "HookAnswer", "HookDecision", "read_answer"]

DENY_EXIT_STATUS = 2
"""The exit status that means "deny", with stderr as the reason (as in Claude Code)."""

_KEYS = frozenset({"decision", "reason", "context"})
_REASON_CHARS = 2000
"""Characters of a reason kept: a refusal's reason is one line for a person and the model."""
CONTEXT_CHARS = 16_384
"""Characters of a hook's context kept for the model (the rest is cut, and the cut said)."""


class HookDecision(Enum):
    """What a hook decided. A closed set."""

    ALLOW = "allow"
    """No objection (the policy still decides everything)."""
    DENY = "deny"
    """Refuse: the call is refused, the stop is refused, the run does not start."""
    ASK = "ask"
    """Put the call to the approval flow (`pre_tool` only)."""
    ERROR = "error"
    """The hook failed: it crashed, timed out, exited with another status, or printed
    what io cannot read. A deny for `pre_tool`."""


@record
class HookAnswer:
    """One hook's answer.

    Attributes:
        decision: What it decided.
        reason: Why (its `reason`, its stderr on exit 2, or what went wrong).
        context: Text for the model (`post_tool`, `run_start`, `child_stop`,
            `pre_compact`), or "".
        exit_status: Its exit status (None: it never ran to an end).
        timed_out: It was killed at its timeout.
    """

    decision: HookDecision
    reason: str = ""
    context: str = ""
    exit_status: int | None = None
    timed_out: bool = False

    def to_json(self) -> dict[str, Any]:
        """The recorded form (`HookAnswer.from_json` reads it back)."""
        return {"decision": self.decision.value, "reason": self.reason,
                "context": self.context, "exit_status": self.exit_status,
                "timed_out": self.timed_out}

    @staticmethod
    def from_json(data: dict[str, Any]) -> HookAnswer:
        """Read a recorded answer; anything it cannot read is an error (fail closed)."""
        try:
            decision = HookDecision(data.get("decision"))
        except ValueError:
            return HookAnswer(HookDecision.ERROR, "the recorded answer cannot be read")
        status = data.get("exit_status")
        return HookAnswer(decision, str(data.get("reason") or ""), str(data.get("context") or ""),
                          status if isinstance(status, int) else None,
                          bool(data.get("timed_out")))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").strip()


def _cut(text: str, limit: int, what: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[{what} cut: {len(text) - limit:,} more characters]"


def _unreadable(why: str, status: int) -> HookAnswer:
    return HookAnswer(HookDecision.ERROR, f"unreadable output: {why}", exit_status=status)


def _from_json(stdout: str, status: int) -> HookAnswer:
    try:
        data = json.loads(stdout)
    except ValueError:
        return _unreadable("stdout is not JSON (write logs to stderr)", status)
    if not isinstance(data, dict):
        return _unreadable(f"expected a JSON object, got {type(data).__name__}", status)
    extra = sorted(set(data) - _KEYS)
    if extra:
        return _unreadable(f"unknown key {extra[0]!r} (known: context, decision, reason)",
                           status)
    values: dict[str, str] = {}
    for key in _KEYS:
        value = data.get(key, "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            return _unreadable(f"{key!r} must be a string", status)
        values[key] = value
    try:
        decision = HookDecision(values["decision"] or "allow")
    except ValueError:
        decision = HookDecision.ERROR
    if decision is HookDecision.ERROR:
        return _unreadable(f"decision {values['decision']!r} is not allow, deny or ask", status)
    return HookAnswer(decision, _cut(values["reason"], _REASON_CHARS, "reason"),
                      _cut(values["context"], CONTEXT_CHARS, "hook context"), status)


def read_answer(exit_status: int, stdout: bytes, stderr: bytes, *, truncated: bool = False
                ) -> HookAnswer:
    """Read a finished hook's exit status and output by the convention above.

    Args:
        exit_status: As a shell reports it (128+N for a signal N).
        stdout: What it printed.
        stderr: What it printed on stderr.
        truncated: Its output was cut (a cut JSON answer is not read).
    """
    if exit_status == DENY_EXIT_STATUS:
        reason = _cut(_text(stderr), _REASON_CHARS, "reason") or "refused (exit 2)"
        return HookAnswer(HookDecision.DENY, reason, exit_status=exit_status)
    if exit_status != 0:
        tail = _text(stderr)[-300:]
        detail = f": {tail}" if tail else ""
        return HookAnswer(HookDecision.ERROR, f"exited with status {exit_status}{detail}",
                          exit_status=exit_status)
    out = _text(stdout)
    if not out:
        return HookAnswer(HookDecision.ALLOW, exit_status=0)
    if truncated:
        return _unreadable("stdout is larger than io reads", exit_status)
    return _from_json(out, exit_status)
