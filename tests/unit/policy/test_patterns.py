"""Pattern dialects: paths (gitignore-like, whole path), commands, hosts; malformed rules."""

from __future__ import annotations

import pytest

from harness_core.errors import PolicyError
from harness_core.policy import Act, ActKind, ApprovalMode, Effect, Policy, Rule, Tier, Verdict


def _denies_read(pattern: str, path: str) -> bool:
    policy = Policy(tier=Tier.FULL, rules=(Rule(Effect.DENY, ActKind.READ, pattern, "t"),))
    return policy.check(Act.read(path)).verdict is Verdict.DENY


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.pem", "k.pem", True),
        ("*.pem", "a/k.pem", False),  # whole-path match: say **/*.pem for any depth
        ("**/*.pem", "k.pem", True),
        ("**/*.pem", "a/b/k.pem", True),
        ("**/*.pem", "a/b/k.pem.bak", False),
        ("src/*", "src/a.py", True),
        ("src/*", "src/a/b.py", False),
        ("src/**", "src", True),
        ("src/**", "src/a/b.py", True),
        ("src/**", "srcx/a", False),
        ("src/", "src/a", True),
        ("./src/**", "src/a", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/x/y/c", False),
        ("**", "", True),
        ("**", "deep/er/path", True),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("[!ab].txt", "c.txt", True),
        ("a[!x]b", "a/b", False),  # a class never matches the separator
        ("a**b", "axyb", True),  # ** inside a segment is an ordinary *
        ("a**b", "ax/yb", False),
        ("\\*.txt", "*.txt", True),
        ("\\*.txt", "a.txt", False),
        ("a.b", "axb", False),
        ("secrets", "secrets/x", False),
    ],
)
def test_path_patterns(pattern: str, path: str, matches: bool) -> None:
    assert _denies_read(pattern, path) is matches


def _exec_verdict(effect: Effect, pattern: str, argv: list[str]) -> bool:
    policy = Policy(tier=Tier.READ_ONLY, rules=(Rule(effect, ActKind.EXEC, pattern, "t"),))
    expected = Verdict.ALLOW if effect is Effect.ALLOW else Verdict.DENY
    return policy.check(Act.exec(argv)).verdict is expected


@pytest.mark.parametrize(
    ("pattern", "argv", "allows", "denies"),
    [
        ("pytest*", ["pytest", "-q", "tests/unit"], True, True),
        ("git status*", ["git", "status", "--short"], True, True),
        ("git status*", ["git", "push"], False, False),
        ("git push*", ["/usr/bin/git", "push"], False, True),
        ("git", ["git", "push"], False, True),  # a deny naming the program denies every use
        ("*", ["anything", "at all"], True, True),
        ("python -m pytest*", ["python", "-m", "pytest", "-x"], True, True),
        ("python -m pytest*", ["python", "-m", "pip"], False, False),
        ("cargo publish*", ["cargo", "publish"], True, True),
        ("echo [ab]", ["echo", "a"], True, True),
    ],
)
def test_exec_patterns(pattern: str, argv: list[str], allows: bool, denies: bool) -> None:
    assert _exec_verdict(Effect.ALLOW, pattern, argv) is allows
    assert _exec_verdict(Effect.DENY, pattern, argv) is denies


@pytest.mark.parametrize(
    ("pattern", "host", "matches"),
    [
        ("pypi.org", "pypi.org", True),
        ("pypi.org", "PYPI.org:443", True),
        ("PyPI.org", "pypi.org", True),
        ("*.pythonhosted.org", "files.pythonhosted.org", True),
        ("*.pythonhosted.org", "pythonhosted.org", False),
        ("*.pythonhosted.org", "evil.org", False),
        ("10.0.0.?", "10.0.0.7:80", True),
        ("::1", "[::1]:8080", True),
    ],
)
def test_host_patterns(pattern: str, host: str, matches: bool) -> None:
    policy = Policy(tier=Tier.READ_ONLY, rules=(Rule(Effect.DENY, ActKind.NET, pattern, "t"),))
    assert (policy.check(Act.net(host)).verdict is Verdict.DENY) is matches


@pytest.mark.parametrize("kind", list(ActKind))
@pytest.mark.parametrize("pattern", ["", "   "])
def test_empty_pattern_is_a_policy_error(kind: ActKind, pattern: str) -> None:
    with pytest.raises(PolicyError, match="empty pattern"):
        Rule(Effect.ALLOW, kind, pattern, "project")


@pytest.mark.parametrize("pattern", ["/etc/**", "./", "src/[ab", "x[z-a]", "trailing\\"])
def test_malformed_path_patterns_are_policy_errors(pattern: str) -> None:
    with pytest.raises(PolicyError):
        Rule(Effect.DENY, ActKind.WRITE, pattern, "project")


def test_from_lists_reports_empty_patterns() -> None:
    with pytest.raises(PolicyError):
        Policy.from_lists(tier="full", deny_exec=[""])


def test_from_lists_refuses_a_bare_string_for_a_list() -> None:
    with pytest.raises(PolicyError, match="list of patterns"):
        Policy.from_lists(tier="full", allow_exec="pytest*")


@pytest.mark.parametrize("tier", ["", "readonly", "FULL", "workspace_write"])
def test_unknown_tier_is_a_policy_error(tier: str) -> None:
    with pytest.raises(PolicyError, match="unknown policy tier"):
        Policy.from_lists(tier=tier)
    with pytest.raises(PolicyError):
        Tier.parse(tier)


def test_tier_and_approval_strings_are_parsed() -> None:
    policy = Policy(tier="full", approval="deny")  # type: ignore[arg-type]
    assert (policy.tier, policy.approval) == (Tier.FULL, ApprovalMode.DENY)
    with pytest.raises(PolicyError, match="approval"):
        ApprovalMode.parse("maybe")


def test_rule_needs_a_layer() -> None:
    with pytest.raises(PolicyError):
        Rule(Effect.DENY, ActKind.READ, "x", "")


@pytest.mark.parametrize("argv", [[], [""]])
def test_exec_act_needs_a_program(argv: list[str]) -> None:
    with pytest.raises(PolicyError):
        Act.exec(argv)


def test_net_act_needs_a_host() -> None:
    with pytest.raises(PolicyError):
        Act.net(" ")
