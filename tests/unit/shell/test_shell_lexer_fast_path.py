"""The lexer's regex fast path returns exactly what the state machine returns, or nothing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_core.errors import ShellRefused
from harness_core.shell._lexer import _lex_simple, _Lexer, _scan_invisible, lex

_PIECES = [*" \t'\"\\$|&;<>(){}[]*?~!#=`0129abZ-./,:+@%^é\u00a0\n",
           "2>", "2>>", "2>&1", "12>", ">>", "&&", "||", "|&", ";;", "<<", "<>", ">&",
           "'a b'", '"x y"', '"$"', '"a\\"b"', "cd ", "echo ", " | ", " > f", "$(", "${"]
_LINES = st.lists(st.sampled_from(_PIECES), max_size=24).map("".join)


def _slow(line: str) -> object:
    try:
        _scan_invisible(line)
        return _Lexer(line).run()
    except ShellRefused as exc:
        return exc


@settings(max_examples=2000, deadline=None, database=None)
@given(st.one_of(_LINES, st.text(max_size=40)))
def test_fast_path_agrees_with_the_state_machine(line: str) -> None:
    try:
        _scan_invisible(line)
    except ShellRefused:
        return
    fast = _lex_simple(line)
    if fast is not None:
        assert fast == _slow(line)


@pytest.mark.parametrize(
    "line",
    [
        "cd src && grep -n 'def ' app.py | sort -t: -k2 | uniq -c | tr -s ' ' "
        "| head -n 20 > ../out/defs.txt 2> ../out/err.txt",
        "pytest -q tests/unit 2>&1",
        'git commit -m "fix: a, b" ; echo done',
        "a||b&&c|d;e <in >>out 2>>err",
        "   ",
        "",
    ],
)
def test_common_lines_take_the_fast_path(line: str) -> None:
    fast = _lex_simple(line)
    assert fast is not None
    assert fast == _slow(line)


@pytest.mark.parametrize(
    "line",
    ["echo $HOME", "echo a\\ b", "ls *.py", "echo x 3> f", "echo x 2>&1x", "a |& b",
     "a ;; b", "echo 'open", "# note", "echo a#b", "echo é", "a & b", "cat <<EOF"],
)
def test_anything_else_is_left_to_the_state_machine(line: str) -> None:
    assert _lex_simple(line) is None


@pytest.mark.parametrize(
    "line",
    ["a" * 200_000 + "$", "a " * 100_000 + "*", "|" * 200_000 + "&", "'x'" * 60_000 + "'",
     "echo " + "a|" * 100_000 + "?"],
)
def test_a_long_line_that_does_not_qualify_is_given_up_quickly(line: str) -> None:
    # Exponential backtracking would never finish; these return at once.
    assert _lex_simple(line) is None
    with pytest.raises(ShellRefused):
        lex(line)
