"""The lexer and parser: every refused construct by name and column; what is admitted."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_core.errors import ShellRefused
from harness_core.shell import (
    CONSTRUCTS,
    KEYWORDS,
    Blocked,
    Connector,
    Plan,
    RedirectKind,
    RunPlan,
    parse,
    prepare,
)
from harness_core.workspace import Workspace
from tests.unit.shell.support import RecordingGate

# (line, construct named in the error, 1-based column)
REFUSED: list[tuple[str, str, int]] = [
    ("echo $(ls)", "command substitution", 6),
    ('echo "$(ls)"', "command substitution", 7),
    ("echo `ls`", "backticks", 6),
    ('echo "`ls`"', "backticks", 7),
    ("echo $HOME", "parameter expansion", 6),
    ('echo "x$HOME"', "parameter expansion", 8),
    ("echo $1", "parameter expansion", 6),
    ("echo $?", "parameter expansion", 6),
    ("echo ${HOME}", "braced parameter expansion", 6),
    ("echo $((1 + 2))", "arithmetic expansion", 6),
    ("echo $[1 + 2]", "arithmetic expansion", 6),
    ("diff <(ls) x", "process substitution", 6),
    ("ls >(cat)", "process substitution", 4),
    ("(echo hi)", "subshell", 1),
    ("echo a; (ls)", "subshell", 9),
    ("{ echo hi; }", "brace group", 1),
    ("echo {a,b}", "brace group", 6),
    ("cat <<EOF", "here-document", 5),
    ("cat <<<word", "here-string", 5),
    ("sleep 1 &", "background", 9),
    ("sleep 1 & echo", "background", 9),
    ("ls *.py", "glob", 4),
    ("ls a?", "glob", 5),
    ("ls [ab]", "glob", 4),
    ("ls a]", "glob", 5),
    ("ls 2>&1 | wc -l", "2>&1 into a pipe", 4),
    ("echo a\x00b", "NUL byte", 7),
    ("echo $'a\\n'", "ANSI-C quoting", 6),
    ('echo $"hello"', "locale quoting", 6),
    ("ls ~", "tilde expansion", 4),
    ("cat ~/notes", "tilde expansion", 5),
    ("X=1 ls", "assignment", 1),
    ("ls; A+=x b", "assignment", 5),
    ("echo a\nb", "control character", 7),
    ("echo a\rb", "control character", 7),
    ("echo '\x1b[31m'", "control character", 7),
    ("echo a\u200bb", "format character", 7),
    ("echo a\u00a0b", "unicode space", 7),
    ("ls |& cat", "pipe with stderr", 4),
    ("ls &> f", "redirect of both streams", 4),
    ("ls >| f", "clobber redirect", 4),
    ("cat <> f", "read-write redirect", 5),
    ("echo x >&2", "descriptor duplication", 8),
    ("echo x 1>&2", "descriptor duplication", 8),
    ("echo x 3> f", "descriptor redirect", 8),
    ("cat 0< f", "descriptor redirect", 5),
    ("# comment", "comment", 1),
    ("echo hi # note", "comment", 9),
    ("! true", "history expansion", 1),
    ("echo ;; ls", "case terminator", 6),
    ("echo $", "dollar sign", 6),
    ("echo 'abc", "unterminated quote", 6),
    ('echo "abc', "unterminated quote", 6),
    ("echo abc\\", "trailing backslash", 9),
    ("| ls", "empty command", 1),
    ("ls &&", "empty command", 4),
    ("ls ; ; ls", "empty command", 6),
    ("'' x", "empty command", 1),
    ("ls >", "missing redirect target", 4),
    ("ls > | cat", "missing redirect target", 4),
    ("export A=1", "shell builtin", 1),
    ("source env.sh", "shell builtin", 1),
    ("eval ls", "shell builtin", 1),
    ("cd", "cd", 1),
    ("cd a b", "cd", 1),
    ("cd -", "cd", 1),
    ("cd a > f", "cd", 6),
    ("cd a | ls", "cd", 1),
]


@pytest.mark.parametrize(("line", "construct", "column"), REFUSED,
                         ids=[f"{c}:{line!r}" for line, c, _ in REFUSED])
def test_refused_construct_is_named_with_its_column(line: str, construct: str, column: int) -> None:
    with pytest.raises(ShellRefused) as info:
        parse(line)
    assert info.value.construct == construct
    assert info.value.column == column
    assert construct in str(info.value)
    assert f"column {column}" in str(info.value)
    assert info.value.reason


@pytest.mark.parametrize("keyword", sorted(KEYWORDS))
def test_each_keyword_in_command_position_is_refused_by_name(keyword: str) -> None:
    with pytest.raises(ShellRefused) as info:
        parse(f"true && {keyword} x")
    assert info.value.construct == f"keyword {keyword}"
    assert info.value.column == 9
    assert f"keyword {keyword}" in str(info.value)


def test_keyword_outside_command_position_or_quoted_is_a_word() -> None:
    plan = parse("echo if then fi; 'if' x")
    stages = plan.stages()
    assert stages[0].argv == ("echo", "if", "then", "fi")
    assert stages[1].argv == ("if", "x")


def test_every_named_construct_has_a_reason() -> None:
    names = {construct for _, construct, _ in REFUSED}
    assert names <= set(CONSTRUCTS)
    assert all(CONSTRUCTS[name] for name in CONSTRUCTS)


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ("echo '$HOME'", ("echo", "$HOME")),
        ('echo "\\$HOME"', ("echo", "$HOME")),
        ('echo "cost: $ 5" "a$"', ("echo", "cost: $ 5", "a$")),
        ("echo '*' \"?\" \\[x\\]", ("echo", "*", "?", "[x]")),
        ("echo a\\ b 'c d'\"e f\"", ("echo", "a b", "c de f")),
        ('echo "a\\nb" "q\\"q"', ("echo", "a\\nb", 'q"q')),
        ("echo '~' x#y a=b", ("echo", "~", "x#y", "a=b")),
        ("'X=1' ls", ("X=1", "ls")),
        ("echo é 中文", ("echo", "é", "中文")),
        ("echo\ta\t\tb", ("echo", "a", "b")),
        ("echo ''", ("echo", "")),
    ],
)
def test_quotes_and_escapes_make_literal_words(line: str, argv: tuple[str, ...]) -> None:
    (stage,) = parse(line).stages()
    assert stage.argv == argv


def test_operators_build_chains_of_pipelines() -> None:
    plan = parse("a | b && c || d; e")
    assert [len(c.pipelines) for c in plan.chains] == [3, 1]
    assert plan.chains[0].connectors == (Connector.AND, Connector.OR)
    assert [s.argv[0] for s in plan.chains[0].pipelines[0].stages] == ["a", "b"]


def test_redirects_are_kept_in_order_with_their_kind() -> None:
    (stage,) = parse("cmd < in >out 2>>err >> app 2>e2 2>&1").stages()
    assert [(r.kind, r.target) for r in stage.redirects] == [
        (RedirectKind.STDIN, "in"),
        (RedirectKind.STDOUT, "out"),
        (RedirectKind.STDERR_APPEND, "err"),
        (RedirectKind.APPEND, "app"),
        (RedirectKind.STDERR, "e2"),
        (RedirectKind.STDERR_TO_STDOUT, ""),
    ]
    assert stage.argv == ("cmd",)


def test_digits_glued_to_a_word_are_not_a_descriptor() -> None:
    (stage,) = parse("echo a2>f").stages()
    assert stage.argv == ("echo", "a2")
    assert stage.redirects[0].kind is RedirectKind.STDOUT


def test_stderr_merge_is_allowed_on_a_piped_stage_once_stdout_is_a_file() -> None:
    plan = parse("ls > f 2>&1 | wc")
    assert plan.stages()[0].redirects[-1].kind is RedirectKind.STDERR_TO_STDOUT


def test_cd_applies_lexically_to_the_rest_of_the_line() -> None:
    plan = parse("cd a && ls; cd ../b/./c || pwd; cd .. ; ls")
    stages = plan.stages()
    assert [(s.argv[0], s.cwd, s.cd) for s in stages] == [
        ("cd", "", "a"),
        ("ls", "a", None),
        ("cd", "a", "b/c"),
        ("pwd", "b/c", None),
        ("cd", "b/c", "b"),
        ("ls", "b", None),
    ]


def test_blank_line_is_an_empty_plan() -> None:
    assert parse("   ").chains == ()
    assert parse("ls ;").stages()[0].argv == ("ls",)


_NASTY = st.text(
    alphabet=st.sampled_from(list(" \t'\"\\$|&;<>(){}[]*?~!#=`12abc-./\n\x00é\u00a0")),
    max_size=40,
)


@settings(max_examples=400, deadline=None, database=None)
@given(st.one_of(st.text(max_size=60), _NASTY))
def test_lexer_returns_a_plan_or_a_named_refusal_for_any_text(line: str) -> None:
    try:
        plan = parse(line)
    except ShellRefused as exc:
        assert exc.construct
        assert 1 <= exc.column <= len(line) + 1
        return
    assert isinstance(plan, Plan)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=st.one_of(st.text(max_size=60), _NASTY))
def test_prepare_returns_a_run_plan_or_blocked_for_any_text(tmp_path: Path, line: str) -> None:
    result = prepare(line, Workspace(tmp_path), RecordingGate())
    assert isinstance(result, (RunPlan, Blocked))


# Compound commands whose inner text would trip the lexer first (a pattern's `)`, a
# function's `()` or `{`, a glob in `select … in *`, `[[`): bash reads each as the
# compound command its keyword opens, so the refusal names that keyword, at its column,
# as the parser names `if`. (line, keyword, column)
COMPOUND: list[tuple[str, str, int]] = [
    ("case x in a) echo a;; esac", "case", 1),
    ("case x in (a) echo a;; esac", "case", 1),
    ("echo a; case x in a|b) echo ab;; esac", "case", 9),
    ("true && case x in *) echo any;; esac", "case", 9),
    ("select x in a b; do echo ok; done", "select", 1),
    ("select x in *; do echo ok; done", "select", 1),
    ("function f { echo hi; }", "function", 1),
    ("function f() { echo hi; }", "function", 1),
    ("[[ -f x ]]", "[[", 1),
    ("true && [[ a == b ]] || echo no", "[[", 9),
    ("coproc (cat)", "coproc", 1),
    ("coproc cat", "coproc", 1),
    ("if [ -f x ]; then echo a; fi", "if", 1),
    ("for f in *.py; do echo a; done", "for", 1),
    ("while (true); do echo a; done", "while", 1),
    ("time (true)", "time", 1),
]


def _bash_accepts(line: str) -> bool:
    """bash's own parser reads `line` as valid syntax (`bash -n`: nothing runs)."""
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run([bash, "-n", "-c", line], capture_output=True).returncode == 0


