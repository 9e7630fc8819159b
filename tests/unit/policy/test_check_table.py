"""`Policy.check` as tables: act → verdict, rule, layer (and a word of the reason)."""

from __future__ import annotations

import pytest

from harness_core.errors import PolicyError
from harness_core.policy import (
    BUILTIN_LAYER,
    PROTECTED_WRITE_PATTERNS,
    TIER_LAYER,
    Act,
    ActKind,
    ApprovalMode,
    Decision,
    Effect,
    Policy,
    Rule,
    Tier,
    Verdict,
)

A, D, Q = Verdict.ALLOW, Verdict.DENY, Verdict.ASK

PROJECT = Policy.from_lists(
    tier="workspace-write",
    allow_exec=["pytest*", "git status*"],
    deny_exec=["git push*", "rm"],
    deny_read=["secrets/**", "**/*.pem"],
    allow_net=["pypi.org", "*.pythonhosted.org"],
    deny_net=["evil.example"],
    deny_write=["dist/**"],
)


@pytest.mark.parametrize(
    ("act", "verdict", "rule", "layer", "reason_has"),
    [
        (Act.read("src/a.py"), A, None, TIER_LAYER, "workspace-write tier allows read"),
        (Act.read("secrets"), D, "secrets/**", "project", "deny_read"),
        (Act.read("secrets/prod.env"), D, "secrets/**", "project", "deny_read"),
        (Act.read("key.pem"), D, "**/*.pem", "project", "deny_read"),
        (Act.read("a/b/key.pem"), D, "**/*.pem", "project", "deny_read"),
        (Act.read("a/b/key.pem.txt"), A, None, TIER_LAYER, "tier"),
        (Act.write("src/a.py"), A, None, TIER_LAYER, "allows write"),
        (Act.write("dist/pkg.whl"), D, "dist/**", "project", "deny_write"),
        (Act.exec(["pytest", "-q"]), A, "pytest*", "project", "allow_exec"),
        (Act.exec(["pytest"]), A, "pytest*", "project", "allow_exec"),
        (Act.exec(["git", "status"]), A, "git status*", "project", "allow_exec"),
        (Act.exec(["git", "status", "--short"]), A, "git status*", "project", "allow_exec"),
        (Act.exec(["git", "push", "origin", "main"]), D, "git push*", "project", "deny_exec"),
        (Act.exec(["/usr/bin/git", "push"]), D, "git push*", "project", "deny_exec"),
        (Act.exec(["C:\\Git\\git.exe", "push"]), D, "git push*", "project", "deny_exec"),
        (Act.exec(["git", "log"]), Q, None, TIER_LAYER, "needs approval for exec"),
        (Act.exec(["rm", "-rf", "build"]), D, "rm", "project", "deny_exec"),
        (Act.exec(["/bin/rm", "x"]), D, "rm", "project", "deny_exec"),
        # An allow matches the literal line only: a workspace file named pytest is not pytest.
        (Act.exec(["./pytest", "-q"]), Q, None, TIER_LAYER, "approval"),
        (Act.exec(["/usr/bin/pytest"]), Q, None, TIER_LAYER, "approval"),
        (Act.net("pypi.org"), A, "pypi.org", "project", "allow_net"),
        (Act.net("PyPI.ORG:443"), A, "pypi.org", "project", "allow_net"),
        (Act.net("files.pythonhosted.org"), A, "*.pythonhosted.org", "project", "allow_net"),
        (Act.net("pythonhosted.org"), Q, None, TIER_LAYER, "needs approval for net"),
        (Act.net("evil.example."), D, "evil.example", "project", "deny_net"),
        (Act.net("EVIL.example:8080"), D, "evil.example", "project", "deny_net"),
        (Act.net("[::1]:8080"), Q, None, TIER_LAYER, "net"),
    ],
)
def test_project_policy_decides_each_act(
    act: Act, verdict: Verdict, rule: str | None, layer: str, reason_has: str
) -> None:
    decision = PROJECT.check(act)
    assert (decision.verdict, decision.rule, decision.layer) == (verdict, rule, layer)
    assert reason_has in decision.reason
    assert decision.is_allowed is (verdict is Verdict.ALLOW)


def test_deny_in_any_layer_beats_allow_in_any_layer() -> None:
    rules = (
        Rule(Effect.ALLOW, ActKind.EXEC, "git*", "local"),
        Rule(Effect.ALLOW, ActKind.EXEC, "git push*", "cli"),
        Rule(Effect.DENY, ActKind.EXEC, "git push*", "system"),
    )
    for ordering in (rules, tuple(reversed(rules))):
        decision = Policy(tier=Tier.FULL, rules=ordering).check(Act.exec(["git", "push"]))
        assert (decision.verdict, decision.rule, decision.layer) == (D, "git push*", "system")


