"""File operands of programs whose effect on paths the policy can see.

For a handful of programs (`mv`, `cp`, `ln`, `rm`, `rmdir`, `tee`, `touch`, `mkdir`,
`truncate`) the paths an argv names are read, written, created or removed in a way
that is plain from the argv alone. Each such operand becomes a `Read` or `Write` act,
so a rename cannot carry a protected path out from under its protection nor a file
onto it:

- a source that disappears (``mv``, ``rm -r``) is a Read and a Write of itself, a Write
  of every entry under it and of every protected path it could hold, so ``mv .git g``
  is a Write of ``.git/config``;
- a destination is a Write of the path it creates, of every entry the source brings
  under it, and of each protected path it would shadow, so ``mv d .git`` is a Write of
  ``.git/config`` even when ``d`` is empty today.

Options are read the GNU way (clusters, ``--opt=value``, unambiguous long prefixes,
``--``); an option this module does not know is taken for a flag, so every other word
is checked as an operand (never fewer checks, possibly more). Other programs' operands
are not interpreted: the policy sees their argv through `Act.exec`, and the sandbox
confines what they do. This module resolves paths through the workspace and lists
directories; it never decides, never changes a file.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterator
from dataclasses import field

from harness_core._record import record
from harness_core.errors import PathEscape, WorkspaceError
from harness_core.policy import PROTECTED_WRITE_PATTERNS, Act, ActKind
from harness_core.workspace import Workspace

__all__ = ["MAX_TREE_ENTRIES", "OPERAND_PROGRAMS", "OperandProblem", "operand_acts"]

MAX_TREE_ENTRIES = 20_000
"""Entries under one moved, copied or removed directory checked one by one. Beyond it
(a ``node_modules``) only the directory itself and the protected paths it could hold
are checked: refusing would only send the model to ``find -delete``, which no operand
check sees either."""

_GLOB = frozenset("*?[")


@record
class _Spec:
    kind: str
    short_args: str = ""
    long: dict[str, tuple[str, bool]] = field(default_factory=lambda: {})


_TARGETS = {
    "target-directory": ("t", True),
    "no-target-directory": ("T", False),
    "suffix": ("S", True),
}
_SPECS: dict[str, _Spec] = {
    "mv": _Spec("move", "St", dict(_TARGETS)),
    "cp": _Spec(
        "copy",
        "St",
        {**_TARGETS, "recursive": ("r", False), "sparse": ("sparse", True),
         "no-preserve": ("no-preserve", True)},
    ),
    "ln": _Spec("link", "St", {**_TARGETS, "symbolic": ("s", False)}),
    "rm": _Spec("remove", "", {"recursive": ("r", False)}),
    "rmdir": _Spec("rmdir"),
    "tee": _Spec("write"),
    "mkdir": _Spec("mkdir", "m", {"mode": ("m", True)}),
    "touch": _Spec(
        "touch", "drt", {"date": ("d", True), "reference": ("r", True), "time": ("time", True)}
    ),
    "truncate": _Spec("truncate", "sr", {"size": ("s", True), "reference": ("r", True)}),
}
OPERAND_PROGRAMS = frozenset(_SPECS)
"""Programs (by basename) whose file operands become Read/Write acts."""


@record
class OperandProblem:
    """Why operands could not be checked.

    Attributes:
        kind: The act kind the operand would have been.
        word: The operand as written.
        reason: Why (it leaves the root, or cannot be resolved).
    """

    kind: ActKind
    word: str
    reason: str


class _Stop(Exception):  # noqa: N818 - private control flow, never leaves this module
    def __init__(self, problem: OperandProblem) -> None:
        super().__init__(problem.reason)
        self.problem = problem


def _split(argv: tuple[str, ...], spec: _Spec) -> tuple[list[str], dict[str, list[str]]]:
    operands: list[str] = []
    options: dict[str, list[str]] = {}
    index, done = 1, False
    while index < len(argv):
        arg = argv[index]
        index += 1
        if done or arg == "-" or not arg.startswith("-"):
            operands.append(arg)
        elif arg == "--":
            done = True
        elif arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            matches = [k for k in spec.long if k.startswith(name)] if name else []
            key, takes = spec.long[matches[0]] if len(matches) == 1 else (name, False)
            if takes and not eq:
                value = argv[index] if index < len(argv) else ""
                index += 1
            options.setdefault(key, []).append(value)
        else:
            for pos in range(1, len(arg)):
                letter = arg[pos]
                if letter in spec.short_args:
                    value = arg[pos + 1 :]
                    if not value:
                        value = argv[index] if index < len(argv) else ""
                        index += 1
                    options.setdefault(letter, []).append(value)
                    break
                options.setdefault(letter, []).append("")
    return operands, options


def _base(word: str) -> str:
    return posixpath.basename(word.rstrip("/")) or word


def _protected_literals() -> tuple[str, ...]:
    out: list[str] = []
    for pattern in PROTECTED_WRITE_PATTERNS:
        cut = min((pattern.find(c) for c in _GLOB if c in pattern), default=len(pattern))
        literal = pattern[:cut].rstrip("/")
        if literal:
            out.append(literal)
    return tuple(out)


_PROTECTED_LITERALS = _protected_literals()


class _Collector:
    def __init__(self, workspace: Workspace, cwd: str) -> None:
        self.ws = workspace
        self.cwd = cwd
        self.acts: dict[Act, None] = {}

    def add(self, kind: ActKind, path: str) -> None:
        self.acts[Act(kind, path)] = None

    def resolve(self, kind: ActKind, word: str, *, follow: bool) -> str:
        try:
            if follow or word.endswith("/"):
                return self.ws.resolve(word, cwd=self.cwd)
            parent, _, name = word.rpartition("/")
            if name in ("", ".", ".."):
                return self.ws.resolve(word, cwd=self.cwd)
            if word.startswith("/") and not parent:
                parent = "/"
            base = self.ws.resolve(parent, cwd=self.cwd) if parent else self.ws.resolve(
                "", cwd=self.cwd
            )
            return f"{base}/{name}" if base else name
        except PathEscape as exc:
            raise _Stop(OperandProblem(kind, word, f"{word!r} {exc.reason}")) from exc
        except WorkspaceError as exc:
            raise _Stop(OperandProblem(kind, word, str(exc))) from exc

    def tree(self, rel: str) -> Iterator[str]:
        """Entries under `rel` (relative to it) when it is a real directory, up to the cap."""
        root = self.ws.root.joinpath(*rel.split("/")) if rel else self.ws.root
        try:
            if not stat.S_ISDIR(os.lstat(root).st_mode):
                return
        except OSError:
            return
        count = 0
        stack = [("", str(root))]
        while stack:
            prefix, directory = stack.pop()
            try:
                with os.scandir(directory) as listing:
                    entries = list(listing)
            except OSError:
                continue
            for entry in entries:
                count += 1
                if count > MAX_TREE_ENTRIES:
                    return
                name = f"{prefix}/{entry.name}" if prefix else entry.name
                yield name
                if entry.is_dir(follow_symlinks=False):
                    stack.append((name, entry.path))

    def shadows(self, rel: str) -> None:
        """Write of every protected path that lies under `rel`, whether it exists or not."""
        lowered = rel.lower() + "/"
        for literal in _PROTECTED_LITERALS:
            if not rel or literal.lower().startswith(lowered):
                self.add(ActKind.WRITE, literal)

    def is_dir(self, word: str) -> bool:
        try:
            return self.ws.is_dir(self.ws.resolve(word, cwd=self.cwd))
        except (PathEscape, WorkspaceError):
            return False

    def gone(self, word: str, *, tree: bool) -> str:
        """A path that disappears: Read and Write of it, Write of what it holds."""
        rel = self.resolve(ActKind.WRITE, word, follow=False)
        self.add(ActKind.READ, rel)
        self.add(ActKind.WRITE, rel)
        if tree:
            self.shadows(rel)
            for entry in self.tree(rel):
                self.add(ActKind.WRITE, f"{rel}/{entry}" if rel else entry)
        return rel

    def arrives(self, target_word: str, source_rel: str, *, follow: bool) -> None:
        """`target_word` is created from `source_rel`: Write of it, its tree, its shadows."""
        target = self.resolve(ActKind.WRITE, target_word, follow=False)
        self.add(ActKind.WRITE, target)
        if follow:
            target = self.resolve(ActKind.WRITE, target_word, follow=True)
            self.add(ActKind.WRITE, target)
        self.shadows(target)
        for entry in self.tree(source_rel):
            self.add(ActKind.WRITE, f"{target}/{entry}" if target else entry)


def _destinations(
    col: _Collector, operands: list[str], options: dict[str, list[str]]
) -> tuple[list[str], list[tuple[str, str]]]:
    """(sources, [(source, target word)]) for mv/cp/ln's three calling forms."""
    if "t" in options:
        directory = options["t"][-1]
        col.add(ActKind.WRITE, col.resolve(ActKind.WRITE, directory, follow=True))
        return operands, [(s, f"{directory.rstrip('/')}/{_base(s)}") for s in operands]
    if len(operands) < 2:
        return operands, []
    sources, dest = operands[:-1], operands[-1]
    if "T" not in options and (len(sources) > 1 or col.is_dir(dest)):
        col.add(ActKind.WRITE, col.resolve(ActKind.WRITE, dest, follow=True))
        return sources, [(s, f"{dest.rstrip('/')}/{_base(s)}") for s in sources]
    return sources, [(sources[0], dest)]


