"""The lexer: a command line to words and operators, by an allowlist per state.

Three states: outside quotes, inside single quotes, inside double quotes. In each, a
character is consumed only if that state has a rule for it; everything else is refused
with `ShellRefused` naming the construct it would have started and its column. A
construct nobody anticipated therefore fails closed instead of becoming part of a word.

Most lines use nothing but plain words, quotes without escapes or dollars, and the
common operators. Such a line is recognised whole by one regular expression and split
by another (`_lex_simple`); any other line goes through the character-by-character
state machine (`_Lexer`), which alone decides every refusal. The fast path only ever
returns what the state machine would have returned for the same line (a test checks
this on arbitrary text).

The lexer only splits and unquotes. It never expands anything (there is nothing to
expand: every expansion is refused), never looks at the filesystem and never decides
policy.
"""

from __future__ import annotations

import re
import unicodedata
from enum import Enum
from typing import NamedTuple

from harness_core.errors import ShellRefused

__all__ = ["CONSTRUCTS", "KEYWORDS", "Op", "OpKind", "Word", "keyword_refusal", "lex", "refuse"]

KEYWORDS = frozenset(
    "if then elif else fi for while until do done case esac function select time coproc [["
    .split()
)
"""Reserved words refused in command position (unquoted, as bash recognises them)."""

CONSTRUCTS: dict[str, str] = {
    "command substitution": "$( ) would run a command inside the line; run it as its own call",
    "backticks": "`…` is command substitution; run the inner command as its own call",
    "parameter expansion": "$VAR would expand a variable the policy never saw; write the "
    "value, or single-quote a literal $",
    "braced parameter expansion": "${VAR} would expand a variable the policy never saw; "
    "write the value, or single-quote a literal $",
    "arithmetic expansion": "$(( )) and $[ ] are not evaluated; compute the value first",
    "process substitution": "<( ) and >( ) would run hidden commands; use a file",
    "subshell": "( ) would start a subshell; write the commands without it",
    "brace group": "{ } (a brace group or brace expansion) is not supported; quote it for "
    "a literal brace",
    "here-document": "<< is not supported; write the text to a file and redirect with <",
    "here-string": "<<< is not supported; write the text to a file and redirect with <",
    "background": "& would leave a process running; use shell_start for a background process",
    "keyword": "compound commands (if, for, while, case …) are not supported; run each "
    "command as its own call",
    "glob": "* ? [ ] are not expanded (the argv checked must be the argv run); quote them "
    "for a literal, or list paths with find or list_dir",
    "2>&1 into a pipe": "2>&1 on a stage whose stdout is piped needs descriptor duplication "
    "that is not performed; use it on the last stage, or redirect stderr to a file",
    "NUL byte": "a NUL byte cannot be passed to a program",
    "ANSI-C quoting": "$'…' is not supported; use single or double quotes",
    "locale quoting": '$"…" is not supported; use single or double quotes',
    "tilde expansion": "~ is not expanded; write the path relative to the workspace",
    "assignment": "NAME=value in command position sets a variable; there is no shell to "
    "hold it",
    "control character": "control characters other than tab are refused (a newline too: "
    "join commands with ; or &&)",
    "format character": "invisible or format characters are refused",
    "unicode space": "a space other than the ASCII space or tab is refused",
    "pipe with stderr": "|& is not supported; use 2>&1 on the last stage",
    "redirect of both streams": "&> and &>> are not supported; use > file 2>&1",
    "clobber redirect": ">| is not supported; use >",
    "read-write redirect": "<> is not supported",
    "descriptor duplication": "only 2>&1 duplicates a descriptor",
    "descriptor redirect": "only stdin, stdout and fd 2 may be redirected (<, >, 2>)",
    "comment": "# at the start of a word begins a comment; quote it for a literal #",
    "history expansion": "! (negation or history expansion) is not supported; quote it for "
    "a literal !",
    "case terminator": ";; belongs to case, which is not supported",
    "dollar sign": "an unquoted $ is refused; single-quote a literal $",
    "unterminated quote": "the quote is never closed",
    "trailing backslash": "a backslash at the end of the line escapes nothing",
    "empty command": "an operator needs a command on each side",
    "missing redirect target": "a redirect needs a file name after it",
    "shell builtin": "this builtin changes shell state, and there is no shell; run programs "
    "only",
    "character": "this character is not admitted outside quotes",
    "cd": "cd takes exactly one directory, no options and no redirects, alone in its "
    "pipeline",
}
"""Every construct the lexer and the parser refuse, by name, with the reason given."""


