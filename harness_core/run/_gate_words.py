"""The tables `_gate_command` follows a gate's command line by: the plain programs, the
wrappers, the project runners, interpreters and package managers it knows."""

from __future__ import annotations

import re

__all__ = ["PLAIN", "_STARTS_PROGRAMS", "WRAPPERS", "RUNNERS_WITH_RUN", "RUN_OPTIONS", "PYTHON_MODULES", "PROGRAMS", "PYTHON_NAME", "PYTHON_VALUED", "SHELLS", "NODE_MANAGERS", "MAX_DEPTH", "MAX_SCRIPT", "PLUGIN", "PLUGINS_LIST", "NAME", "BUILTINS", "is_known", "starts_or_moves"]

PLAIN = frozenset({
    "true", "false", ":", "exit", "echo", "printf", "test", "[", "sleep", "seq", "yes",
    "date", "pwd", "basename", "dirname", "expr", "grep", "egrep", "fgrep", "cat", "head",
    "tail", "wc", "diff", "cmp", "ls", "stat", "file", "jq", "sha256sum", "sha1sum",
    "md5sum", "cksum", "sort", "uniq", "cut", "tr", "sed", "find", "set", "export",
    "unset", "shopt", "return", "cd",
})
"""Programs and shell builtins whose only workspace reads are the operands they name
(``awk`` is not one: its ``system()`` starts anything)."""
BUILTINS = frozenset({":", "exit", "set", "export", "unset", "shopt", "return", "cd",
                      "command", "exec", "time", "true", "false", "echo", "printf", "test",
                      "[", "pwd"})
"""Shell builtins: a gate line may name one with no program file behind it."""
_STARTS_PROGRAMS = {"find": {"-exec", "-execdir", "-ok", "-okdir"}, "cd": set(),
                    "env": {"-C", "--chdir"}}
"""Options with which a plain program starts another one, or moves where the rest runs
(``cd`` anywhere but ``.``): what follows is not followed, so it is unknown."""
WRAPPERS = {"env": {"-u", "--unset", "-C", "--chdir", "-S"}, "timeout": {"-s", "--signal",
             "-k", "--kill-after"}, "nice": {"-n", "--adjustment"}, "nohup": set(),
             "time": set(), "command": set(), "exec": set(), "stdbuf": set()}
"""Programs that start the rest of their argv, with their options that take a value."""
RUNNERS_WITH_RUN = frozenset({"uv", "poetry", "pdm", "pipenv", "hatch", "rye"})
RUN_OPTIONS = frozenset({"--with", "--python", "-p", "--extra", "--group", "--package",
                          "--env", "-e", "--directory", "--project", "--index"})
PYTHON_MODULES = {"pytest": "pytest", "py.test": "pytest", "unittest": "unittest",
                   "tox": "tox", "nox": "nox", "mypy": "mypy", "ruff": "ruff",
                   "flake8": "flake8", "black": "black", "pylint": "pylint"}
PROGRAMS = {**PYTHON_MODULES, "pyright": "pyright", "eslint": "eslint", "tsc": "tsc",
             "prettier": "prettier", "jest": "node", "vitest": "node", "mocha": "node",
             "cargo": "cargo", "go": "go"}
PYTHON_NAME = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)?)?$")
PYTHON_VALUED = frozenset({"-W", "-X", "-Q"})
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
NODE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun", "npx"})
MAX_DEPTH = 4
"""Scripts, recipes and package scripts followed into at most this deep."""
MAX_SCRIPT = 256 * 1024
PLUGIN = re.compile(r"-p[\s\"',]*([A-Za-z_][\w.]*)")
"""``-p NAME`` in an ``addopts`` line, also spelled as a TOML array (``["-p", "NAME"]``)."""
PLUGINS_LIST = re.compile(r"pytest_plugins\s*=\s*[\[(]?([^\n\])]*)")
NAME = re.compile(r"['\"]([A-Za-z_][\w.]*)['\"]")


def starts_or_moves(name: str, args: list[str]) -> bool:
    if name == "cd":
        return args[:1] not in ([], ["."], ["./"])
    options = _STARTS_PROGRAMS.get(name, set())
    return any(a.split("=", 1)[0] in options for a in args)


def is_known(name: str) -> bool:
    return bool(PYTHON_NAME.match(name)) or name in PROGRAMS or name in SHELLS \
        or name in NODE_MANAGERS or name in RUNNERS_WITH_RUN or name in ("node", "make")