def _move_or_copy(col: _Collector, operands: list[str], options: dict[str, list[str]],
                  *, move: bool) -> None:
    sources, pairs = _destinations(col, operands, options)
    resolved: dict[str, str] = {}
    for source in sources:
        if move:
            resolved[source] = col.gone(source, tree=True)
            continue
        rel = col.resolve(ActKind.READ, source, follow=True)
        col.add(ActKind.READ, rel)
        for entry in col.tree(rel):
            col.add(ActKind.READ, f"{rel}/{entry}" if rel else entry)
        resolved[source] = rel
    for source, target in pairs:
        col.arrives(target, resolved[source], follow=not move)


def _link(col: _Collector, operands: list[str], options: dict[str, list[str]]) -> None:
    if len(operands) == 1 and "t" not in options:
        sources, pairs = operands, [(operands[0], _base(operands[0]))]
    else:
        sources, pairs = _destinations(col, operands, options)
    if "s" not in options:  # a hard link shares the file: writing one writes the other
        for source in sources:
            rel = col.resolve(ActKind.WRITE, source, follow=True)
            col.add(ActKind.READ, rel)
            col.add(ActKind.WRITE, rel)
    for _source, target in pairs:
        col.add(ActKind.WRITE, col.resolve(ActKind.WRITE, target, follow=False))


