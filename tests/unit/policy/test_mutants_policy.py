"""Pins written to kill the mutants mutmut left alive in policy/ (bench/mutation.py).

Each policy here is built inside its test (a module-level policy would be built, and
its decisions remembered, before a mutant is switched on). Messages are compared whole:
they are what the model and the operator read.
"""

from __future__ import annotations

import warnings

import pytest

from harness_core.errors import PolicyError
from harness_core.policy import GATE_LAYER, Act, ActKind, Effect, Policy, Rule, Tier, Verdict
from harness_core.policy._patterns import bad_port, compile_command, compile_path, split_host_port

D, A = Verdict.DENY, Verdict.ALLOW


# -- acts ---------------------------------------------------------------------------


def test_act_messages() -> None:
    with pytest.raises(PolicyError) as caught:
        Act.exec([""])
    assert caught.value.message == "an exec act needs a program name"
    with pytest.raises(PolicyError) as caught:
        Act.net("  ")
    assert caught.value.message == "a net act needs a host"
    with pytest.raises(PolicyError) as caught:
        Act.net("pypi.org", 0)
    assert caught.value.message == "a net act's port must be a number from 1 to 65535, not 0"
    with pytest.raises(PolicyError) as caught:
        Act.net("pypi.org:70000")
    assert caught.value.message == (
        "a net act's port must be a number from 1 to 65535: 'pypi.org:70000'")


# -- net targets --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "parts"),
    [
        ("[::1]x.", ("[::1]x", None)),  # not a bracketed address: the whole, no trailing dot
        ("[ab]:80", ("ab", 80)),  # a target's brackets always hold the host
        ("[local.]:80", ("local", 80)),
    ],
)
def test_split_host_port_edges(target: str, parts: tuple[str, int | None]) -> None:
    assert split_host_port(target) == parts


@pytest.mark.parametrize(
    ("target", "bad"),
    [("h.example:ABC", "abc"), ("h.example:0", "0"), ("h.example:443", None),
     ("h.example", None), ("[ab]x:0", None), ("[ab]:0", "0"), ("::1", None)],
)
def test_bad_port_returns_the_text(target: str, bad: str | None) -> None:
    assert bad_port(target) == bad


# -- commands -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["git.exe", "push"],
        ["C:\\Git\\git.exe", "push"],
        ["/usr/bin/git", "push"],
        ["tools\\git", "push"],
    ],
)
def test_a_deny_catches_the_program_however_it_is_spelled(argv: list[str]) -> None:
    policy = Policy.from_lists(tier="full", deny_exec=["git push*"])
    decision = policy.check(Act.exec(argv))
    assert (decision.verdict, decision.rule) == (D, "git push*")


def test_an_upper_case_exe_is_stripped_too() -> None:
    policy = Policy.from_lists(tier="full", deny_exec=["GIT push*"])
    for argv in (["GIT.EXE", "push"], ["C:\\Git\\GIT.EXE", "push", "origin"]):
        assert policy.check(Act.exec(argv)).verdict is D
    # patterns compare case-sensitively: a lower-case deny is not an upper-case program
    assert Policy.from_lists(tier="full", deny_exec=["git push*"]).check(
        Act.exec(["GIT.EXE", "push"])).verdict is A


def test_a_deny_of_the_program_alone_catches_an_exe() -> None:
    policy = Policy.from_lists(tier="full", deny_exec=["rm"])
    assert policy.check(Act.exec(["C:\\bin\\rm.exe", "-rf", "x"])).verdict is D
    assert policy.check(Act.exec(["rm.exe"])).verdict is D
    assert policy.check(Act.exec(["rmdir"])).verdict is A


def test_an_allow_never_widens_to_the_basename() -> None:
    policy = Policy.from_lists(tier="read-only", approval="deny", allow_exec=["git status*"])
    assert policy.check(Act.exec(["git", "status"])).verdict is A
    assert policy.check(Act.exec(["git.exe", "status"])).verdict is D
    assert policy.check(Act.exec(["C:\\Git\\git.exe", "status"])).verdict is D


# -- protected paths ----------------------------------------------------------------


def test_protected_refusal_reason_is_whole() -> None:
    decision = Policy(tier=Tier.FULL).check(Act.write("io.toml"))
    assert decision.reason == (
        "io.toml is protected (scope files, git hooks and config, the store); only an "
        "allow_write rule naming this exact path permits it")


