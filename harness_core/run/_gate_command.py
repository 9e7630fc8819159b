"""What a gate's command line reads, worked out from the command itself.

A gate command is split like a shell word list and started without a shell. This
module follows it the way it will run: through wrappers (``env``, ``timeout``,
``uv run`` …), interpreters (``python -m``, ``sh -c``, a script in the workspace),
``make`` recipes and ``npm`` scripts (`harness_core.run._gate_build`), down to the
programs that judge, and collects
the path patterns (`harness_core.toolchain.RUNNER_INPUTS`) of what each of them reads
beyond the code under test. A program file in the workspace that the gate runs is an
input too, and so is the folder it lies in (``scripts/**`` for ``python
scripts/verify.py``; not the root): a module planted beside a script must not be
importable by it.

A program or script the command runs that does not exist is *missing*: the agent could
write it later and the gate would run what the agent wrote, so the caller refuses the
gate before the run starts (`CommandInputs.missing`). A bare program name counts as
missing when it is neither a shell builtin nor found on the gate's PATH.

Each program is *known* (a runner io has a table for, or a plain program such as
``true``, ``test`` or ``grep`` whose only workspace reads are its operands) or not. A
command with an unknown program cannot be accounted for: the caller refuses it unless
the workspace's toolchain markers or an explicit ``inputs = [...]`` say what it reads.
This module only reads the workspace; it never runs anything.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import field
from pathlib import Path

import harness_core.run._gate_words as tables
from harness_core._record import record
from harness_core.errors import PathEscape, WorkspaceError
from harness_core.run._gate_build import follow_make, follow_node_manager, literal
from harness_core.run._gate_shell import after_options, simple_commands
from harness_core.toolchain import RUNNER_INPUTS
from harness_core.workspace import Workspace

__all__ = ["CommandInputs", "command_inputs", "literal"]


@record
class CommandInputs:
    """What following a gate command found.

    Attributes:
        patterns: Path patterns of what it reads (policy dialect, relative to the root).
        unknown: The first program io could not account for (None: every one known).
        missing: Programs and scripts it runs that do not exist, as the command names
            them.
    """

    patterns: tuple[str, ...]
    unknown: str | None = None
    missing: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        """Whether every program the command starts is accounted for."""
        return self.unknown is None


@record(frozen=False)
class _Follow:
    workspace: Workspace
    path_env: str
    found: list[str] = field(default_factory=list)
    unknown: str | None = None
    missing: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def runner(self, name: str) -> None:
        self.found.extend(RUNNER_INPUTS[name])

    def fail(self, what: str) -> None:
        if self.unknown is None:
            self.unknown = what

    # -- where a program lives ------------------------------------------------------

    def local(self, word: str) -> str | None:
        """The workspace path `word` names (relative to the root), or None."""
        try:
            rel = self.workspace.resolve(word)
        except (PathEscape, WorkspaceError, ValueError):
            return None
        return rel or None

    def program(self, word: str) -> str | None:
        """The workspace path of a program: `word` resolved, or, when it is a link that
        leads out of the workspace (a virtual environment's ``bin/python``), the link."""
        rel = self.local(word)
        if rel is not None or "/" not in word.rstrip("/"):
            return rel
        head, _, name = word.rstrip("/").rpartition("/")
        parent = self.local(head) if head else None
        return f"{parent}/{name}" if parent is not None and name not in ("", ".", "..") \
            else None

    def on_path(self, name: str) -> str | None:
        """The workspace file a bare program name resolves to on PATH, if it is one.

        Where the name would be found ahead of that, in a PATH entry inside the
        workspace, is an input: a program planted there would run instead."""
        root = Path(self.workspace.root)
        for entry in (self.path_env or os.defpath).split(os.pathsep):  # no PATH: the default
            base = Path(entry) if os.path.isabs(entry) else root / (entry or ".")
            candidate = base / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return self.program(str(candidate))
            if (ahead := self.program(str(candidate))) is not None:
                self.found.append(literal(ahead))
        return None

    def program_file(self, rel: str) -> None:
        """A program in the workspace: it is an input, and so are its folder and the
        environment it is in."""
        self.runs(rel)
        parts = rel.split("/")
        for depth in range(len(parts) - 1, 0, -1):
            if self.is_file("/".join(parts[:depth]) + "/pyvenv.cfg"):
                self.found.append(literal("/".join(parts[:depth])) + "/**")
                break

    def runs(self, rel: str) -> None:
        """A file the command runs: it is an input, and so is its folder (not the root)."""
        self.found.append(literal(rel))
        folder = rel.rpartition("/")[0]
        if folder:
            self.found.append(literal(folder) + "/**")

    def exists(self, word: str, rel: str | None) -> bool:
        """Whether the script `word` (in the workspace at `rel`, or outside it) exists;
        one that does not is noted as missing."""
        if rel is not None:
            there = self.present(rel)
        else:
            there = not os.path.isabs(word) or os.path.isfile(word)
        if not there:
            self.missing.append(word)
        return there

    def found_on_path(self, name: str) -> bool:
        """Whether the bare program `name` exists for the gate (a builtin, or on PATH)."""
        if name in tables.BUILTINS:
            return True
        root = str(self.workspace.root)
        entries = [e if os.path.isabs(e) else os.path.join(root, e or ".")
                   for e in (self.path_env or os.defpath).split(os.pathsep)]
        return shutil.which(name, path=os.pathsep.join(entries)) is not None

    def present(self, rel: str) -> bool:
        """Whether `rel` names a file now, through a link (a virtual environment's
        ``bin/python`` leads out of the workspace); a dangling link names none."""
        return os.path.isfile(os.path.join(str(self.workspace.root), rel))

    def is_file(self, rel: str) -> bool:
        """Whether `rel` is a regular file in the workspace (a link is not followed)."""
        try:
            return self.workspace.is_file(rel)
        except (PathEscape, WorkspaceError):
            return False

    def text(self, rel: str) -> str:
        try:
            return self.workspace.read_bytes(rel)[:tables.MAX_SCRIPT].decode("utf-8", "replace")
        except (WorkspaceError, PathEscape):
            return ""

    # -- argv -------------------------------------------------------------------------

    def argv(self, words: list[str], depth: int) -> None:
        if not words:
            return
        if depth > tables.MAX_DEPTH:
            self.fail(words[0])
            return
        program, args = words[0], words[1:]
        rel = self.program(program) if "/" in program else self.on_path(program)
        name = os.path.basename(program)
        if rel is None:
            path = os.path.join(str(self.workspace.root), program)  # an absolute one stays
            if "/" in program and not os.access(path, os.X_OK) \
                    or "/" not in program and not self.found_on_path(program):
                self.missing.append(program)
            self.named(name, args, depth)
        elif not self.present(rel):
            self.missing.append(program)
            self.fail(program)
        elif tables.is_known(name):
            self.program_file(rel)
            self.named(name, args, depth)
        else:
            self.script(rel, depth)

    def named(self, name: str, args: list[str], depth: int) -> None:
        """A program by name (not a file in the workspace): follow it or judge it."""
        if tables.starts_or_moves(name, args):
            self.fail(" ".join([name, *args]))
        elif name in tables.WRAPPERS:
            self.argv(after_options(args, tables.WRAPPERS[name], assignments=name == "env",
                                     counts=name == "timeout"), depth)
        elif name in tables.RUNNERS_WITH_RUN or name == "coverage":
            self.project_runner(name, args, depth)
        elif tables.PYTHON_NAME.match(name):
            self.python(args, depth)
        elif name in tables.SHELLS:
            self.shell(args, depth)
        elif name in tables.NODE_MANAGERS:
            follow_node_manager(self, name, args, depth)
        elif name in ("node", "make", "gmake"):
            self.node(args, depth) if name == "node" else follow_make(self, args, depth)
        elif name in tables.PROGRAMS:
            self.runner(tables.PROGRAMS[name])
            self.plugins(name, args)
        elif name not in tables.PLAIN:
            self.fail(name)

    def project_runner(self, name: str, args: list[str], depth: int) -> None:
        """``uv run …``, ``poetry run …``, ``coverage run …``: the project's files (or
        coverage's), then what runs."""
        self.runner(name)
        if name == "coverage":
            if args[:1] == ["run"]:
                self.python(args[1:], depth)
        elif args[:1] == ["run"] and (rest := after_options(args[1:], tables.RUN_OPTIONS)):
            self.argv(rest, depth)
        elif name == "hatch" and args[:1] == ["test"]:
            self.runner("pytest")
        else:
            self.fail(" ".join([name, *args[:1]]))

    def python(self, args: list[str], depth: int) -> None:
        self.runner("python")
        i = 0
        while i < len(args) and args[i].startswith("-") and args[i] not in ("-m", "-c", "-"):
            i += 2 if args[i] in tables.PYTHON_VALUED else 1
        if i >= len(args) or args[i] in ("-c", "-"):
            return
        if args[i] == "-m":
            module = args[i + 1] if i + 1 < len(args) else ""
            rest = args[i + 2:]
            runner = tables.PYTHON_MODULES.get(module)
            if runner is not None:
                self.runner(runner)
                self.plugins(runner, rest)
            elif module == "coverage":
                self.named("coverage", rest, depth)
            elif (rel := self.module_file(module)) is not None:
                self.found.append(literal(rel))
            else:  # installed, or not there yet: where the agent would plant it is an input
                top = literal(module.split(".")[0])
                self.found.extend((f"{top}.py", f"{top}/**") if top else ())
                self.fail(f"python -m {module}")
            return
        rel = self.local(args[i])
        if self.exists(args[i], rel) and rel is not None:
            self.runs(rel)

    def module_file(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for rel in (f"{base}.py", f"{base}/__main__.py"):
            if module and self.is_file(rel):
                return base + ("/**" if rel.endswith("__main__.py") else ".py")
        return None

    def plugins(self, runner: str, args: list[str]) -> None:
        """pytest plugins named by ``-p`` here or in the configuration files."""
        if runner not in ("pytest", "tox", "nox"):
            return
        names: list[str] = []
        for i, word in enumerate(args):
            if word == "-p" and i + 1 < len(args):
                names.append(args[i + 1])
            elif word.startswith("-p") and len(word) > 2:
                names.append(word[2:])
        for config in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "tox.ini",
                       "setup.cfg", "pyproject.toml"):
            names += tables.PLUGIN.findall(self.text(config)) if self.is_file(config) else []
        for conftest in ("conftest.py", "tests/conftest.py"):
            if self.is_file(conftest):
                for listed in tables.PLUGINS_LIST.findall(self.text(conftest)):
                    names += tables.NAME.findall(listed)
        for name in names:
            if name and not name.startswith("no:"):
                base = literal(name.replace(".", "/"))
                self.found.extend((base + ".py", base + "/**"))

    # -- scripts and shells -------------------------------------------------------------

    def script(self, rel: str, depth: int) -> None:
        """A program file in the workspace, run directly: its ``#!`` line says how."""
        if not self.is_file(rel):
            self.fail(rel)
            return
        self.program_file(rel)
        if rel in self.seen:
            return
        self.seen.add(rel)
        first = self.text(rel).split("\n", 1)[0]
        interpreter = shlex.split(first[2:]) if first.startswith("#!") else []
        if interpreter and os.path.basename(interpreter[0]) == "env":
            interpreter = [w for w in interpreter[1:] if not w.startswith("-")]
        name = os.path.basename(interpreter[0]) if interpreter else ""
        if name in tables.SHELLS:
            self.shell_text(self.text(rel), depth + 1)
        elif tables.PYTHON_NAME.match(name):
            self.runner("python")
        elif name == "node":
            self.runner("node")
        else:
            self.fail(rel)

    def shell(self, args: list[str], depth: int) -> None:
        self.runner("shell")
        i = 0
        while i < len(args) and args[i].startswith(("-", "+")) and args[i] != "-c":
            i += 2 if args[i] in ("-o", "+o") else 1
        if i < len(args) and args[i] == "-c":
            if i + 1 < len(args):
                self.shell_text(args[i + 1], depth + 1)
            return
        if i < len(args) and (rel := self.local(args[i])) is not None:
            self.script_text(rel, depth)
        elif i < len(args):
            self.exists(args[i], None)
            self.fail(args[i])

    def script_text(self, rel: str, depth: int) -> None:
        if not self.exists(rel, rel):
            self.fail(rel)
            return
        self.runs(rel)
        if rel not in self.seen:
            self.seen.add(rel)
            self.shell_text(self.text(rel), depth + 1)

    def shell_text(self, text: str, depth: int) -> None:
        for line in text.replace("\\\n", " ").split("\n"):
            for command in simple_commands(line):
                if command is None:
                    self.fail(line.strip())
                    return
                self.simple(command, depth)

    def simple(self, words: list[str], depth: int) -> None:
        while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
            words = words[1:]
        if not words:
            return
        if any(c in words[0] for c in "$`*?"):
            self.fail(" ".join(words))
        elif words[0] in (".", "source") and len(words) > 1:
            rel = self.local(words[1])
            self.script_text(rel, depth) if rel is not None else self.fail(words[1])
        else:
            self.argv(words, depth)

    # -- node -------------------------------------------------------------------------

    def node(self, args: list[str], depth: int) -> None:
        self.runner("node")
        operands = [a for a in args if not a.startswith("-")]
        if operands and self.exists(operands[0], rel := self.local(operands[0])) \
                and rel is not None:
            self.runs(rel)


def command_inputs(command: str, workspace: Workspace, path_env: str = "") -> CommandInputs:
    """Follow `command` (a gate's command line) to the programs it starts.

    Args:
        command: The command line, split with shell-like quoting.
        workspace: The workspace it runs in.
        path_env: The PATH it runs with (a program found in the workspace is an input).

    Returns:
        The patterns of what it reads, and the first program io could not account for.
    """
    follow = _Follow(workspace, path_env)
    try:
        words = shlex.split(command)
    except ValueError:
        return CommandInputs((), command)
    if not words:
        return CommandInputs((), command or "(empty command)")
    follow.argv(words, 0)
    return CommandInputs(tuple(dict.fromkeys(follow.found)), follow.unknown,
                         tuple(dict.fromkeys(follow.missing)))