def test_deny_of_another_kind_does_not_apply() -> None:
    policy = Policy(tier=Tier.FULL, rules=(Rule(Effect.DENY, ActKind.READ, "**", "project"),))
    assert policy.check(Act.write("a.txt")).verdict is A
    assert policy.check(Act.exec(["cat", "a.txt"])).verdict is A


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("io.toml", "io.toml"),
        ("io.local.toml", "io.local.toml"),
        (".git/hooks/pre-commit", ".git/hooks/**"),
        (".git/hooks", ".git/hooks/**"),
        (".git/config", ".git/config"),
        (".gitmodules", ".gitmodules"),
        (".git/commondir", ".git/commondir"),
        (".git/config.worktree", ".git/config.worktree"),
        (".git/info", ".git/info/**"),
        (".git/info/attributes", ".git/info/**"),
        (".git/worktrees/w/config.worktree", ".git/worktrees/**"),
        (".git/objects/info/alternates", ".git/objects/info/alternates"),
        ("IO.TOML", "io.toml"),
        ("./io.toml", "io.toml"),
        ("src/../io.toml", "io.toml"),
    ],
)
def test_protected_paths_refuse_writes_in_every_tier(path: str, pattern: str) -> None:
    for tier in Tier:
        decision = Policy(tier=tier).check(Act.write(path))
        assert (decision.verdict, decision.rule, decision.layer) == (D, pattern, BUILTIN_LAYER)
        assert "protected" in decision.reason


@pytest.mark.parametrize("path", ["io.toml", "io.local.toml", ".git/hooks/pre-commit"])
def test_protected_path_stays_readable(path: str) -> None:
    assert Policy(tier=Tier.READ_ONLY).check(Act.read(path)).verdict is A


@pytest.mark.parametrize(
    ("allow", "target", "verdict"),
    [
        ("io.toml", "io.toml", A),
        ("./io.toml", "io.toml", A),
        ("io.local.toml", "io.local.toml", A),
        (".git/config", ".git/config", A),
        (".gitmodules", ".gitmodules", A),
        (".git/hooks/pre-commit", ".git/hooks/pre-commit", A),
        (".git/hooks/pre-commit", ".git/hooks/pre-push", D),
        ("*.toml", "io.toml", D),
        ("**", "io.toml", D),
        ("io.tom?", "io.toml", D),
        (".git/hooks/**", ".git/hooks/pre-commit", D),
        ("io.toml", "IO.TOML", D),
    ],
)
def test_only_an_allow_naming_the_exact_path_lifts_protection(
    allow: str, target: str, verdict: Verdict
) -> None:
    policy = Policy.from_lists(tier=Tier.FULL, allow_write=[allow])
    decision = policy.check(Act.write(target))
    assert decision.verdict is verdict
    if verdict is D:
        assert decision.layer == BUILTIN_LAYER


def test_exact_allow_does_not_beat_a_deny_rule() -> None:
    policy = Policy(
        tier=Tier.FULL,
        rules=(
            Rule(Effect.ALLOW, ActKind.WRITE, "io.toml", "cli"),
            Rule(Effect.DENY, ActKind.WRITE, "*.toml", "system"),
        ),
    )
    decision = policy.check(Act.write("io.toml"))
    assert (decision.verdict, decision.rule, decision.layer) == (D, "*.toml", "system")


def test_extra_protected_paths_guard_the_store() -> None:
    policy = Policy(tier=Tier.FULL, protected=("state/io.db", "state/io.db-wal", "state/io.db-shm"))
    for path in ("state/io.db", "state/io.db-wal", "state/io.db-shm"):
        decision = policy.check(Act.write(path))
        assert (decision.verdict, decision.layer) == (D, BUILTIN_LAYER)
    assert policy.check(Act.write("state/other.db")).verdict is A


@pytest.mark.parametrize("kind", [ActKind.READ, ActKind.WRITE])
@pytest.mark.parametrize("target", ["/etc/passwd", "../x", "a/../../x", "..", "C:/Windows", "\\x"])
def test_paths_outside_the_root_are_denied_by_the_builtin_layer(kind: ActKind, target: str) -> None:
    policy = Policy(tier=Tier.FULL, rules=(Rule(Effect.ALLOW, kind, "**", "cli"),))
    decision = policy.check(Act(kind, target))
    assert (decision.verdict, decision.rule, decision.layer) == (D, "workspace-boundary",
                                                                BUILTIN_LAYER)
    assert "outside the workspace root" in decision.reason


