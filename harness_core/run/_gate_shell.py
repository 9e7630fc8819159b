"""Shell text and makefiles taken apart just far enough to see which programs they start.

Used by `harness_core.run._gate_command` to follow a gate through ``sh -c``, a shell
script and a ``make`` recipe. Anything it cannot take apart with confidence (a loop,
a here-document, a command substitution) comes back as None, which the caller counts
as a program it does not know. This module never runs anything.
"""

from __future__ import annotations

import re
import shlex

__all__ = ["after_options", "recipe", "simple_commands"]

_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", "!", "{", "}", "if", "then",
                         "else", "elif", "fi", "while", "until", "do", "done", ";;", "|&"})
_REDIRECTS = frozenset({">", ">>", "<", ">&", "<&", ">|", "&>", "&>>", "<>"})
_UNPARSED = frozenset({"for", "case", "esac", "select", "function", "<<", "<<<", "<<-"})


def after_options(args: list[str], valued: set[str] | frozenset[str], *,
                   assignments: bool = False, counts: bool = False) -> list[str]:
    """What a wrapper (``env``, ``timeout``, ``uv run``) starts: `args` past its options
    (those in `valued` take the next word), ``NAME=value`` words when `assignments`, and
    one duration when `counts`."""
    i = 0
    while i < len(args):
        word = args[i]
        if word.startswith("-"):
            i += 2 if word in valued else 1
        elif assignments and "=" in word:
            i += 1
        elif counts and re.match(r"^\d+(\.\d+)?[smhd]?$", word):
            i += 1
            counts = False
        else:
            break
    return args[i:]


def simple_commands(line: str) -> list[list[str] | None]:
    """The simple commands of one shell line (None for one it cannot take apart)."""
    if "$(" in line or "`" in line:
        return [None]
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:
        return [None]
    commands: list[list[str] | None] = []
    current: list[str] = []
    skip = False
    for token in tokens:
        if skip:
            skip = False
        elif token in _UNPARSED:
            return [*commands, None]
        elif token in _REDIRECTS:
            skip = True
        elif token in _SEPARATORS and not (token in ("if", "then", "do", "while") and current):
            if current:
                commands.append(current)
            current = []
        else:
            current.append(token)
    if current:
        commands.append(current)
    return commands


def recipe(text: str, targets: list[str]) -> list[str]:
    """The recipe lines of `targets` (the first target when none), prerequisites first."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    first: str | None = None
    current: list[str] | None = None
    for line in text.split("\n"):
        if line.startswith("\t") and current is not None:
            current.append(line[1:])
            continue
        match = re.match(r"^([A-Za-z0-9_./-]+(?:\s+[A-Za-z0-9_./-]+)*)\s*:(?!=)\s*([^;]*)", line)
        if match is None or line.startswith("."):
            current = None if line.strip() and not line.startswith("#") else current
            continue
        current = []
        for name in match.group(1).split():
            rules[name] = (match.group(2).split(), current)
            first = first or name
    out: list[str] = []
    pending = list(targets) or ([first] if first else [])
    done: set[str] = set()
    while pending:
        name = pending.pop(0)
        if name in done or name not in rules:
            continue
        done.add(name)
        prerequisites, lines = rules[name]
        pending.extend(prerequisites)
        out.extend(lines)
    return out