# -- stored policies ----------------------------------------------------------------


def test_stored_policy_messages_are_whole() -> None:
    with pytest.raises(PolicyError) as caught:
        Policy.from_json([])  # type: ignore[arg-type]
    assert caught.value.message == "stored policy: expected a JSON object"
    with pytest.raises(PolicyError) as caught:
        Policy.from_json({"protected": ["a", 1]})
    assert caught.value.message == "stored policy: 'protected' must hold strings"


# -- glob classes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("f[X]", "fX", True),  # a class opening with any letter is not negated
        ("f[X]", "fa", False),
        ("f[\\d]", "fd", True),  # a backslash in a class is a literal, not a regex escape
        ("f[\\d]", "f\\", True),
        ("f[\\d]", "f1", False),
        ("f[a&&b]", "f&", True),  # doubled set operators are literal members
        ("f[a&&b]", "fc", False),
        ("f[a~~b]", "f~", True),
        ("f[a||b]", "f|", True),
        ("f[+--]", "f-", True),
        ("f[+--]", "f,", True),
        ("f[a[]", "f[", True),
        ("f[a^]", "f^", True),
        ("f[a^]", "fb", False),
    ],
)
def test_class_members_are_literal(pattern: str, path: str, matches: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Python warns about future set syntax
        assert bool(compile_path(pattern).fullmatch(path)) is matches


def test_kinds_are_independent() -> None:
    policy = Policy.from_lists(tier="read-only", approval="deny", allow_net=["*"])
    assert policy.check(Act.net("x.example", 1)).verdict is A
    assert policy.check(Act(ActKind.EXEC, "x.example")).verdict is D


# -- the memo -----------------------------------------------------------------------


def test_the_memo_keeps_acts_up_to_its_text_limit_and_clears_when_full() -> None:
    from harness_core.policy._policy import _MEMO_SIZE, _MEMO_TEXT

    policy = Policy.from_lists(tier="full")
    act = Act.read("x" * _MEMO_TEXT)  # exactly _MEMO_TEXT characters
    policy.check(act)
    assert list(policy._memo) == [(act.kind, act.target, act.argv)]
    for n in range(_MEMO_SIZE - 1):
        policy.check(Act.read(f"f{n}"))
    assert len(policy._memo) == _MEMO_SIZE
    policy.check(Act.read("one-more"))
    assert len(policy._memo) == 1


def test_a_remembered_decision_is_the_same_object() -> None:
    policy = Policy(tier=Tier.FULL)
    first = policy.check(Act.write("io.toml"))  # a protected refusal is built per check
    assert policy.check(Act.write("io.toml")) is first


# -- malformed net targets and patterns ---------------------------------------------


@pytest.mark.parametrize(
    ("target", "parts"),
    [
        ("[a:80", ("[a", 80)),  # no closing bracket: an ordinary host:port
        ("[]:80", ("", 80)),
        ("[::1]]:80", ("[::1]]:80", None)),  # the first "]" closes; junk after it
    ],
)
def test_split_host_port_reads_malformed_brackets(
    target: str, parts: tuple[str, int | None]
) -> None:
    assert split_host_port(target) == parts


def test_a_pattern_with_junk_after_the_first_bracket_is_refused() -> None:
    with pytest.raises(PolicyError, match="only ':port' may follow"):
        Policy.from_lists(tier="full", allow_net=["[::1]]:80"])


# -- command patterns ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "line", "matches"),
    [
        ("echo \\*", "echo *", True),
        ("echo \\*", "echo x", False),
        ("a\\*b", "a*b", True),
        ("a\\*b", "axb", False),
        ("a\\?b*", "a?bc", True),
        ("a\\?b*", "axbc", False),
        ("\\[x]", "[x]", True),
    ],
)
def test_a_backslash_escapes_one_character_in_a_command(
    pattern: str, line: str, matches: bool
) -> None:
    assert bool(compile_command(pattern).fullmatch(line)) is matches


def test_a_trailing_backslash_is_refused_in_a_command() -> None:
    with pytest.raises(PolicyError) as caught:
        compile_command("echo \\")
    assert caught.value.message == "pattern 'echo \\\\' ends with a lone backslash"


# -- protected paths and reasons ----------------------------------------------------


