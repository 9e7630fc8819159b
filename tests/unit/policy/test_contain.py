"""`Policy.contain` and `Policy.narrowed`: a child can only ever be refused more."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness_core.policy import (
    BUILTIN_LAYER,
    Act,
    ActKind,
    ApprovalMode,
    Effect,
    Policy,
    Rule,
    Tier,
    Verdict,
)

A, D, Q = Verdict.ALLOW, Verdict.DENY, Verdict.ASK
_RANK = {D: 0, Q: 1, A: 2}


def test_child_cannot_gain_a_write_the_parent_denies() -> None:
    parent = Policy.from_lists(tier="workspace-write", deny_write=["secrets/**"])
    child = Policy.from_lists(tier="full", allow_write=["**"], layer="agent:x")
    decision = parent.contain(child).check(Act.write("secrets/key"))
    assert (decision.verdict, decision.rule, decision.layer) == (D, "secrets/**", "project")


def test_allows_intersect() -> None:
    parent = Policy.from_lists(tier="read-only", allow_write=["src/**"], approval="deny")
    child = Policy.from_lists(tier="read-only", allow_write=["**/*.py"], approval="deny")
    contained = parent.contain(child)
    assert contained.check(Act.write("src/a.py")).verdict is A
    assert contained.check(Act.write("src/a.md")).verdict is D  # only the parent allows it
    assert contained.check(Act.write("lib/a.py")).verdict is D  # only the child allows it


def test_child_silent_about_a_parent_allow_does_not_inherit_it() -> None:
    parent = Policy.from_lists(tier="read-only", allow_exec=["pytest*"])
    contained = parent.contain(Policy(tier=Tier.READ_ONLY))
    assert contained.check(Act.exec(["pytest"])).verdict is Q


def test_stricter_tier_and_approval_win() -> None:
    loose = Policy(tier=Tier.FULL, approval=ApprovalMode.ASK)
    strict = Policy(tier=Tier.READ_ONLY, approval=ApprovalMode.DENY)
    for contained in (loose.contain(strict), strict.contain(loose)):
        assert (contained.tier, contained.approval) == (Tier.READ_ONLY, ApprovalMode.DENY)
        assert contained.check(Act.exec(["ls"])).verdict is D
        assert contained.check(Act.read("a")).verdict is A


def test_protected_paths_of_either_side_stay_protected() -> None:
    parent = Policy(tier=Tier.FULL, protected=("store.db",))
    child = Policy(tier=Tier.FULL, protected=("other.db",))
    contained = parent.contain(child)
    assert contained.protected == ("other.db", "store.db")
    for path in ("store.db", "other.db", "io.toml"):
        assert contained.check(Act.write(path)).layer == BUILTIN_LAYER


def test_containment_holds_at_any_depth() -> None:
    root = Policy.from_lists(tier="full", deny_net=["evil.example"])
    wide = Policy.from_lists(tier="full", allow_net=["*"], layer="agent:a")
    nested = root.contain(wide).contain(wide).contain(wide)
    assert nested.check(Act.net("evil.example")).verdict is D
    assert nested.check(Act.net("ok.example")).verdict is A


def test_narrowed_adds_denies_attributed_to_the_agent_layer() -> None:
    parent = Policy.from_lists(tier="full", allow_write=["src/**"])
    reviewer = parent.narrowed(deny_write=["**"], deny_net=["*"], layer="agent:reviewer")
    write = reviewer.check(Act.write("src/a.py"))
    assert (write.verdict, write.rule, write.layer) == (D, "**", "agent:reviewer")
    assert reviewer.check(Act.net("pypi.org")).layer == "agent:reviewer"
    assert reviewer.check(Act.read("src/a.py")).verdict is A
    assert parent.check(Act.write("src/a.py")).verdict is A  # the parent is unchanged


def test_narrowed_silent_definition_keeps_the_parent_denies() -> None:
    parent = Policy.from_lists(tier="full", deny_write=["secrets/**"])
    child = parent.narrowed(layer="agent:quiet")
    assert child.check(Act.write("secrets/x")).verdict is D


# -- property: containment is never more permissive than either side ------------------

_PATH_PATTERNS = [
    "**",
    "src/**",
    "**/*.py",
    "src/*.py",
    "io.toml",
    "docs/a.md",
    "*.md",
    "secrets/**",
]
_PATHS = [
    "src/a.py",
    "src/b/c.py",
    "io.toml",
    "docs/a.md",
    "README.md",
    "secrets/k",
    ".git/config",
    "../x",
    "",
]
_EXEC_PATTERNS = ["pytest*", "git status*", "git push*", "git*", "rm", "*"]
_ARGVS = [
    ["pytest", "-q"],
    ["git", "push"],
    ["/usr/bin/git", "status"],
    ["rm", "-rf", "x"],
    ["./pytest"],
]
_HOST_PATTERNS = ["pypi.org", "*.pythonhosted.org", "*"]
_TOOL_PATTERNS = ["gh/*", "*/delete_*", "gh/read", "*/*"]
_TOOLS = [("gh", "read"), ("gh", "delete_repo"), ("time", "now")]
_HOSTS = ["pypi.org", "files.pythonhosted.org:443", "evil.example"]


@st.composite
def _rules(draw: st.DrawFn) -> Rule:
    kind = draw(st.sampled_from(list(ActKind)))
    if kind is ActKind.EXEC:
        pattern = draw(st.sampled_from(_EXEC_PATTERNS))
    elif kind is ActKind.NET:
        pattern = draw(st.sampled_from(_HOST_PATTERNS))
    elif kind is ActKind.MCP:
        pattern = draw(st.sampled_from(_TOOL_PATTERNS))
    else:
        pattern = draw(st.sampled_from(_PATH_PATTERNS))
    return Rule(
        draw(st.sampled_from(list(Effect))), kind, pattern, draw(st.sampled_from(["p", "u"]))
    )


_POLICIES = st.builds(
    Policy,
    tier=st.sampled_from(list(Tier)),
    rules=st.lists(_rules(), max_size=6).map(tuple),
    approval=st.sampled_from(list(ApprovalMode)),
    protected=st.lists(st.sampled_from(["docs/a.md", "src/*.py"]), max_size=2, unique=True).map(
        tuple
    ),
)
_ACTS = st.one_of(
    st.sampled_from(_PATHS).map(Act.read),
    st.sampled_from(_PATHS).map(Act.write),
    st.sampled_from(_ARGVS).map(Act.exec),
    st.sampled_from(_HOSTS).map(Act.net),
    st.sampled_from(_TOOLS).map(lambda pair: Act.mcp(*pair)),
)


@settings(max_examples=400, deadline=None)
@given(parent=_POLICIES, child=_POLICIES, grandchild=_POLICIES, act=_ACTS)
def test_contain_is_never_more_permissive_than_either_side(
    parent: Policy, child: Policy, grandchild: Policy, act: Act
) -> None:
    contained = parent.contain(child)
    rank = _RANK[contained.check(act).verdict]
    assert rank <= _RANK[parent.check(act).verdict]
    assert rank <= _RANK[child.check(act).verdict]
    deeper = contained.contain(grandchild)
    assert _RANK[deeper.check(act).verdict] <= min(rank, _RANK[grandchild.check(act).verdict])


@settings(max_examples=200, deadline=None)
@given(policy=_POLICIES, act=_ACTS, extra=st.lists(st.sampled_from(_PATH_PATTERNS), max_size=3))
def test_narrowed_is_never_more_permissive(policy: Policy, act: Act, extra: list[str]) -> None:
    narrowed = policy.narrowed(deny_write=extra, deny_net=["evil.example"], layer="agent:t")
    assert _RANK[narrowed.check(act).verdict] <= _RANK[policy.check(act).verdict]


@settings(max_examples=200, deadline=None)
@given(parent=_POLICIES, child=_POLICIES)
def test_json_round_trip_of_contained_policies(parent: Policy, child: Policy) -> None:
    contained = parent.contain(child)
    assert Policy.from_json(contained.to_json()) == contained
