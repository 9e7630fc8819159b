"""`Policy.check` remembers recent decisions; what it remembers must change nothing."""

from __future__ import annotations

from harness_core.policy import Act, ActKind, Policy, Tier, Verdict
from harness_core.policy._policy import _MEMO_SIZE, _MEMO_TEXT


def _policy() -> Policy:
    return Policy.from_lists(
        tier=Tier.WORKSPACE_WRITE,
        allow_exec=["pytest*", "head *"],
        deny_exec=["git *", "git push*", "/usr/bin/*"],
        deny_write=["secrets/**"],
    )


def test_a_remembered_decision_equals_a_fresh_one() -> None:
    policy = _policy()
    acts = [Act.exec(["pytest", "-q"]), Act.exec(["git", "push"]), Act.write("secrets/k"),
            Act.write("io.toml"), Act.read("../x"), Act.net("example.com")]
    first = [policy.check(act) for act in acts]
    again = [policy.check(act) for act in acts]
    fresh = [_policy().check(act) for act in acts]
    assert first == again == fresh


def test_the_first_rule_in_order_decides_whichever_candidate_matches() -> None:
    policy = _policy()
    assert policy.check(Act.exec(["git", "push"])).rule == "git *"
    # The basename candidate matches "git *", the whole line "/usr/bin/*": the earlier rule.
    assert policy.check(Act.exec(["/usr/bin/git", "push"])).rule == "git *"
    assert policy.check(Act.exec(["/usr/bin/ls"])).rule == "/usr/bin/*"


def test_the_memo_stays_bounded() -> None:
    policy = _policy()
    for n in range(_MEMO_SIZE + 50):
        assert policy.check(Act.exec(["head", "-n", str(n)])).verdict is Verdict.ALLOW
    assert len(policy._memo) <= _MEMO_SIZE


def test_long_acts_are_decided_but_not_remembered() -> None:
    policy = _policy()
    decision = policy.check(Act.exec(["head", "x" * (_MEMO_TEXT + 1)]))
    assert decision.verdict is Verdict.ALLOW
    assert not policy._memo


def test_an_act_that_cannot_be_hashed_is_still_decided() -> None:
    act = Act(ActKind.EXEC, "git", ["git", "push"])  # type: ignore[arg-type]
    assert _policy().check(act).verdict is Verdict.DENY


def test_equal_policies_stay_equal_after_remembering() -> None:
    first, second = _policy(), _policy()
    first.check(Act.exec(["pytest"]))
    assert first == second
    assert hash(first) == hash(second)