def _simple(col: _Collector, kind: str, operands: list[str], options: dict[str, list[str]]) -> None:
    if kind == "remove":
        recursive = "r" in options or "R" in options
        for word in operands:
            col.gone(word, tree=recursive)
        return
    if kind == "rmdir":
        for word in operands:
            col.gone(word, tree=False)
        return
    for word in options.get("r", []) if kind in ("touch", "truncate") else []:
        col.add(ActKind.READ, col.resolve(ActKind.READ, word, follow=True))
    follow = kind != "mkdir"
    for word in operands:
        col.add(ActKind.WRITE, col.resolve(ActKind.WRITE, word, follow=follow))


def operand_acts(
    argv: tuple[str, ...], cwd: str, workspace: Workspace
) -> tuple[list[Act], OperandProblem | None]:
    """The Read/Write acts of `argv`'s file operands, for the programs that have any.

    Args:
        argv: The stage's argv (its program is matched by basename).
        cwd: The stage's resolved working directory.
        workspace: The resolver (and the tree listed for moved or removed directories).

    Returns:
        The acts in a stable order, and a problem when an operand leaves the root (the
        acts are then incomplete and must not be used).
    """
    if not argv:
        return [], None
    spec = _SPECS.get(argv[0].rpartition("/")[2])  # the basename, without a call per stage
    if spec is None:
        return [], None
    operands, options = _split(argv, spec)
    col = _Collector(workspace, cwd)
    try:
        if spec.kind in ("move", "copy"):
            _move_or_copy(col, operands, options, move=spec.kind == "move")
        elif spec.kind == "link":
            _link(col, operands, options)
        else:
            _simple(col, spec.kind, operands, options)
    except _Stop as stop:
        return list(col.acts), stop.problem
    return list(col.acts), None
