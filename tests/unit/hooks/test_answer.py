"""The exit-code convention of hooks, as a table: exit status and output → decision."""

from __future__ import annotations

import json

import pytest

from harness_core.hooks import HookAnswer, HookDecision, read_answer
from harness_core.hooks._answer import CONTEXT_CHARS

ALLOW, DENY, ASK, ERROR = (HookDecision.ALLOW, HookDecision.DENY, HookDecision.ASK,
                           HookDecision.ERROR)


@pytest.mark.parametrize(("status", "stdout", "stderr", "decision", "reason"), [
    (0, b"", b"", ALLOW, ""),
    (0, b"  \n", b"log line\n", ALLOW, ""),
    (0, b'{"decision": "deny", "reason": "no"}', b"", DENY, "no"),
    (0, b'{"decision": "ask", "reason": "look"}', b"", ASK, "look"),
    (0, b'{"decision": "allow"}', b"", ALLOW, ""),
    (0, b'{"reason": "fine", "decision": null}', b"", ALLOW, "fine"),
    (2, b"", b"not on main\n", DENY, "not on main"),
    (2, b'{"decision": "allow"}', b"", DENY, "refused (exit 2)"),
    (1, b"", b"Traceback...\nKeyError: 'x'\n", ERROR, "exited with status 1: Traceback...\n"
                                                      "KeyError: 'x'"),
    (137, b"", b"", ERROR, "exited with status 137"),
    (0, b"ok", b"", ERROR, "unreadable output: stdout is not JSON (write logs to stderr)"),
    (0, b"[]", b"", ERROR, "unreadable output: expected a JSON object, got list"),
    (0, b'{"decision": "block"}', b"", ERROR,
     "unreadable output: decision 'block' is not allow, deny or ask"),
    (0, b'{"decision": "deny", "why": "x"}', b"", ERROR,
     "unreadable output: unknown key 'why' (known: context, decision, reason)"),
    (0, b'{"context": 3}', b"", ERROR, "unreadable output: 'context' must be a string"),
])
def test_exit_status_and_output_decide(status: int, stdout: bytes, stderr: bytes,
                                       decision: HookDecision, reason: str) -> None:
    answer = read_answer(status, stdout, stderr)
    assert (answer.decision, answer.reason) == (decision, reason)
    assert answer.exit_status == status


def test_a_cut_answer_is_unreadable() -> None:
    answer = read_answer(0, b'{"decision": "allow"}', b"", truncated=True)
    assert answer.decision is ERROR and "larger than io reads" in answer.reason


def test_context_is_kept_up_to_its_cap_and_the_cut_said() -> None:
    long = "x" * (CONTEXT_CHARS + 10)
    answer = read_answer(0, json.dumps({"context": long}).encode(), b"")
    assert answer.context.startswith("x" * CONTEXT_CHARS)
    assert answer.context.endswith("[hook context cut: 10 more characters]")


def test_a_recorded_answer_reads_back_and_a_damaged_one_is_an_error() -> None:
    answer = HookAnswer(DENY, "no", "ctx", 2, timed_out=False)
    assert HookAnswer.from_json(answer.to_json()) == answer
    assert HookAnswer.from_json({"decision": "perhaps"}).decision is ERROR