@pytest.mark.parametrize("bad", ["", "/abs/io.db", "../io.db", 3])
def test_a_protected_path_outside_the_root_is_refused_with_a_hint(bad: object) -> None:
    with pytest.raises(PolicyError) as caught:
        Policy(tier=Tier.FULL, protected=(bad,))  # type: ignore[arg-type]
    assert caught.value.message == (
        f"protected path {bad!r} must name a file inside the workspace root")
    assert caught.value.hint == "give it relative to the root, e.g. 'state/io.db'"


def test_rule_reasons_are_whole() -> None:
    policy = Policy(tier=Tier.FULL, rules=(
        Rule(Effect.DENY, ActKind.EXEC, "rm*", "project"),
        Rule(Effect.ALLOW, ActKind.READ, "src/**", "user"),
        Rule(Effect.DENY, ActKind.WRITE, "tests/**", GATE_LAYER),
        Rule(Effect.ALLOW, ActKind.WRITE, "docs/**", GATE_LAYER),
    ))
    assert policy.check(Act.exec(["rm", "x"])).reason == "denied by deny_exec 'rm*' (project)"
    assert policy.check(Act.read("src/a")).reason == "allowed by allow_read 'src/**' (user)"
    assert policy.check(Act.write("tests/t.py")).reason.startswith(
        "an input of a verification gate ('tests/**')")
    assert policy.check(Act.write("docs/a")).reason == "allowed by allow_write 'docs/**' (gate)"


# -- containment --------------------------------------------------------------------


def test_a_contained_policy_names_its_own_rule_when_both_refuse() -> None:
    parent = Policy(tier=Tier.FULL, rules=(Rule(Effect.DENY, ActKind.EXEC, "rm -rf*", "system"),))
    child = Policy(tier=Tier.FULL, rules=(Rule(Effect.DENY, ActKind.EXEC, "rm*", "project"),))
    contained = parent.contain(child)
    decision = contained.check(Act.exec(["rm", "-rf", "x"]))
    assert (decision.rule, decision.layer) == ("rm*", "project")
    allowed = contained.check(Act.exec(["ls"]))
    assert (allowed.verdict, allowed.layer) == (A, "tier")


def test_a_contained_policy_carries_the_parents_denies_as_rules() -> None:
    deny = Rule(Effect.DENY, ActKind.EXEC, "rm -rf*", "system")
    shared = Rule(Effect.DENY, ActKind.NET, "*", "system")
    parent = Policy(tier=Tier.FULL, rules=(deny, shared,
                                          Rule(Effect.ALLOW, ActKind.EXEC, "ls", "system")))
    child = Policy(tier=Tier.FULL, rules=(shared,))
    contained = parent.contain(child)
    assert contained.rules == (shared, deny)


# -- building a policy ------------------------------------------------------------------


def test_path_pattern_errors_name_the_whole_pattern() -> None:
    with pytest.raises(PolicyError) as caught:
        compile_path("src/a\\")
    assert caught.value.message == "pattern 'src/a\\\\' ends with a lone backslash"


def test_an_allow_of_another_kind_never_opens_a_protected_path() -> None:
    policy = Policy.from_lists(tier="full", allow_read=["io.toml"], allow_exec=["io.toml"],
                               allow_net=["io.toml"])
    decision = policy.check(Act.write("io.toml"))
    assert (decision.verdict, decision.layer) == (D, "builtin")


def test_extra_protected_paths_match_case_insensitively() -> None:
    policy = Policy(tier=Tier.FULL, protected=("state/io.db",))
    for spelling in ("state/io.db", "STATE/io.db", "State/IO.DB"):
        decision = policy.check(Act.write(spelling))
        assert (decision.verdict, decision.rule) == (D, "state/io.db"), spelling


def test_the_gate_reason_is_whole() -> None:
    policy = Policy(tier=Tier.FULL, rules=(Rule(Effect.DENY, ActKind.WRITE, "t/**", GATE_LAYER),))
    assert policy.check(Act.write("t/a.py")).reason == (
        "an input of a verification gate ('t/**'): the agent may not change what judges its"
        " work (the operator can set editable = true on the gate)")


