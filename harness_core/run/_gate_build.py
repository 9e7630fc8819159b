"""Following a gate's command line through build tools: ``make`` recipes (the named
targets and their prerequisites) and the scripts of ``npm``, ``pnpm``, ``yarn`` and
``bun`` in ``package.json``.

Each function is one step of `harness_core.run._gate_command`'s follower, given the
follower itself (`Follower`); what a recipe or script line starts is followed by the
follower again. This module only reads the workspace; it never runs anything.
"""

from __future__ import annotations

import json
import re
from typing import Protocol

import harness_core.run._gate_words as tables
from harness_core.policy._patterns import GLOB_CHARS
from harness_core.run._gate_shell import recipe

__all__ = ["Follower", "follow_make", "follow_node_manager", "literal"]


class Follower(Protocol):
    """What these steps need of the follower of a gate's command line."""

    found: list[str]

    def runner(self, name: str) -> None: ...
    def fail(self, what: str) -> None: ...
    def local(self, word: str) -> str | None: ...
    def is_file(self, rel: str) -> bool: ...
    def text(self, rel: str) -> str: ...
    def shell_text(self, text: str, depth: int) -> None: ...


def literal(path: str) -> str:
    """`path` as a pattern matching only itself."""
    return "".join("\\" + c if c in GLOB_CHARS else c for c in path)


def follow_node_manager(follow: Follower, name: str, args: list[str], depth: int) -> None:
    """``npm test``, ``yarn run x``, ``npx jest`` …: the package script, or the runner."""
    follow.runner("node")
    if name == "npx" or args[:1] in (["exec"], ["dlx"], ["x"]):
        rest = args[1:] if name != "npx" else args
        rest = [a for a in rest if not a.startswith("-")]
        if rest and rest[0] in tables.PROGRAMS:
            follow.runner(tables.PROGRAMS[rest[0]])
        elif rest:
            follow.fail(f"{name} {rest[0]}")
        return
    script = args[1] if args[:1] in (["run"], ["run-script"]) and len(args) > 1 else \
        "test" if args[:1] in (["test"], ["t"], []) and name != "bun" else None
    if script is None:
        if name == "bun" and args[:1] == ["test"]:
            return
        if name == "yarn" and args and not args[0].startswith("-"):
            script = args[0]
        else:
            follow.fail(" ".join([name, *args[:1]]))
            return
    _package_script(follow, script, depth)


def _package_script(follow: Follower, script: str, depth: int) -> None:
    try:
        data = json.loads(follow.text("package.json") or "{}")
    except ValueError:
        data = {}
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return  # no script: the gate fails (and a package.json written later is an input)
    for name in (f"pre{script}", script, f"post{script}"):
        line = scripts.get(name)
        if isinstance(line, str):
            follow.shell_text(line, depth + 1)


def follow_make(follow: Follower, args: list[str], depth: int) -> None:
    """``make [-f FILE] [TARGET …]``: the makefile, what it includes, the recipes."""
    makefile, targets, i = None, [], 0
    while i < len(args):
        if args[i] in ("-f", "--file", "--makefile") and i + 1 < len(args):
            makefile, i = args[i + 1], i + 2
            continue
        if args[i] in ("-C", "--directory"):
            follow.fail("make -C")
            return
        if not args[i].startswith("-") and "=" not in args[i]:
            targets.append(args[i])
        i += 1
    names = [makefile] if makefile else ["GNUmakefile", "makefile", "Makefile"]
    rel = next((r for n in names if (r := follow.local(n)) and follow.is_file(r)), None)
    if rel is None:
        follow.fail("make (no Makefile)")
        return
    follow.runner("make")
    follow.found.append(literal(rel))
    text = follow.text(rel)
    for include in re.findall(r"^-?s?include\s+(.+)$", text, re.M):
        follow.found.extend(literal(w) for w in include.split() if "$" not in w)
    for line in recipe(text, targets):
        follow.shell_text(line.lstrip("@-+ \t"), depth + 1)