def refuse(construct: str, column: int, detail: str = "") -> ShellRefused:
    """A `ShellRefused` for `construct` (a key of `CONSTRUCTS`) at `column`."""
    reason = CONSTRUCTS[construct]
    return ShellRefused(construct, column, f"{detail}: {reason}" if detail else reason)


def keyword_refusal(keyword: str, column: int) -> ShellRefused:
    """The refusal of `keyword` (one of `KEYWORDS`) in command position at `column`."""
    return ShellRefused(f"keyword {keyword}", column, CONSTRUCTS["keyword"])


class OpKind(Enum):
    """Operators the lexer admits."""

    PIPE = "|"
    OR = "||"
    AND = "&&"
    SEMI = ";"
    OUT = ">"
    APPEND = ">>"
    IN = "<"
    ERR = "2>"
    ERR_APPEND = "2>>"
    ERR_TO_OUT = "2>&1"

    # Identity hash (members are singletons): Enum's own runs Python code per lookup.
    __hash__ = object.__hash__


class Word(NamedTuple):
    """A word after quote removal.

    Attributes:
        text: Its value.
        column: 1-based column of its first character.
        quoted: Whether any part of it was quoted or escaped.
        plain_prefix: Its leading characters before the first quote or escape.
    """

    text: str
    column: int
    quoted: bool
    plain_prefix: str


class Op(NamedTuple):
    """An operator and its 1-based column."""

    kind: OpKind
    column: int


Token = Word | Op

# The common cases in one match: blanks, or plain characters and single-quoted parts.
_FAST = re.compile(r"(?P<blank>[ \t]+)|(?P<word>(?:[A-Za-z0-9_./,:=+@%^\-]+|'[^']*')+)")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')
# The fast path's tokens, each after optional blanks (group 1): a word (group 2) made of
# plain characters, '…' parts and "…" parts holding nothing double quotes treat
# specially, followed by a blank, an operator or the end; or an operator (group 3) that
# cannot be the start of a longer, refused one. A run of digits glued to < or > is a
# descriptor: left to the slow path, except "2>", "2>>" and "2>&1", matched as
# operators. A line splits into such tokens in at most one way (a word is a run of plain
# characters, then quoted parts each followed by such a run; "|" never precedes "|"),
# so matching a line that does not qualify fails in linear time. No possessive
# quantifiers or atomic groups: Python 3.11 before 3.11.5 matched some of them wrongly.
_END = r"(?=[ \t|;&<>]|\Z)"
_PLAIN = r"A-Za-z0-9_./,:=+@%^\-"
_QUOTED = r"""(?:'[^']*'|"[^"\\$`]*")"""


def _token(group: str) -> str:
    return (
        rf"({group}[ \t]*)(?:"
        rf"({group}(?![0-9]+[<>])(?=[{_PLAIN}'\"])[{_PLAIN}]*(?:{_QUOTED}[{_PLAIN}]*)*)" + _END
        + rf"|({group}\|\||&&|2>&1" + _END + r"|2>>|2>(?![|(&>])|>>|>(?![|(&>])|<(?![<(>&])"
        r"|\|(?![|&])|;(?![;&]))"
        r")"
    )