def test_lists_given_to_a_policy_are_kept_as_tuples() -> None:
    rule = Rule(Effect.DENY, ActKind.EXEC, "rm*", "project")
    outer = Policy(tier=Tier.FULL)
    policy = Policy(tier=Tier.FULL, rules=[rule], protected=["db"],  # type: ignore[arg-type]
                    within=[outer])  # type: ignore[arg-type]
    assert policy.rules == (rule,)
    assert policy.protected == ("db",)
    assert policy.within == (outer,)


def test_patterns_match_across_newlines() -> None:
    policy = Policy.from_lists(tier="full", deny_read=["secret/**"], deny_exec=["rm*"],
                               deny_write=["*"])
    assert policy.check(Act.read("secret/a\nb")).verdict is D
    assert policy.check(Act.exec(["rm", "-rf\nx"])).verdict is D
    assert policy.check(Act.write("a\nb")).verdict is D


def test_net_reasons_are_whole() -> None:
    policy = Policy.from_lists(tier="read-only", approval="deny", allow_net=["a.example:443"],
                               deny_net=["b.example"])
    assert policy.check(Act.net("a.example", 443)).reason == (
        "allowed by allow_net 'a.example:443' (project)")
    assert policy.check(Act.net("b.example", 443)).reason == (
        "denied by deny_net 'b.example' (project)")


def test_rule_construction_messages_are_whole() -> None:
    with pytest.raises(PolicyError) as caught:
        Rule(Effect.ALLOW, ActKind.NET, 3, "project")  # type: ignore[arg-type]
    assert caught.value.message == "a net pattern must be a string, not 3"
    with pytest.raises(PolicyError) as caught:
        Rule(Effect.ALLOW, ActKind.NET, "x.example", "")
    assert caught.value.message == "rule 'x.example' has no layer"


# -- path patterns ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/apy", False),
        ("a**b", "axyb", True),  # a '**' inside a segment is one '*'
        ("a**b", "ax/b", False),
        ("a\\*b", "a*b", True),
        ("a\\*b", "axb", False),
        ("ab\\*c", "ab*c", True),
        ("a\\*", "a*", True),  # an escape as the last two characters of a segment
        ("a\\*", "ab", False),
        ("src//a.py", "src/a.py", True),
        ("a/./b", "a/b", True),
        ("./a/./b/.", "a/b", True),
        ("my dir/**", "my dir/x", True),
        ("my dir/**", "my/dir/x", False),
        ("a/**/**/b", "a/x/y/b", True),
        ("a/**/**/b", "a/b", True),
    ],
)
def test_path_pattern_spellings(pattern: str, path: str, matches: bool) -> None:
    assert bool(compile_path(pattern).fullmatch(path)) is matches


@pytest.mark.parametrize(
    ("pattern", "normal"),
    [("DirX/", "DirX/**"), ("build//", "build/**"), ("a/**/**", "a/**"), ("./x/./y", "x/y")],
)
def test_normalised_path_patterns(pattern: str, normal: str) -> None:
    from harness_core.policy._patterns import normalise_path_pattern

    assert normalise_path_pattern(pattern) == normal


def test_an_absolute_path_pattern_is_refused_with_a_hint() -> None:
    with pytest.raises(PolicyError) as caught:
        compile_path("/etc/**")
    assert caught.value.message == "path pattern '/etc/**' is absolute"
    assert caught.value.hint == (
        "path patterns are relative to the workspace root, e.g. 'build/**'")


def test_empty_and_void_patterns_are_refused_with_hints() -> None:
    with pytest.raises(PolicyError) as caught:
        compile_command("  ")
    assert caught.value.message == "a policy rule has an empty pattern"
    assert caught.value.hint == (
        "an empty pattern would match nothing; remove the rule or name a target")
    with pytest.raises(PolicyError) as caught:
        compile_path("./.")
    assert caught.value.message == "a path pattern names nothing"
    assert caught.value.hint == "'**' means every path"


def test_an_invalid_glob_names_the_pattern() -> None:
    with pytest.raises(PolicyError) as caught:
        compile_path("f[a--]")
    assert caught.value.message.startswith("pattern 'f[a--]' is not a valid glob: ")


def test_compiled_patterns_keep_their_flags() -> None:
    from harness_core.policy._patterns import compile_host

    assert compile_command("rm*").fullmatch("rm -rf\nx") is not None
    assert compile_path("**").fullmatch("a\nb/c") is not None
    assert compile_host("PyPI.org").fullmatch("PYPI.ORG") is not None
