"""`Act`: one thing the agent wants to do, in the five kinds a policy decides.

An act is plain data. Building one checks only that it names something; whether it is
permitted is the policy's business (`Policy.check`), and where a path really lies is
the workspace's (`Workspace.resolve`). This module does no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from harness_core._record import record
from harness_core.errors import PolicyError
from harness_core.policy._patterns import bad_port

__all__ = ["Act", "ActKind"]


class ActKind(Enum):
    """The kinds of act a policy decides. Four reach the system (files, programs, hosts);
    the fifth names a tool of an MCP server, whose effect io cannot see, so its rules
    decide the call itself. There is deliberately no sixth kind."""

    READ = "read"
    """Read a file or list a directory; the target is a path relative to the root."""
    WRITE = "write"
    """Create, replace or delete a file; the target is a path relative to the root."""
    EXEC = "exec"
    """Start a program; the target is the program, `argv` the whole command."""
    NET = "net"
    """Dial a host from this process or a command it starts; the target is ``host:port``
    (or the host alone when the port is not known)."""
    MCP = "mcp"
    """Call a tool of an MCP server; the target is ``server/tool``. Only the ``full``
    tier allows it when no rule names it, as for commands and network."""

    # Members are singletons compared by identity, so the identity hash is consistent
    # with equality; Enum's own hash runs Python code, and every `Act` hash (policy
    # memo, act sets) goes through it.
    __hash__ = object.__hash__


@record
class Act:
    """One act to decide.

    Attributes:
        kind: What kind of act.
        target: For READ/WRITE the path relative to the workspace root (posix,
            normalised by `Workspace.resolve`; ``""`` is the root); for EXEC the
            program (``argv[0]``); for NET ``host:port`` (``[v6addr]:port`` for IPv6),
            or the host alone when the port is not known; for MCP ``server/tool``.
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
    def net(host: str, port: int | None = None) -> Act:
        """Dialling `host` on `port`.

        Args:
            host: ``host``, ``host:port``, ``[v6addr]:port`` or a bare IPv6 address.
            port: The port that will be dialled, when `host` does not carry it. An act
                with no port could reach any port: a net rule that names a port never
                allows it, and a deny rule that names a port refuses it.

        Raises:
            PolicyError: `host` is empty, or a port is not a number from 1 to 65535.
        """
        text = host.strip()
        if not text:
            raise PolicyError("a net act needs a host")
        if port is not None:
            if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
                raise PolicyError(f"a net act's port must be a number from 1 to 65535, not {port!r}")
            if ":" in text and not text.startswith("["):
                text = f"[{text}]"
            return Act(ActKind.NET, f"{text}:{port}")
        if bad_port(text) is not None:
            raise PolicyError(
                f"a net act's port must be a number from 1 to 65535: {host!r}"
            )
        return Act(ActKind.NET, host)

    @staticmethod
    def mcp(server: str, tool: str) -> Act:
        """Calling `tool` of the MCP server named `server`.

        Raises:
            PolicyError: Either name is empty, or the server's name holds a ``/``.
        """
        if not server or not tool or "/" in server:
            raise PolicyError(f"an mcp act names a server and a tool: {server!r}, {tool!r}")
        return Act(ActKind.MCP, f"{server}/{tool}")

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
