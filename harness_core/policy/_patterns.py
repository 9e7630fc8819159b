"""Glob patterns of policy rules, compiled once to regular expressions.

Three dialects, one per kind of target:

* **paths** (read/write): gitignore-like, always matched against the whole path relative
  to the workspace root. ``*`` and ``?`` stay inside one segment, ``**`` as a whole
  segment crosses segments (``dir/**`` also matches ``dir`` itself, ``**/x`` also
  matches ``x`` at the root), ``[...]`` is a class (``[!...]`` negates), ``\\`` escapes.
* **commands** (exec): ``*`` matches anything at all, spaces and slashes included.
* **hosts** (net): like commands, compared case-insensitively.

This module only translates and normalises text; it never touches the filesystem.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

from harness_core.errors import PolicyError

__all__ = [
    "GLOB_CHARS",
    "compile_command",
    "compile_host",
    "compile_path",
    "normalise_host",
    "normalise_path_pattern",
    "normalise_target_path",
]

GLOB_CHARS = frozenset("*?[\\")
"""Characters that make a pattern more than a literal string."""

_DRIVE = re.compile(r"^[A-Za-z]:")


def _class(pattern: str, start: int, *, in_segment: bool) -> tuple[str, int]:
    """Translate the ``[...]`` beginning at `start`; return (regex, index after it)."""
    i = start + 1
    negate = i < len(pattern) and pattern[i] in "!^"
    if negate:
        i += 1
    body_start = i
    if i < len(pattern) and pattern[i] == "]":
        i += 1  # a leading ']' is a member, as in fnmatch
    while i < len(pattern) and pattern[i] != "]":
        i += 1
    if i >= len(pattern):
        raise PolicyError(
            f"pattern {pattern!r} has an unclosed '['", hint="write '\\[' for a literal bracket"
        )
    body = _class_body(pattern[body_start:i])
    regex = f"[^{body}]" if negate else f"[{body}]"
    if in_segment:
        regex = f"(?!/){regex}"
    return regex, i + 1


def _class_body(body: str) -> str:
    out: list[str] = []
    previous = ""
    for char in body:
        # Escape what Python's re would read as set syntax (or warn about as future syntax).
        if char in "\\^[]&~|" or (char == "-" and previous == "-"):
            out.append("\\" + char)
        else:
            out.append(char)
        previous = char
    return "".join(out)


def _translate_path(pattern: str) -> str:
    segments = pattern.split("/")
    out: list[str] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        if segment == "**":
            if last == 0:
                out.append(".*")
            elif index == 0:
                out.append("(?:.*/)?")
            elif index == last:
                out.append("(?:/.*)?")
            else:
                out.append("/(?:.*/)?")
            continue
        if index > 0 and segments[index - 1] != "**":
            out.append("/")
        out.append(_translate_segment(segment, pattern))
    return "".join(out)


def _translate_segment(segment: str, pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i < len(segment) and segment[i] == "*":
                i += 1  # a '**' that is not a whole segment is an ordinary '*'
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            regex, i = _class(segment, i, in_segment=True)
            out.append(regex)
            continue
        elif char == "\\":
            if i + 1 >= len(segment):
                raise PolicyError(f"pattern {pattern!r} ends with a lone backslash")
            i += 1
            out.append(re.escape(segment[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _translate_free(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            regex, i = _class(pattern, i, in_segment=False)
            out.append(regex)
            continue
        elif char == "\\":
            if i + 1 >= len(pattern):
                raise PolicyError(f"pattern {pattern!r} ends with a lone backslash")
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _require(pattern: str) -> None:
    if not pattern.strip():
        raise PolicyError(
            "a policy rule has an empty pattern",
            hint="an empty pattern would match nothing; remove the rule or name a target",
        )


def normalise_path_pattern(pattern: str) -> str:
    """The canonical spelling of a path pattern (``./`` and a trailing ``/`` handled).

    ``./src/**`` becomes ``src/**``; ``build/`` becomes ``build/**``.

    Raises:
        PolicyError: The pattern is empty or absolute.
    """
    _require(pattern)
    if pattern.startswith("/") or _DRIVE.match(pattern):
        raise PolicyError(
            f"path pattern {pattern!r} is absolute",
            hint="path patterns are relative to the workspace root, e.g. 'build/**'",
        )
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if pattern.endswith("/"):
        pattern = pattern.rstrip("/") + "/**"
    pattern = re.sub("/{2,}", "/", pattern)
    segments: list[str] = []
    for segment in pattern.split("/"):
        if segment == "." or (segment == "**" and segments and segments[-1] == "**"):
            continue
        segments.append(segment)
    pattern = "/".join(segments)
    if not pattern:
        raise PolicyError("a path pattern names nothing", hint="'**' means every path")
    return pattern


def _compile(pattern: str, regex: str, flags: re.RegexFlag) -> re.Pattern[str]:
    try:
        return re.compile(regex, flags)
    except re.error as exc:
        raise PolicyError(f"pattern {pattern!r} is not a valid glob: {exc}") from exc


@lru_cache(maxsize=4096)
def compile_path(pattern: str) -> re.Pattern[str]:
    """Compile a path pattern to a regex matched against the whole relative path."""
    return _compile(pattern, _translate_path(normalise_path_pattern(pattern)), re.DOTALL)


@lru_cache(maxsize=4096)
def compile_command(pattern: str) -> re.Pattern[str]:
    """Compile a command pattern; ``*`` matches any run of characters."""
    _require(pattern)
    return _compile(pattern, _translate_free(pattern), re.DOTALL)


@lru_cache(maxsize=4096)
def compile_host(pattern: str) -> re.Pattern[str]:
    """Compile a host pattern, case-insensitive."""
    _require(pattern)
    return _compile(pattern, _translate_free(pattern.strip().lower()), re.DOTALL | re.IGNORECASE)


def normalise_target_path(target: str) -> str | None:
    """Normalise a read/write target; None when it lies outside the root.

    ``a/./b`` → ``a/b``, ``a/../b`` → ``b``, ``.`` → ``""`` (the root itself). An
    absolute path, a drive path or one that climbs above the root gives None.
    """
    if target.startswith(("/", "\\")) or _DRIVE.match(target):
        return None
    if not target:
        return ""
    normal = posixpath.normpath(target)
    if normal == ".":
        return ""
    if normal == ".." or normal.startswith("../"):
        return None
    return normal


def normalise_host(host: str) -> str:
    """Lower-case a host and drop a port, IPv6 brackets and a trailing dot."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        host = host[1:end] if end != -1 else host[1:]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")
