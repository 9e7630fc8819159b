"""`Act`: one thing the agent wants to do, in the four kinds a policy decides.

An act is plain data. Building one checks only that it names something; whether it is
permitted is the policy's business (`Policy.check`), and where a path really lies is
the workspace's (`Workspace.resolve`). This module does no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from harness_core.errors import PolicyError

__all__ = ["Act", "ActKind"]


class ActKind(Enum):
    """The kinds of act a policy decides. There is deliberately no fifth kind."""

    READ = "read"
    """Read a file or list a directory; the target is a path relative to the root."""
    WRITE = "write"
    """Create, replace or delete a file; the target is a path relative to the root."""
    EXEC = "exec"
    """Start a program; the target is the program, `argv` the whole command."""
    NET = "net"
    """Dial a host from this process or a command it starts; the target is the host."""

    # Members are singletons compared by identity, so the identity hash is consistent
    # with equality; Enum's own hash runs Python code, and every `Act` hash (policy
    # memo, act sets) goes through it.
    __hash__ = object.__hash__


@dataclass(frozen=True)
class Act:
    """One act to decide.

    Attributes:
        kind: What kind of act.
        target: For READ/WRITE the path relative to the workspace root (posix,
            normalised by `Workspace.resolve`; ``""`` is the root); for EXEC the
            program (``argv[0]``); for NET the host (a port is ignored when matching).
        argv: For EXEC, the whole command; empty for the other kinds.
    """

    kind: ActKind
    target: str
    argv: tuple[str, ...] = ()

    @staticmethod
    def read(path: str) -> Act:
        """Reading `path` (relative to the workspace root)."""
        return Act(ActKind.READ, path)

    @staticmethod
    def write(path: str) -> Act:
        """Writing `path` (relative to the workspace root)."""
        return Act(ActKind.WRITE, path)

    @staticmethod
    def exec(argv: Sequence[str]) -> Act:
        """Running the command `argv`.

        Raises:
            PolicyError: `argv` is empty or its program is an empty string.
        """
        args = tuple(argv)
        if not args or not args[0]:
            raise PolicyError("an exec act needs a program name")
        return Act(ActKind.EXEC, args[0], args)

    @staticmethod
    def net(host: str) -> Act:
        """Dialling `host` (``host`` or ``host:port``).

        Raises:
            PolicyError: `host` is empty.
        """
        if not host.strip():
            raise PolicyError("a net act needs a host")
        return Act(ActKind.NET, host)

    @property
    def command(self) -> tuple[str, ...]:
        """For EXEC, the argv (the target alone when none was given)."""
        return self.argv if self.argv else (self.target,)

    def describe(self) -> str:
        """One line for traces and refusals: ``write src/a.py``, ``exec git push origin``."""
        if self.kind is ActKind.EXEC:
            return f"exec {' '.join(self.command)}"
        target = self.target if self.target else "."
        return f"{self.kind.value} {target}"