_SIMPLE_TOKEN = re.compile(_token(""))
_SIMPLE_LINE = re.compile(r"(?:" + _token("?:") + r")*[ \t]*")
_QUOTED_PART = re.compile(r"'([^']*)'|\"([^\"]*)\"|([^'\"]+)")
# C0 controls except tab, DEL and C1 controls.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_BLANK = frozenset(" \t")
_DOLLAR_EXPANDS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789{([@*#?-$!"
)
_AFTER_DUP = frozenset(" \t|;&<>")
_SIMPLE_REFUSALS = {
    "(": "subshell",
    ")": "subshell",
    "{": "brace group",
    "}": "brace group",
    "*": "glob",
    "?": "glob",
    "[": "glob",
    "]": "glob",
    "~": "tilde expansion",
    "!": "history expansion",
    "`": "backticks",
}


def _scan_invisible(line: str) -> None:
    control = _CONTROL.search(line)
    if control is not None:
        name = "NUL byte" if control.group() == "\0" else "control character"
        raise refuse(name, control.start() + 1, f"U+{ord(control.group()):04X}")
    if line.isascii():
        return
    for index, char in enumerate(line):
        if ord(char) < 0x80:
            continue
        category = unicodedata.category(char)
        if category[0] == "C":
            raise refuse("format character", index + 1, f"U+{ord(char):04X}")
        if category[0] == "Z":
            raise refuse("unicode space", index + 1, f"U+{ord(char):04X}")


def _dollar_construct(line: str, index: int, quoted: bool) -> str:
    """The construct a `$` at `index` starts (outside quotes, or inside double quotes)."""
    nxt = line[index + 1] if index + 1 < len(line) else ""
    if nxt == "(":
        after = line[index + 2] if index + 2 < len(line) else ""
        return "arithmetic expansion" if after == "(" else "command substitution"
    if nxt == "[":
        return "arithmetic expansion"
    if nxt == "{":
        return "braced parameter expansion"
    if not quoted and nxt == "'":
        return "ANSI-C quoting"
    if not quoted and nxt == '"':
        return "locale quoting"
    if nxt and nxt in _DOLLAR_EXPANDS:
        return "parameter expansion"
    return "dollar sign"


class _Lexer:
    def __init__(self, line: str) -> None:
        self.line = line
        self.tokens: list[Token] = []
        self.parts: list[str] = []
        self.in_word = False
        self.word_column = 0
        self.first_quote: int | None = None  # length of parts' text when quoting began

    def start_word(self, index: int) -> None:
        if not self.in_word:
            self.in_word = True
            self.word_column = index + 1
            self.parts = []
            self.first_quote = None

    def mark_quoted(self) -> None:
        if self.first_quote is None:
            self.first_quote = sum(len(p) for p in self.parts)

    def flush(self) -> None:
        if not self.in_word:
            return
        text = "".join(self.parts)
        quoted = self.first_quote is not None
        prefix = text if self.first_quote is None else text[: self.first_quote]
        self.tokens.append(Word(text, self.word_column, quoted, prefix))
        self.in_word = False

    def fd_prefix(self) -> str | None:
        """The current word if it is an unquoted run of digits (a descriptor number)."""
        if self.in_word and self.first_quote is None:
            text = "".join(self.parts)
            if text.isdigit():
                return text
        return None

    def run(self) -> list[Token]:
        line = self.line
        index = 0
        end = len(line)
        fast = _FAST.match
        while index < end:
            found = fast(line, index)
            if found is None:
                index = self.step(index)
                continue
            if found.lastgroup == "blank":
                self.flush()
            else:
                self.start_word(index)
                raw = found.group()
                quote = raw.find("'")
                if quote < 0:
                    self.parts.append(raw)
                else:  # quotes in this match only delimit '…' parts: drop them
                    self.parts.append(raw[:quote])
                    self.mark_quoted()
                    self.parts.append(raw[quote:].replace("'", ""))
            index = found.end()
        self.flush()
        return self.tokens

    def step(self, index: int) -> int:  # noqa: C901 - one branch per character class
        line = self.line
        char = line[index]
        if char in _BLANK:
            self.flush()
            return index + 1
        if char == "'":
            return self.single(index)
        if char == '"':
            return self.double(index)
        if char == "\\":
            if index + 1 >= len(line):
                raise refuse("trailing backslash", index + 1)
            self.start_word(index)
            self.mark_quoted()
            self.parts.append(line[index + 1])
            return index + 2
        if char == "#":
            if not self.in_word:
                raise refuse("comment", index + 1)
            self.parts.append(char)
            return index + 1
        if char in "<>":
            return self.redirect(index)
        if char in "|&;":
            self.flush()
            return self.control_op(index)
        if char == "$":
            raise refuse(_dollar_construct(line, index, quoted=False), index + 1)
        if char in _SIMPLE_REFUSALS:
            raise refuse(_SIMPLE_REFUSALS[char], index + 1)
        if ord(char) >= 0x80:  # letters and symbols beyond ASCII (spaces/controls refused)
            self.start_word(index)
            self.parts.append(char)
            return index + 1
        raise refuse("character", index + 1, repr(char))

    def single(self, index: int) -> int:
        close = self.line.find("'", index + 1)
        if close < 0:
            raise refuse("unterminated quote", index + 1, "single quote")
        self.start_word(index)
        self.mark_quoted()
        self.parts.append(self.line[index + 1 : close])
        return close + 1

    def double(self, index: int) -> int:
        line = self.line
        self.start_word(index)
        self.mark_quoted()
        pos = index + 1
        while True:
            if pos >= len(line):
                raise refuse("unterminated quote", index + 1, "double quote")
            char = line[pos]
            if char == '"':
                return pos + 1
            if char == "\\":
                nxt = line[pos + 1] if pos + 1 < len(line) else ""
                if nxt in ('"', "\\", "$", "`"):
                    self.parts.append(nxt)
                    pos += 2
                else:
                    self.parts.append("\\")
                    pos += 1
                continue
            if char == "$":
                construct = _dollar_construct(line, pos, quoted=True)
                if construct != "dollar sign":
                    raise refuse(construct, pos + 1, "inside double quotes")
                self.parts.append("$")
                pos += 1
                continue
            if char == "`":
                raise refuse("backticks", pos + 1, "inside double quotes")
            chunk = _DQ_PLAIN.match(line, pos)
            assert chunk is not None  # every other character matches
            self.parts.append(chunk.group())
            pos = chunk.end()

    def redirect(self, index: int) -> int:
        fd = self.fd_prefix()
        column = self.word_column if fd is not None else index + 1
        if fd is not None:
            self.in_word = False  # the digits were the descriptor, not a word
        else:
            self.flush()
        if self.line[index] == "<":
            return self.input_redirect(index, fd, column)
        return self.output_redirect(index, fd, column)

    def input_redirect(self, index: int, fd: str | None, column: int) -> int:
        line = self.line
        nxt = line[index + 1] if index + 1 < len(line) else ""
        if line.startswith("<<<", index):
            raise refuse("here-string", index + 1)
        if nxt == "<":
            raise refuse("here-document", index + 1)
        if nxt == "(":
            raise refuse("process substitution", index + 1)
        if nxt == ">":
            raise refuse("read-write redirect", index + 1)
        if nxt == "&":
            raise refuse("descriptor duplication", index + 1)
        if fd is not None:
            raise refuse("descriptor redirect", column, f"fd {fd}")
        self.tokens.append(Op(OpKind.IN, column))
        return index + 1

    def output_redirect(self, index: int, fd: str | None, column: int) -> int:
        line = self.line
        nxt = line[index + 1] if index + 1 < len(line) else ""
        if nxt == "|":
            raise refuse("clobber redirect", index + 1)
        if nxt == "(":
            raise refuse("process substitution", index + 1)
        if nxt == "&":
            return self.duplication(index, fd, column)
        if fd is not None and fd != "2":
            raise refuse("descriptor redirect", column, f"fd {fd}")
        if nxt == ">":
            self.tokens.append(Op(OpKind.ERR_APPEND if fd else OpKind.APPEND, column))
            return index + 2
        self.tokens.append(Op(OpKind.ERR if fd else OpKind.OUT, column))
        return index + 1

    def duplication(self, index: int, fd: str | None, column: int) -> int:
        line = self.line
        after = index + 3
        if (
            fd == "2"
            and line.startswith("&1", index + 1)
            and (after >= len(line) or line[after] in _AFTER_DUP)
        ):
            self.tokens.append(Op(OpKind.ERR_TO_OUT, column))
            return after
        raise refuse("descriptor duplication", column)

    def control_op(self, index: int) -> int:
        line = self.line
        char = line[index]
        nxt = line[index + 1] if index + 1 < len(line) else ""
        column = index + 1
        if char == "|":
            if nxt == "|":
                self.tokens.append(Op(OpKind.OR, column))
                return index + 2
            if nxt == "&":
                raise refuse("pipe with stderr", column)
            self.tokens.append(Op(OpKind.PIPE, column))
            return index + 1
        if char == "&":
            if nxt == "&":
                self.tokens.append(Op(OpKind.AND, column))
                return index + 2
            if nxt == ">":
                raise refuse("redirect of both streams", column)
            raise refuse("background", column)
        if nxt in (";", "&"):
            raise refuse("case terminator", column)
        self.tokens.append(Op(OpKind.SEMI, column))
        return index + 1


_OPS = {kind.value: kind for kind in OpKind}
_tuple_new = tuple.__new__  # builds a Word or Op without the Python-level __new__


def _quoted_word(raw: str, column: int) -> Word:
    prefix = ""
    parts: list[str] = []
    quoted = False
    for single, double, plain in _QUOTED_PART.findall(raw):
        if plain:
            parts.append(plain)
            if not quoted:
                prefix += plain
        else:
            quoted = True
            parts.append(single or double)
    return Word("".join(parts), column, True, prefix)


def _lex_simple(line: str) -> list[Token] | None:
    """The tokens of a line made only of the common constructs; None for any other."""
    if _SIMPLE_LINE.fullmatch(line) is None:
        return None
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    for blanks, word, op in _SIMPLE_TOKEN.findall(line):
        pos += len(blanks)
        if word:
            if "'" in word or '"' in word:
                append(_quoted_word(word, pos + 1))
            else:
                append(_tuple_new(Word, (word, pos + 1, False, word)))
            pos += len(word)
        else:
            append(_tuple_new(Op, (_OPS[op], pos + 1)))
            pos += len(op)
    if pos != len(line.rstrip(" \t")):  # findall skipped something: never trust that
        return None
    return tokens


def lex(line: str) -> list[Token]:
    """Split `line` into words and operators.

    Args:
        line: One command line.

    Returns:
        Words (quotes removed) and operators, in order.

    Raises:
        ShellRefused: The line uses a construct outside the allowlist; the error names
            it (a key of `CONSTRUCTS`) and its 1-based column.
    """
    _scan_invisible(line)
    tokens = _lex_simple(line)
    if tokens is not None:
        return tokens
    lexer = _Lexer(line)
    try:
        return lexer.run()
    except ShellRefused as refused:
        outer = _opened_by_keyword(lexer, refused)
        if outer is None:
            raise
        raise outer from None


_COMMAND_STARTS = frozenset({OpKind.PIPE, OpKind.OR, OpKind.AND, OpKind.SEMI})


def _command_position(tokens: list[Token], index: int) -> bool:
    if index == 0:
        return True
    before = tokens[index - 1]
    return isinstance(before, Op) and before.kind in _COMMAND_STARTS


def _opened_by_keyword(lexer: _Lexer, refused: ShellRefused) -> ShellRefused | None:
    """The keyword refusal to raise instead of `refused`, when a keyword in command
    position opened a compound command before it: bash reads ``case x in a) …`` as a
    case (its ``)`` ends a pattern, not a subshell), ``function f() { …`` as a function
    and ``[[ -f x ]]`` as a test, so each is refused by its keyword, at its column."""
    tokens = lexer.tokens
    for index, token in enumerate(tokens):
        if (isinstance(token, Word) and not token.quoted and token.text in KEYWORDS
                and _command_position(tokens, index)):
            return keyword_refusal(token.text, token.column)
    start = refused.column - 1
    line = lexer.line
    if (refused.construct == "glob" and not lexer.in_word and line.startswith("[[", start)
            and line[start + 2 : start + 3] in ("", " ", "\t")
            and _command_position(tokens, len(tokens))):
        return keyword_refusal("[[", refused.column)
    return None
