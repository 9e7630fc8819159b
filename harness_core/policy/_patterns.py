"""Glob patterns of policy rules, compiled once to regular expressions.

Three dialects, one per kind of target:

* **paths** (read/write): gitignore-like, always matched against the whole path relative
  to the workspace root. ``*`` and ``?`` stay inside one segment, ``**`` as a whole
  segment crosses segments (``dir/**`` also matches ``dir`` itself, ``**/x`` also
  matches ``x`` at the root), ``[...]`` is a class (``[!...]`` negates), ``\\`` escapes.
* **commands** (exec): ``*`` matches anything at all, spaces and slashes included.
* **hosts** (net): ``host``, ``*.domain``, ``host:port``, ``*.domain:port``,
  ``[v6addr]`` or ``[v6addr]:port`` (a bare IPv6 address takes no port), and networks
  in CIDR form (``10.0.0.0/8``, ``10.0.0.0/8:443``, ``fd00::/8``, ``[fd00::/8]:443``).
  The host part is a glob like a command's, compared case-insensitively, a trailing dot
  ignored; the port is a number from 1 to 65535 (``*`` or no port: every port). What a
  numeric host or a network means as addresses is `_net`'s business.

This module only translates and normalises text; it never touches the filesystem.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

from harness_core.errors import PolicyError

__all__ = [
    "GLOB_CHARS",
    "bad_port",
    "compile_command",
    "compile_host",
    "compile_path",
    "net_host",
    "net_port",
    "normalise_host",
    "normalise_path_pattern",
    "normalise_target_path",
    "split_host_port",
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
    """Compile the host part of a net pattern, case-insensitive (the port: `net_port`).

    Raises:
        PolicyError: The pattern is empty, names no host, or its port is not 1-65535.
    """
    host, _ = _net_pattern(pattern)
    try:
        regex = _translate_free(host)
    except PolicyError as exc:
        raise PolicyError(f"net pattern {pattern!r}: {exc.message}", hint=exc.hint) from exc
    return _compile(pattern, regex, re.DOTALL | re.IGNORECASE)


def net_host(pattern: str) -> str:
    """The host part of a net pattern: lower-case, no brackets, no trailing dot.

    Raises:
        PolicyError: The pattern is malformed (as `compile_host`).
    """
    return _net_pattern(pattern)[0]


def net_port(pattern: str) -> int | None:
    """The port a net pattern names; None when it names none (or ``*``): every port.

    Raises:
        PolicyError: The pattern is malformed (as `compile_host`).
    """
    return _net_pattern(pattern)[1]


_PORT_HINT = "a port is a number from 1 to 65535, e.g. 'pypi.org:443'; no port means every port"


@lru_cache(maxsize=4096)
def _net_pattern(pattern: str) -> tuple[str, int | None]:
    _require(pattern)
    host, port_text = _split_host(pattern.strip().lower(), pattern=True)
    if host is None:
        raise PolicyError(
            f"net pattern {pattern!r}: only ':port' may follow ']'",
            hint="write an IPv6 address as '[::1]' or '[::1]:8080'",
        )
    host = host.rstrip(".")
    if not host:
        raise PolicyError(
            f"net pattern {pattern!r} names no host", hint="write '*:443' for every host on 443"
        )
    if port_text is None or port_text == "*":
        return host, None
    port = _parse_port(port_text)
    if port is None:
        raise PolicyError(
            f"net pattern {pattern!r}: port {port_text!r} is not a number from 1 to 65535",
            hint=_PORT_HINT,
        )
    return host, port


def _parse_port(text: str) -> int | None:
    """`text` as a port (1-65535, ASCII digits only), or None."""
    if not text.isascii() or not text.isdigit():
        return None
    port = int(text)
    return port if 1 <= port <= 65535 else None


def _split_host(text: str, *, pattern: bool) -> tuple[str | None, str | None]:
    """(host, port text or None); host None when text follows ``]`` that is not a port.

    ``[v6]`` and ``[v6]:port`` are IPv6 (in a pattern only when the brackets hold a
    ``:``, else ``[...]`` is a glob class); one ``:`` separates a port; two or more
    (a bare IPv6 address) leave no port.
    """
    if text.startswith("["):
        end = text.find("]")
        inner = text[1:end] if end != -1 else ""
        if end != -1 and (":" in inner or not pattern):
            rest = text[end + 1 :]
            if not rest:
                return inner, None
            return (inner, rest[1:]) if rest.startswith(":") else (None, None)
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, port
    return text, None


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


def bad_port(target: str) -> str | None:
    """The port text of a net target when it is there and not a number from 1 to 65535."""
    host, port_text = _split_host(target.strip().lower(), pattern=False)
    if host is None or port_text is None or _parse_port(port_text) is not None:
        return None
    return port_text


def split_host_port(target: str) -> tuple[str, int | None]:
    """A net act's target as (host, port): lower-case, no brackets, no trailing dot.

    ``PyPI.org:443`` → ``("pypi.org", 443)``, ``[::1]:8080`` → ``("::1", 8080)``,
    ``::1`` → ``("::1", None)``. A port that is missing or not a number from 1 to 65535
    gives None: the act could reach any port.
    """
    host, port_text = _split_host(target.strip().lower(), pattern=False)
    if host is None:
        return target.strip().lower().rstrip("."), None
    return host.rstrip("."), None if port_text is None else _parse_port(port_text)


def normalise_host(host: str) -> str:
    """Lower-case a host and drop a port, IPv6 brackets and a trailing dot."""
    return split_host_port(host)[0]
