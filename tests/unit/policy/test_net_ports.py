"""Net rules that name a port: `host:port`, `*.domain:port`, `[v6addr]:port` (#9).

A rule without a port matches every port, a rule with a port only that port, deny wins,
and an act whose port is unknown is never allowed by a rule with a port and always
refused by a deny rule with one.
"""

from __future__ import annotations

import pytest

from harness_core.errors import PolicyError
from harness_core.policy import (
    TIER_LAYER,
    Act,
    ActKind,
    ApprovalMode,
    Effect,
    Policy,
    Rule,
    Tier,
    Verdict,
)
from harness_core.policy._patterns import compile_host, net_port, normalise_host, split_host_port

A, D = Verdict.ALLOW, Verdict.DENY


def port_policy() -> Policy:
    """Built in each test (not at import), so every test runs the policy's own build."""
    return Policy.from_lists(
        tier=Tier.WORKSPACE_WRITE,
        approval=ApprovalMode.DENY,
        allow_net=[
            "pypi.org:443",
            "*.pythonhosted.org:443",
            "github.com",
            "127.0.0.1:8080",
            "[::1]:9000",
            "fe80::1",
            "mirror.example:*",
            "Upper.Example.:8443",
        ],
        deny_net=["github.com:22", "*:25"],
    )


@pytest.mark.parametrize(
    ("act", "verdict", "rule", "layer"),
    [
        # A rule with a port admits that port only.
        (Act.net("pypi.org", 443), A, "pypi.org:443", "project"),
        (Act.net("pypi.org:443"), A, "pypi.org:443", "project"),
        (Act.net("PyPI.org.:443"), A, "pypi.org:443", "project"),
        (Act.net("pypi.org", 80), D, None, TIER_LAYER),
        (Act.net("pypi.org", 4430), D, None, TIER_LAYER),
        (Act.net("pypi.org", 44), D, None, TIER_LAYER),
        # ... and never an act whose port is unknown (which `*:25` refuses: it might be 25).
        (Act.net("pypi.org"), D, "*:25", "project"),
        (Act.net("files.pythonhosted.org", 443), A, "*.pythonhosted.org:443", "project"),
        (Act.net("files.pythonhosted.org", 80), D, None, TIER_LAYER),
        (Act.net("pythonhosted.org", 443), D, None, TIER_LAYER),
        # A rule without a port admits every port.
        (Act.net("github.com", 443), A, "github.com", "project"),
        (Act.net("github.com", 8443), A, "github.com", "project"),
        (Act.net("github.com"), D, "github.com:22", "project"),  # could be 22: deny wins
        # A deny with a port refuses that port, even against a host-wide allow.
        (Act.net("github.com", 22), D, "github.com:22", "project"),
        (Act.net("github.com:22"), D, "github.com:22", "project"),
        (Act.net("anything.example", 25), D, "*:25", "project"),
        (Act.net("pypi.org", 25), D, "*:25", "project"),
        (Act.net("127.0.0.1", 8080), A, "127.0.0.1:8080", "project"),
        (Act.net("127.0.0.1", 8081), D, None, TIER_LAYER),
        (Act.net("127.0.0.2", 8080), D, None, TIER_LAYER),
        # IPv6: brackets carry a port, a bare address takes none.
        (Act.net("::1", 9000), A, "[::1]:9000", "project"),
        (Act.net("[::1]:9000"), A, "[::1]:9000", "project"),
        (Act.net("[::1]:9001"), D, None, TIER_LAYER),
        (Act.net("[fe80::1]:1234"), A, "fe80::1", "project"),
        (Act.net("fe80::1", 5), A, "fe80::1", "project"),
        # `host:*` is every port; pattern case and a trailing dot do not matter.
        (Act.net("mirror.example", 1), A, "mirror.example:*", "project"),
        (Act.net("mirror.example", 65535), A, "mirror.example:*", "project"),
        (Act.net("upper.example", 8443), A, "Upper.Example.:8443", "project"),
        (Act.net("UPPER.EXAMPLE", 8444), D, None, TIER_LAYER),
    ],
)
def test_ports_decide(act: Act, verdict: Verdict, rule: str | None, layer: str) -> None:
    decision = port_policy().check(act)
    assert (decision.verdict, decision.rule, decision.layer) == (verdict, rule, layer)
    if rule is not None:
        assert repr(rule) in decision.reason


def test_a_deny_with_a_port_leaves_other_ports_to_the_allows() -> None:
    policy = Policy.from_lists(tier="full", deny_net=["db.internal:5432"])
    assert policy.check(Act.net("db.internal", 5432)).verdict is D
    assert policy.check(Act.net("db.internal", 5433)).verdict is A
    assert policy.check(Act.net("db.internal", 5433)).layer == TIER_LAYER


def test_first_matching_rule_names_the_decision() -> None:
    policy = Policy(tier=Tier.READ_ONLY, approval=ApprovalMode.DENY, rules=(
        Rule(Effect.ALLOW, ActKind.NET, "a.example:80", "user"),
        Rule(Effect.ALLOW, ActKind.NET, "*.example", "project"),
        Rule(Effect.ALLOW, ActKind.NET, "a.example", "local"),
    ))
    assert policy.check(Act.net("a.example", 80)).layer == "user"
    assert policy.check(Act.net("a.example", 81)).layer == "project"


