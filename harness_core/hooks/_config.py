"""What a configured hook is: its event, its command, which tools it watches, its scope.

Plain data and pure functions: nothing here starts a process or reads a file (except
`hook_files`, which looks at which paths exist). A hook's scope decides where it runs:
one from the project scope (io.toml, io.local.toml, a `--config` file) runs in the
sandbox, one from the user or system scope on the host.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from enum import Enum
from pathlib import Path

from harness_core._record import record
from harness_core.errors import ConfigError

__all__ = ["HOOK_LAYER", "HookConfig", "HookEvent", "hook_files", "tool_names"]

HOOK_LAYER = "hook"
"""The layer of every decision a hook takes (`policy_events.layer`, refusals)."""

DEFAULT_TIMEOUT_S = 30.0
"""Seconds a hook may take when `timeout_s` is not set: long enough for a linter on one
file, short enough that a hung hook does not hold a run for long."""


class HookEvent(Enum):
    """When a hook runs. May grow."""

    RUN_START = "run_start"
    """A drive of the run begins (a fresh start or a resume). May deny the run, or add
    context for the model."""
    PRE_TOOL = "pre_tool"
    """Before a tool call runs. May deny it or ask for approval."""
    POST_TOOL = "post_tool"
    """After a tool call ran, before the model sees its observation. May add context."""
    PRE_COMPACT = "pre_compact"
    """Before the context is compacted. May refuse the compaction or add instructions."""
    STOP = "stop"
    """The model says it is done. May refuse the stop with a reason to go on."""
    CHILD_STOP = "child_stop"
    """A child run of the agent tree ended. May add context to the parent's observation."""

    @property
    def is_tool_event(self) -> bool:
        """Whether the event belongs to one tool call (a `matcher` applies)."""
        return self in (HookEvent.PRE_TOOL, HookEvent.POST_TOOL)


_SANDBOXED_SCOPES = frozenset({"project", "local"})


@record
class HookConfig:
    """One `[[hooks]]` entry.

    Attributes:
        event: When it runs.
        command: The program and its arguments (no shell); relative paths are resolved
            in the workspace, its working directory.
        name: Its name in the trace and the store (unique in a run).
        scope: The configuration scope it came from: ``system``, ``user``, ``project``
            or ``local`` (``project`` and ``local`` hooks run in the sandbox).
        matcher: A glob on the tool name (`pre_tool`/`post_tool`); an MCP tool matches
            as ``mcp__server__tool`` and as ``server/tool``.
        timeout_s: Seconds before the hook is killed (a `pre_tool` timeout is a deny).

    Raises:
        ConfigError: An empty command or name, a timeout not above zero, or a matcher on
            an event that has no tool.
    """

    event: HookEvent
    command: tuple[str, ...]
    name: str
    scope: str = "project"
    matcher: str = "*"
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        if not self.command or not all(self.command):
            raise ConfigError(f"hook {self.name!r}: `command` must name a program (a non-empty"
                              " list of non-empty strings)")
        if not self.name:
            raise ConfigError("a hook's name must not be empty")
        if not self.timeout_s > 0:
            raise ConfigError(f"hook {self.name!r}: `timeout_s` must be more than 0")
        if self.matcher != "*" and not self.event.is_tool_event:
            raise ConfigError(f"hook {self.name!r}: `matcher` applies to pre_tool and post_tool"
                              f" hooks only, not to {self.event.value}")

    @property
    def sandboxed(self) -> bool:
        """Whether it runs in the sandbox (a project-scope hook) rather than on the host."""
        return self.scope in _SANDBOXED_SCOPES

    def matches(self, tool: str) -> bool:
        """Whether this hook watches calls of `tool`."""
        return any(fnmatch.fnmatchcase(name, self.matcher) for name in tool_names(tool))

    def to_json(self) -> dict[str, object]:
        """What the run records about the hook (no environment, no output)."""
        return {"event": self.event.value, "name": self.name, "scope": self.scope,
                "command": list(self.command), "matcher": self.matcher,
                "timeout_s": self.timeout_s}


def tool_names(tool: str) -> tuple[str, ...]:
    """The names a matcher tries: the tool's own, and ``server/tool`` for an MCP tool
    (``mcp__server__tool``)."""
    if tool.startswith("mcp__"):
        server, sep, rest = tool[len("mcp__"):].partition("__")
        if sep and server and rest:
            return (tool, f"{server}/{rest}")
    return (tool,)


def _names_file(arg: str, index: int, path: Path) -> bool:
    if path.is_dir():
        return False  # a directory argument (`ruff format src`) is data, not the hook
    if path.exists() or path.is_symlink():
        return True
    # A path that does not exist yet still names the hook's file when it reads as a
    # path: the agent must not be able to create it and have the hook run it.
    return "/" in arg or (index == 0 and arg.startswith("."))


def hook_files(workspace: Path, hooks: Iterable[HookConfig]) -> tuple[str, ...]:
    """The workspace files hooks' commands name (posix, relative to the root).

    Every argument that resolves inside the workspace and names a file (one that exists,
    or a path written with a slash) counts: the program itself, a script given to an
    interpreter, a configuration file. Directories do not. The folder such a file lies in
    counts too, as ``folder/**``, unless it is the workspace root: a module planted
    beside a hook's script (``hooks/json.py``) must not be importable by it. These become
    protected inputs: no tool and no sandboxed command may write, create or rename them.
    """
    root = Path(os.path.realpath(workspace))
    out: list[str] = []
    for hook in hooks:
        for index, arg in enumerate(hook.command):
            if index > 0 and arg.startswith("-"):
                continue
            candidate = Path(arg) if os.path.isabs(arg) else root / arg
            lexical = Path(os.path.normpath(candidate))
            for path in (lexical, Path(os.path.realpath(candidate))):
                if path == root or not path.is_relative_to(root):
                    continue
                if _names_file(arg, index, path):
                    out.append(path.relative_to(root).as_posix())
                    if path.parent != root:
                        out.append(path.parent.relative_to(root).as_posix() + "/**")
    return tuple(dict.fromkeys(out))
