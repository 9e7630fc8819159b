"""docs/CONTRACT.md, "The policy": the exec examples the page gives, decided by the real
policy."""

from __future__ import annotations

from harness_core import Act, Policy, Verdict


def _verdict(policy: Policy, argv: list[str]) -> Verdict:
    return policy.check(Act.exec(argv)).verdict


def test_the_pages_exec_examples() -> None:
    deny = Policy.from_lists(tier="full", deny_exec=["git push*"])
    assert _verdict(deny, ["/usr/bin/git", "push", "origin"]) is Verdict.DENY
    assert _verdict(deny, ["git", "push"]) is Verdict.DENY
    # patterns compare text: another spelling of the same push is not caught
    assert _verdict(deny, ["git", "-C", ".", "push"]) is Verdict.ALLOW
    allow = Policy.from_lists(tier="read-only", approval="deny", allow_exec=["pytest*"])
    assert _verdict(allow, ["pytest", "-q"]) is Verdict.ALLOW
    assert _verdict(allow, ["./pytest", "-q"]) is Verdict.DENY
