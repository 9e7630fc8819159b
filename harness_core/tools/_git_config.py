"""What a repository may say before io's git reads it: no program, no file the agent writes.

The git built-ins run git on the host, outside the command sandbox. The rule they keep
is io's rule for everything it runs on the agent's behalf: no program named by a file
the agent can write runs outside the sandbox. git runs with an empty system and global
configuration and every program-naming setting pinned on its command line (`_git`);
this module checks what is left, the repository's own configuration, read in full the
way git reads it (``include``, ``includeIf``, the common directory's ``config``,
``config.worktree``), and its attributes. It decides and raises `GitRefused`; it never
runs git.

A configuration entry is refused when:

- the file it comes from lies inside the workspace and is not one of the protected
  ``.git`` files (`PROTECTED_WRITE_PATTERNS`): the agent could write it, now or between
  this check and git's own read; so is an ``include.path`` or ``includeIf.*.path``
  naming such a file, whether or not the file exists now;
- its key names a program (`_RULES`: filters, textconv and diff commands, merge drivers,
  fsmonitor, hooks, editors, pagers, signing programs, credential helpers, ``!``
  aliases...), or, failing closed for keys this table does not list, its variable name
  ends like one that does (``...command``, ``...cmd``, ``...program``, ``...helper``,
  ``...editor``, ``...pager``, ``...hook``...). A key git does not know runs nothing;
  the suffix rule may refuse one of those, which is the price of failing closed.

An attribute file that selects a filter driver (``filter=NAME``) is refused too: the
driver's program is never run, and without it git would compare and commit the wrong
bytes (a Git LFS repository's pointers).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from enum import Enum
from pathlib import Path

from harness_core._record import record
from harness_core.errors import GitRefused

__all__ = ["ConfigEntry", "check_attributes", "check_entries", "include_target",
           "parse_config_list", "program_rule"]


class _Test(Enum):
    """When a listed key names a program."""

    SET = "set"
    """Any value but the empty string (which switches the setting off)."""
    NOT_BOOLEAN = "not-boolean"
    """A value that is not a git boolean (``core.fsmonitor = true`` is git's own daemon)."""
    TRUE = "true"
    """A true boolean: the setting makes git run a program it names elsewhere."""
    BANG = "bang"
    """A value that starts with ``!``: a shell command."""


_RULES: tuple[tuple[str, _Test, str], ...] = (
    ("filter.*.clean", _Test.SET, "a clean filter"),
    ("filter.*.smudge", _Test.SET, "a smudge filter"),
    ("filter.*.process", _Test.SET, "a long-running filter process"),
    ("diff.*.textconv", _Test.SET, "a textconv program"),
    ("diff.*.command", _Test.SET, "an external diff program"),
    ("diff.external", _Test.SET, "an external diff program"),
    ("merge.*.driver", _Test.SET, "a merge driver"),
    ("core.fsmonitor", _Test.NOT_BOOLEAN, "a filesystem monitor hook"),
    ("core.hookspath", _Test.SET, "a directory of hooks"),
    ("core.sshcommand", _Test.SET, "an ssh program"),
    ("core.gitproxy", _Test.SET, "a proxy program"),
    ("core.askpass", _Test.SET, "a password prompt program"),
    ("core.editor", _Test.SET, "an editor"),
    ("core.pager", _Test.SET, "a pager"),
    ("core.alternaterefscommand", _Test.SET, "a program listing alternate refs"),
    ("sequence.editor", _Test.SET, "an editor"),
    ("pager.*", _Test.NOT_BOOLEAN, "a pager"),
    ("interactive.difffilter", _Test.SET, "a diff filter program"),
    ("gpg.program", _Test.SET, "a signing program"),
    ("gpg.*.program", _Test.SET, "a signing program"),
    ("gpg.ssh.defaultkeycommand", _Test.SET, "a signing key program"),
    ("commit.gpgsign", _Test.TRUE, "signing each commit with the gpg program"),
    ("tag.gpgsign", _Test.TRUE, "signing each tag with the gpg program"),
    ("log.showsignature", _Test.TRUE, "checking signatures with the gpg program"),
    ("credential.helper", _Test.SET, "a credential helper"),
    ("credential.*.helper", _Test.SET, "a credential helper"),
    ("uploadpack.packobjectshook", _Test.SET, "a pack-objects hook"),
    ("alias.*", _Test.BANG, "a shell alias"),
    ("submodule.*.update", _Test.BANG, "a submodule update command"),
    ("remote.*.vcs", _Test.SET, "a remote helper"),
    ("remote.*.uploadpack", _Test.SET, "an upload-pack program"),
    ("remote.*.receivepack", _Test.SET, "a receive-pack program"),
    ("web.browser", _Test.SET, "a browser"),
    ("browser.*.path", _Test.SET, "a browser"),
    ("difftool.*.path", _Test.SET, "a diff tool"),
    ("mergetool.*.path", _Test.SET, "a merge tool"),
)
"""(key pattern, when it names a program, what it names). A pattern is
``section.name`` or ``section.*.name`` (any subsection); keys compare lower-cased."""

_SUFFIXES = ("command", "cmd", "program", "helper", "editor", "pager", "textconv",
             "driver", "hook", "askpass", "viewer", "browser", "process", "clean",
             "smudge")
"""Variable names ending like these are taken to name a program when no rule lists them."""

_BOOLEANS = frozenset({"true", "yes", "on", "1", "false", "no", "off", "0", ""})
_TRUE = frozenset({"true", "yes", "on", "1"})


@record
class ConfigEntry:
    """One ``key = value`` git reads, with the file it comes from.

    Attributes:
        origin: The file (absolute, as git names it), or git's name of another origin.
        key: ``section.name`` or ``section.subsection.name``, section and name lower-cased.
        value: The value; None for a bare key (a true boolean).
    """

    origin: str
    key: str
    value: str | None


def parse_config_list(raw: bytes) -> list[ConfigEntry]:
    """Parse ``git config --list --show-origin --includes -z``."""
    fields = raw.split(b"\0")
    entries: list[ConfigEntry] = []
    for index in range(0, len(fields) - 1, 2):
        origin = os.fsdecode(fields[index])
        key, newline, value = os.fsdecode(fields[index + 1]).partition("\n")
        entries.append(ConfigEntry(origin, key, value if newline else None))
    return entries


def _split(key: str) -> tuple[str, str | None, str]:
    section, _, rest = key.partition(".")
    subsection, dot, name = rest.rpartition(".")
    return section.lower(), (subsection if dot else None), name.lower()


def _matches(pattern: str, key: str) -> bool:
    want_section, want_sub, want_name = _split(pattern)
    section, sub, name = _split(key)
    if section != want_section or want_name not in ("*", name):
        return False
    return (sub is None) == (want_sub is None)


def _names_program(test: _Test, value: str | None) -> bool:
    text = "true" if value is None else value.strip()
    if test is _Test.SET:
        return text != ""
    if test is _Test.NOT_BOOLEAN:
        return text.lower() not in _BOOLEANS
    if test is _Test.TRUE:
        return text.lower() in _TRUE
    return text.startswith("!")


def program_rule(key: str, value: str | None) -> str | None:
    """What program `key = value` makes git run, or None when it names none.

    A listed key decides by its rule; any other key in the ``filter`` section but
    ``required``, or whose variable name ends like a program setting, names one
    unless its value is empty.
    """
    for pattern, test, what in _RULES:
        if _matches(pattern, key):
            return what if _names_program(test, value) else None
    section, _, name = _split(key)
    set_ = _names_program(_Test.SET, value)
    if section == "filter" and name != "required":
        return "a filter driver setting" if set_ else None
    if name.endswith(_SUFFIXES) and set_:
        return "a program (the setting's name says so; io does not know it as safe)"
    return None


def _inside(path: Path, root: Path) -> str | None:
    """`path` relative to `root` (posix), or None when it lies outside."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def include_target(entry: ConfigEntry, home: str) -> Path | None:
    """The file an ``include.path`` or ``includeIf.<condition>.path`` entry names
    (resolved the way git resolves it: ``~/`` from git's `home`, a relative path from
    the including file's folder), or None for any other entry."""
    section, _, name = _split(entry.key)
    if section not in ("include", "includeif") or name != "path" or not entry.value:
        return None
    value = entry.value
    if value == "~" or value.startswith("~/"):
        target = Path(home, value[2:])
    elif os.path.isabs(value):
        target = Path(value)
    else:
        target = Path(entry.origin.partition(":")[2]).parent / value
    return Path(os.path.realpath(target))


def check_entries(entries: Iterable[ConfigEntry], root: Path,
                  is_protected: Callable[[str], bool], home: str = "/nonexistent") -> None:
    """Refuse a configuration that names a program or comes from a file the agent writes.

    Args:
        entries: What git reads, from `parse_config_list`.
        root: The workspace root, resolved.
        is_protected: Whether a workspace-relative path is one the agent cannot write.
        home: The ``HOME`` git runs with (where an include's ``~/`` leads).

    Raises:
        GitRefused: An entry from a file the agent can write (the first), or every entry
            that names a program, each with its key, value and file.
    """
    named: list[tuple[ConfigEntry, str, Path]] = []
    for entry in entries:
        kind, colon, where = entry.origin.partition(":")
        if kind != "file" or not colon:
            raise GitRefused(entry.key, entry.origin,
                             f"git would read {entry.key} from {entry.origin!r}, which is not"
                             " a file io can check")
        path = Path(os.path.realpath(where))
        rel = _inside(path, root)
        if rel is not None and not is_protected(rel):
            raise GitRefused(entry.key, str(path),
                             f"git would read its configuration ({entry.key}) from {rel}, a"
                             " file in the workspace that the agent can write")
        target = include_target(entry, home)
        inside = None if target is None else _inside(target, root)
        if inside is not None and not is_protected(inside):
            raise GitRefused(entry.key, str(target),
                             f"{entry.key} = {entry.value!r} (in {path}) makes git read its"
                             f" configuration from {inside}, a file in the workspace that the"
                             " agent can write (now or before git reads it, whether it exists"
                             " or not)")
        what = program_rule(entry.key, entry.value)
        if what is not None:
            named.append((entry, what, path))
    if named:
        first, _, path = named[0]
        said = "; ".join(
            f"{e.key} = {'(set)' if e.value is None else repr(e.value)} ({what}, in {p})"
            for e, what, p in named)
        raise GitRefused(first.key, str(path),
                         f"the repository's configuration names a program: {said}; io's git"
                         " built-ins run no program a repository names (remove the"
                         " setting, or run git yourself)")


def _selects_filter(line: str) -> bool:
    words = line.split()
    return any(word.startswith("filter=") for word in words[1:])


def check_attributes(files: Iterable[Path]) -> None:
    """Refuse attribute files that select a filter driver (``filter=NAME``).

    A file that is missing, unreadable or a symbolic link (git does not follow one in the
    work tree) is skipped: git reads nothing from it either.

    Raises:
        GitRefused: The first line that selects one, naming the file and line.
    """
    for path in files:
        try:
            if path.is_symlink():
                continue
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and _selects_filter(stripped):
                raise GitRefused(
                    "filter", str(path),
                    f"{path} line {number} selects a filter driver ({stripped!r}); io's"
                    " git built-ins run no filter program, and without it git would compare"
                    " and commit the wrong content (run git yourself)")