@pytest.mark.parametrize(("line", "keyword", "column"), COMPOUND,
                         ids=[line for line, _, _ in COMPOUND])
def test_a_compound_command_is_refused_by_its_keyword(line: str, keyword: str,
                                                      column: int) -> None:
    assert _bash_accepts(line)  # the oracle: this is the compound command bash reads
    with pytest.raises(ShellRefused) as info:
        parse(line)
    assert (info.value.construct, info.value.column) == (f"keyword {keyword}", column)
    assert info.value.reason == CONSTRUCTS["keyword"]
    assert f"refused keyword {keyword} at column {column}" in str(info.value)


@pytest.mark.parametrize(("line", "construct", "column"), [
    ("echo case (x)", "subshell", 11),  # `case` is an argument here, not a keyword
    ("echo 'case' x; (ls)", "subshell", 16),
    ("'case' x in a) b", "subshell", 14),  # quoted: a word, as bash reads it
    ("echo [[ x", "glob", 6),
    ("x[[ y", "glob", 2),
    ("(echo hi)", "subshell", 1),
])
def test_a_construct_outside_a_compound_command_keeps_its_own_name(
        line: str, construct: str, column: int) -> None:
    with pytest.raises(ShellRefused) as info:
        parse(line)
    assert (info.value.construct, info.value.column) == (construct, column)
