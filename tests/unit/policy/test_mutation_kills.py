"""Tables that pin the policy's glob character classes, the tier and approval names, and
the stored-policy reader, written to kill the mutants mutmut left alive in policy/
(bench/mutation.py): each row is act-or-input → exact outcome."""

from __future__ import annotations

import pytest

from harness_core import PolicyError
from harness_core.policy import ApprovalMode, Policy, Tier
from harness_core.policy._patterns import compile_command, compile_path

PATH_CLASSES = [
    # pattern, path, matches
    ("src/[abc].py", "src/a.py", True),
    ("src/[abc].py", "src/d.py", False),
    ("src/[!abc].py", "src/d.py", True),
    ("src/[!abc].py", "src/a.py", False),
    ("src/[^abc].py", "src/d.py", True),
    ("src/[^abc].py", "src/b.py", False),
    ("f[a-c]", "fb", True),
    ("f[a-c]", "fd", False),
    ("f[]]", "f]", True),
    ("f[]a]", "fa", True),
    ("f[]a]", "fb", False),
    ("f[!]]", "fa", True),
    ("f[!]]", "f]", False),
    ("f[\\\\]", "f\\", True),
    ("f[&~|]", "f&", True),
    ("f[&~|]", "f|", True),
    ("f[&~|]", "fx", False),
    ("f[--]", "f-", True),
    ("f[x^]", "f^", True),
    ("f[x^]", "fy", False),
    ("a[!x]b", "a/b", False),  # a class never matches the separator inside a segment
]


@pytest.mark.parametrize(("pattern", "path", "matches"), PATH_CLASSES)
def test_path_glob_classes(pattern: str, path: str, matches: bool) -> None:
    assert bool(compile_path(pattern).fullmatch(path)) is matches


COMMAND_CLASSES = [
    ("git [sp]*", "git status", True),
    ("git [sp]*", "git push", True),
    ("git [!sp]*", "git log", True),
    ("git [!sp]*", "git push", False),
    ("ls [/]", "ls /", True),  # outside paths a class may match a slash
]


@pytest.mark.parametrize(("pattern", "line", "matches"), COMMAND_CLASSES)
def test_command_glob_classes(pattern: str, line: str, matches: bool) -> None:
    assert bool(compile_command(pattern).fullmatch(line)) is matches


@pytest.mark.parametrize("pattern", ["src/[abc", "f[", "f[!", "f[]"])
def test_an_unclosed_class_is_a_policy_error(pattern: str) -> None:
    with pytest.raises(PolicyError, match="has an unclosed '\\['") as info:
        compile_path(pattern)
    assert info.value.hint == "write '\\[' for a literal bracket"


def test_tier_and_approval_names() -> None:
    assert [Tier.parse(t.value) for t in Tier] == list(Tier)
    assert ApprovalMode.parse("ask") is ApprovalMode.ASK
    assert ApprovalMode.parse("deny") is ApprovalMode.DENY
    with pytest.raises(PolicyError) as tier:
        Tier.parse("admin")
    assert tier.value.message == "unknown policy tier 'admin'"
    assert tier.value.hint == "use one of: " + ", ".join(t.value for t in Tier)
    with pytest.raises(PolicyError) as mode:
        ApprovalMode.parse("maybe")
    assert mode.value.message == "unknown approval mode 'maybe'"
    assert mode.value.hint == "use 'ask' or 'deny'"


def test_from_lists_takes_names_or_members() -> None:
    by_name = Policy.from_lists(tier="full", approval="deny", allow_exec=["ls*"])
    by_member = Policy.from_lists(tier=Tier.FULL, approval=ApprovalMode.DENY,
                                  allow_exec=["ls*"])
    assert by_name == by_member
    assert by_name.tier is Tier.FULL and by_name.approval is ApprovalMode.DENY
    with pytest.raises(PolicyError, match="allow_exec must be a list of patterns"):
        Policy.from_lists(tier="full", allow_exec="ls*")  # type: ignore[arg-type]


def test_a_stored_policy_round_trips_and_defaults() -> None:
    policy = Policy.from_lists(tier="read-only", approval="deny", deny_read=["**/*.pem"],
                               allow_exec=["pytest*"], layer="user")
    assert Policy.from_json(policy.to_json()) == policy
    bare = Policy.from_json({})
    assert bare == Policy.from_json({"rules": [], "protected": [], "within": []})
    assert bare.tier is Policy().tier and bare.approval is Policy().approval


@pytest.mark.parametrize(("data", "says"), [
    ({"format": 999}, "stored policy has format 999"),
    ({"rules": {}}, "'rules' must be a list"),
    ({"protected": "x"}, "'protected' must be a list"),
    ({"within": 3}, "'within' must be a list"),
    ({"rules": ["nope"]}, "a rule must be an object, not 'nope'"),
    ({"rules": [{"effect": "allow"}]}, "malformed rule"),
    ({"rules": [{"effect": "maybe", "kind": "read", "pattern": "x", "layer": "l"}]},
     "malformed rule"),
    ({"tier": 3}, "'tier' must be a string"),
    ({"approval": ["ask"]}, "'approval' must be a string"),
])
def test_a_malformed_stored_policy_is_a_policy_error(data: dict[str, object],
                                                     says: str) -> None:
    with pytest.raises(PolicyError, match=says.replace("[", "\\[").replace("(", "\\(")):
        Policy.from_json(data)
