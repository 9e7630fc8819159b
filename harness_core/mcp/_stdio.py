"""A local MCP server's transport: a process spoken to over stdio, and its cleanup.

A local server runs outside the command sandbox, with this process's privileges, as
the leader of its own session, and dials what it likes: the policy decides its start
(an exec act), not what it then does. Its environment is not this process's: the
default variables (PATH, HOME, LANG …) taken from the `env` mapping the caller passes,
then the server's own `[[mcp]] env` table over them. The SDK also fills in a short list
of harmless names (HOME, LOGNAME, PATH, SHELL, TERM, USER) from the real environment
when they are missing; an API key reaches a server only when the operator put it in
that server's table. Every server carries the session's marker variable, so
`kill_marked` finds a grandchild that left the process group too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, suppress
from pathlib import Path
from typing import Any

import psutil

from harness_core.host import stdio_transport
from harness_core.mcp._server import Opener, ServerHandle
from harness_core.sandbox._process import scrub_env
from harness_core.tool_servers import McpServerConfig

__all__ = ["SESSION_MARKER", "kill_marked", "server_environment", "stdio_opener"]

SESSION_MARKER = "IO_MCP_SESSION"
"""Set in every server's environment to a per-session token; `close` kills what carries it."""

_KILL_WAIT = 5.0
"""Seconds `kill_marked` waits for killed stragglers to die (SIGKILL lands within ms)."""


def server_environment(config: McpServerConfig, env: Mapping[str, str]) -> dict[str, str]:
    """The environment a server starts with: the default names from `env`, then its own table.

    Args:
        config: The server (its `env` table wins over the base).
        env: The caller's environment; only PATH, HOME, LANG, LC_*, TERM, TZ and TMPDIR
            are taken from it.

    Returns:
        A new mapping.
    """
    out = scrub_env(env)
    out.update(config.env)
    return out


def stdio_opener(program: str, env: dict[str, str], cwd: Path) -> Opener:
    """The opener of a local server: `program` with the config's args, in `cwd` (never the
    workspace: `McpSession` checks the command and picks the folder through
    `harness_core.host`)."""

    def open_stdio(server: ServerHandle) -> AbstractAsyncContextManager[tuple[Any, Any]]:
        opened: AbstractAsyncContextManager[tuple[Any, Any]] = stdio_transport(
            program, server.config.args, env, cwd, server.errlog)
        return opened

    return open_stdio


def kill_marked(token: str) -> None:
    """Kill every process whose environment carries `token`, ours or reparented away,
    and wait (bounded) until each is gone or only a zombie left for its parent to reap."""
    me = os.getpid()
    killed: list[psutil.Process] = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        with suppress(psutil.Error, OSError):
            if proc.environ().get(SESSION_MARKER) == token:
                proc.kill()
                killed.append(proc)
    deadline = time.monotonic() + _KILL_WAIT
    while killed and time.monotonic() < deadline:
        killed = [p for p in killed if _still_running(p)]
        if killed:
            time.sleep(0.01)


def _still_running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