def test_dotdot_that_stays_inside_is_matched_normalised() -> None:
    policy = Policy.from_lists(tier=Tier.FULL, deny_write=["b/**"])
    assert policy.check(Act.write("a/../b/x")).rule == "b/**"


_TIER_TABLE = [
    # tier, kind, verdict with approval=ask, verdict with approval=deny
    (Tier.READ_ONLY, ActKind.READ, A, A),
    (Tier.READ_ONLY, ActKind.WRITE, Q, D),
    (Tier.READ_ONLY, ActKind.EXEC, Q, D),
    (Tier.READ_ONLY, ActKind.NET, Q, D),
    (Tier.WORKSPACE_WRITE, ActKind.READ, A, A),
    (Tier.WORKSPACE_WRITE, ActKind.WRITE, A, A),
    (Tier.WORKSPACE_WRITE, ActKind.EXEC, Q, D),
    (Tier.WORKSPACE_WRITE, ActKind.NET, Q, D),
    (Tier.FULL, ActKind.READ, A, A),
    (Tier.FULL, ActKind.WRITE, A, A),
    (Tier.FULL, ActKind.EXEC, A, A),
    (Tier.FULL, ActKind.NET, A, A),
]
_SAMPLE = {
    ActKind.READ: Act.read("src/a.py"),
    ActKind.WRITE: Act.write("src/a.py"),
    ActKind.EXEC: Act.exec(["make", "all"]),
    ActKind.NET: Act.net("example.org"),
}


@pytest.mark.parametrize(("tier", "kind", "on_ask", "on_deny"), _TIER_TABLE)
def test_tier_default_for_unnamed_acts(
    tier: Tier, kind: ActKind, on_ask: Verdict, on_deny: Verdict
) -> None:
    for mode, expected in ((ApprovalMode.ASK, on_ask), (ApprovalMode.DENY, on_deny)):
        decision = Policy(tier=tier, approval=mode).check(_SAMPLE[kind])
        assert (decision.verdict, decision.rule, decision.layer) == (expected, None, TIER_LAYER)
        assert tier.value in decision.reason


def test_rule_decisions_ignore_the_approval_mode() -> None:
    for mode in ApprovalMode:
        policy = Policy.from_lists(tier="read-only", allow_exec=["make*"], approval=mode)
        assert policy.check(Act.exec(["make", "all"])).verdict is A


def test_protected_patterns_are_the_documented_set() -> None:
    assert PROTECTED_WRITE_PATTERNS == (
        "io.toml",
        "io.local.toml",
        ".git/hooks/**",
        ".git/config",
        ".gitmodules",
        ".git/commondir",
        ".git/config.worktree",
        ".git/info/**",
        ".git/worktrees/**",
        ".git/objects/info/alternates",
    )


def test_act_descriptions() -> None:
    assert Act.write("src/a.py").describe() == "write src/a.py"
    assert Act.exec(["git", "push", "origin"]).describe() == "exec git push origin"
    assert Act.read("").describe() == "read ."
    assert Act.net("pypi.org").describe() == "net pypi.org"
    assert Act(ActKind.EXEC, "ls").describe() == "exec ls"


def test_exec_act_built_directly_without_argv_matches_its_program() -> None:
    policy = Policy.from_lists(tier="full", deny_exec=["ls*"])
    assert policy.check(Act(ActKind.EXEC, "ls")).verdict is D


def test_decision_json_carries_rule_and_layer_when_set() -> None:
    decision = PROJECT.check(Act.exec(["git", "push"]))
    assert decision.to_json() == {
        "verdict": "deny",
        "reason": decision.reason,
        "rule": "git push*",
        "layer": "project",
    }
    assert Decision(A, "ok").to_json() == {"verdict": "allow", "reason": "ok"}


def test_extra_protected_paths_are_literal_not_globs() -> None:
    policy = Policy(tier=Tier.FULL, protected=("data[1]/*.db",))
    assert policy.check(Act.write("data[1]/*.db")).layer == BUILTIN_LAYER
    assert policy.check(Act.write("data1/a.db")).verdict is A


@pytest.mark.parametrize("path", ["", ".", "/abs/io.db", "../io.db"])
def test_extra_protected_path_must_lie_inside_the_root(path: str) -> None:
    with pytest.raises(PolicyError, match="protected path"):
        Policy(protected=(path,))
