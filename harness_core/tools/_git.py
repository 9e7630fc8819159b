"""The `[git]` settings, and reading what git prints for the git built-ins.

How git is run (confined to a checked repository, every program-naming setting pinned)
is `_git_repo`; what a repository may say is `_git_config`. This module only parses.

`git status --porcelain=v2 -z` is parsed into `StatusEntry` records: with ``-z`` a path
is raw bytes ended by NUL, so a name holding a newline or bytes that are not UTF-8 is
carried whole (decoded with ``surrogateescape``, shown with ``\\xNN`` escapes).
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import Any

from harness_core._record import record
from harness_core.messages import escape_surrogates

__all__ = [
    "GitSettings",
    "GitStatus",
    "StatusEntry",
    "parse_status",
    "quote_path",
]


@record
class GitSettings:
    """The `[git]` table: who commits, and how long git may take.

    Attributes:
        author_name: Author and committer name; None: the operator's git config.
        author_email: Author and committer email; None: the operator's git config.
        timeout_seconds: Seconds before one git invocation is killed.
        history_depth: Commits of recent history searched for an ``Io-Call`` trailer
            when a commit's call is resumed without an observation.
    """

    author_name: str | None = None
    author_email: str | None = None
    timeout_seconds: float = 60.0
    history_depth: int = 200


_KINDS = {"1": "changed", "2": "renamed", "u": "unmerged", "?": "untracked", "!": "ignored"}


@record
class StatusEntry:
    """One path `git status` reports.

    Attributes:
        kind: ``changed``, ``renamed`` (or copied), ``unmerged``, ``untracked``, ``ignored``.
        index: The staged state letter (``M``, ``A``, ``D``, ``R``, ``C``, ``.`` none…).
        worktree: The unstaged state letter.
        path: The path relative to the workspace (``surrogateescape`` for bytes that
            are not UTF-8).
        original: For a rename or copy, the path it came from.
    """

    kind: str
    index: str
    worktree: str
    path: str
    original: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as JSON: a path is the real name (a newline is just ``\\n`` in
        JSON); a name that is not UTF-8 is spelled with ``\\xNN`` escapes, flagged, and
        given whole as hex bytes in ``path_bytes``."""
        out: dict[str, Any] = {"kind": self.kind, "index": self.index,
                               "worktree": self.worktree, **_json_path("path", self.path)}
        if self.original is not None:
            out.update(_json_path("original", self.original))
        return out


def _json_path(key: str, path: str) -> dict[str, Any]:
    if not any(0xDC80 <= ord(c) <= 0xDCFF for c in path):
        return {key: path}
    return {key: escape_surrogates(path), f"{key}_not_utf8": True,
            f"{key}_bytes": os.fsencode(path).hex()}


@record
class GitStatus:
    """What `git status` says about the branch and the paths.

    Attributes:
        branch: The branch checked out; None when HEAD is detached.
        commit: The commit HEAD names; None before the first commit.
        upstream: The upstream branch, if one is set.
        ahead: Commits on the branch not on its upstream (None: no upstream).
        behind: Commits on the upstream not on the branch (None: no upstream).
        entries: Each path with a change, in git's order.
    """

    branch: str | None = None
    commit: str | None = None
    upstream: str | None = None
    ahead: int | None = None
    behind: int | None = None
    entries: tuple[StatusEntry, ...] = field(default_factory=tuple)


def quote_path(path: str) -> tuple[str, bool]:
    """A path as shown, and whether it held bytes that are not UTF-8.

    A plain name is shown as it is. A name holding a control character (a newline), a
    quote, a backslash, surrounding spaces or bytes that are not UTF-8 is shown quoted
    like a JSON string, each raw byte as ``\\xNN`` and a ``[not UTF-8]`` marker after
    it, so no two names read alike and one entry never looks like two.
    """
    not_utf8 = any(0xDC80 <= ord(c) <= 0xDCFF for c in path)
    plain = not not_utf8 and path == path.strip() and not any(
        ord(c) < 0x20 or c in '"\\\x7f' for c in path)
    if plain:
        return path, False
    out = ['"']
    for char in path:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out) + (" [not UTF-8]" if not_utf8 else ""), not_utf8


def _decode(raw: bytes) -> str:
    return os.fsdecode(raw)


def _header(status: dict[str, Any], line: str) -> None:
    key, _, value = line[2:].partition(" ")
    if key == "branch.oid":
        status["commit"] = None if value == "(initial)" else value
    elif key == "branch.head":
        status["branch"] = None if value == "(detached)" else value
    elif key == "branch.upstream":
        status["upstream"] = value
    elif key == "branch.ab":
        ahead, _, behind = value.partition(" ")
        status["ahead"], status["behind"] = int(ahead), abs(int(behind))


def parse_status(raw: bytes, prefix: str = "") -> GitStatus:
    """Parse ``git status --porcelain=v2 --branch -z`` output.

    Args:
        raw: What git printed.
        prefix: The workspace's path inside the repository (``sub/dir/``), cut from
            every path so paths are relative to the workspace.
    """
    status: dict[str, Any] = {}
    entries: list[StatusEntry] = []
    records = raw.split(b"\0")
    cut = os.fsencode(prefix)
    index = 0

    def rel(path: bytes) -> str:
        return _decode(path[len(cut):] if cut and path.startswith(cut) else path)

    while index < len(records):
        record = records[index]
        index += 1
        if not record:
            continue
        tag = record[:1].decode("ascii", "replace")
        if tag == "#":
            _header(status, record.decode("utf-8", "replace"))
        elif tag in ("?", "!"):
            entries.append(StatusEntry(_KINDS[tag], tag, tag, rel(record[2:])))
        elif tag in ("1", "2", "u"):
            fields = {"1": 8, "2": 9, "u": 10}[tag]
            parts = record.split(b" ", fields)
            xy = parts[1].decode("ascii", "replace")
            original = None
            if tag == "2" and index < len(records):
                original = rel(records[index])
                index += 1
            entries.append(StatusEntry(_KINDS[tag], xy[:1], xy[1:2], rel(parts[fields]),
                                       original))
    return GitStatus(status.get("branch"), status.get("commit"), status.get("upstream"),
                     status.get("ahead"), status.get("behind"), tuple(entries))