def test_contained_policy_keeps_the_parents_port_denies() -> None:
    parent = Policy.from_lists(tier="full", deny_net=["*:22"], layer="system")
    child = parent.contain(Policy.from_lists(tier="full", allow_net=["host.example"]))
    decision = child.check(Act.net("host.example", 22))
    assert (decision.verdict, decision.rule, decision.layer) == (D, "*:22", "system")
    assert child.check(Act.net("host.example", 443)).verdict is A


def test_narrowed_agent_deny_names_a_port() -> None:
    policy = Policy.from_lists(tier="full").narrowed(deny_net=["*:443"], layer="agent:r")
    assert policy.check(Act.net("x.example", 443)).layer == "agent:r"
    assert policy.check(Act.net("x.example", 80)).verdict is A


def test_port_rules_survive_json() -> None:
    again = Policy.from_json(port_policy().to_json())
    for act in (Act.net("pypi.org", 443), Act.net("pypi.org", 80), Act.net("github.com", 22)):
        assert again.check(act) == port_policy().check(act)


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("pypi.org:0", "port '0'"),
        ("pypi.org:65536", "port '65536'"),
        ("pypi.org:99999999", "port '99999999'"),
        ("pypi.org:https", "port 'https'"),
        ("pypi.org:-1", "port '-1'"),
        ("pypi.org:", "port ''"),
        ("pypi.org:4*", "port '4*'"),
        ("pypi.org: 443", "port ' 443'"),
        ("pypi.org:\u0663", "port '\u0663'"),  # an Arabic-Indic three is not a port
        ("[::1]:0", "port '0'"),
        ("[::1]:x", "port 'x'"),
        ("[::1]8080", "only ':port' may follow ']'"),
        (":443", "names no host"),
        (".:443", "names no host"),
        ("[]:443", "unclosed '['"),
        ("host\\:443", "lone backslash"),
    ],
)
def test_a_bad_port_is_a_policy_error(pattern: str, says: str) -> None:
    with pytest.raises(PolicyError) as caught:
        Rule(Effect.ALLOW, ActKind.NET, pattern, "project")
    assert says in caught.value.message
    assert repr(pattern) in caught.value.message
    if "port" in says or "host" in says:
        assert caught.value.hint


@pytest.mark.parametrize("port", [1, 65535])
def test_the_edge_ports_are_accepted(port: int) -> None:
    policy = Policy.from_lists(tier="read-only", approval="deny", allow_net=[f"h.example:{port}"])
    assert policy.check(Act.net("h.example", port)).verdict is A
    assert net_port(f"h.example:{port}") == port


@pytest.mark.parametrize(
    ("pattern", "host_matches", "port"),
    [
        ("pypi.org", "pypi.org", None),
        ("pypi.org:443", "pypi.org", 443),
        ("PYPI.ORG.:0443", "pypi.org", 443),
        ("*.example:*", "a.example", None),
        ("[::1]", "::1", None),
        ("[::1]:8080", "::1", 8080),
        ("::1", "::1", None),
        ("[ab]c.example:80", "bc.example", 80),  # brackets without ':' are a glob class
    ],
)
def test_pattern_parts(pattern: str, host_matches: str, port: int | None) -> None:
    assert compile_host(pattern).fullmatch(host_matches) is not None
    assert net_port(pattern) == port


@pytest.mark.parametrize(
    ("target", "parts"),
    [
        ("PyPI.org:443", ("pypi.org", 443)),
        ("pypi.org", ("pypi.org", None)),
        ("pypi.org.", ("pypi.org", None)),
        ("[::1]:8080", ("::1", 8080)),
        ("[::1]", ("::1", None)),
        ("::1", ("::1", None)),
        ("host:abc", ("host", None)),
        ("host:0", ("host", None)),
        ("host:70000", ("host", None)),
        ("[::1]junk", ("[::1]junk", None)),
    ],
)
def test_split_host_port(target: str, parts: tuple[str, int | None]) -> None:
    assert split_host_port(target) == parts
    assert normalise_host(target) == parts[0]


def test_act_net_builds_host_port_targets() -> None:
    assert Act.net("pypi.org", 443).target == "pypi.org:443"
    assert Act.net("::1", 8080).target == "[::1]:8080"
    assert Act.net("[::1]", 8080).target == "[::1]:8080"
    assert Act.net(" pypi.org ", 443).target == "pypi.org:443"
    assert Act.net("pypi.org").target == "pypi.org"
    assert Act.net("pypi.org", 1).describe() == "net pypi.org:1"


@pytest.mark.parametrize(
    ("host", "port"),
    [("pypi.org", 0), ("pypi.org", 65536), ("pypi.org", -1), ("pypi.org", True),
     ("pypi.org:0", None), ("pypi.org:65536", None), ("pypi.org:https", None), ("", 443),
     (" ", None)],
)
def test_act_net_refuses_a_bad_port_or_no_host(host: str, port: int | None) -> None:
    with pytest.raises(PolicyError):
        Act.net(host, port)


def test_an_act_built_by_hand_with_a_bad_port_is_treated_as_any_port() -> None:
    act = Act(ActKind.NET, "github.com:0")
    assert port_policy().check(act).rule == "github.com:22"
    assert Policy.from_lists(tier="read-only", approval="deny",
                             allow_net=["github.com:443"]).check(act).verdict is D
