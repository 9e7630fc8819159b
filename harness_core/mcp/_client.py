"""McpSession: start the configured stdio MCP servers for one run, and stop them after.

Starting a server is an act. Before anything is spawned, `gate.check(Act.exec(argv))`
decides it through the run's one gate, the same check the `exec` tool makes on a
command. A refusal is not an exception: the server is not started, the gate has
recorded the refusal with its rule and layer, and the session lists it in `refusals`.
A server that cannot start (no such program, it exits, it does not answer
``initialize`` in time) is listed in `failures`. Either way the run goes on without
that server's tools.

What the policy decides is the start, not what the server then does. A server runs
outside the command sandbox, with this process's privileges, as the leader of its own
session, and dials what it likes: the sandbox denies network egress, and most servers
exist to reach something. Its environment is not this process's: the default
variables (PATH, HOME, LANG …) taken from the `env` mapping the caller passes, then the
server's own `[[mcp]] env` table over them. The SDK also fills in a short list of
harmless names (HOME, LOGNAME, PATH, SHELL, TERM, USER) from the real environment when
they are missing; an API key reaches a server only when the operator put it in that
server's table.

The `mcp` SDK is imported only inside `start`, and only once a server has passed the
gate; the asyncio side (one loop thread, one task per server) is
`harness_core.mcp._server`.

`close` asks every server to stop the SDK's way (stdin closed; SIGTERM then SIGKILL to
its process group if it lingers), then kills any process still carrying this session's
marker variable (`IO_MCP_SESSION`), so a grandchild that left the group is found too.
Nothing here writes to the terminal: a server's stderr goes to a temporary file whose
tail is quoted when the server fails, and the SDK's logger gets a null handler.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import CancelledError
from contextlib import suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import psutil

from harness_core.errors import ConfigError, PolicyError, ToolError
from harness_core.mcp._config import McpServerConfig
from harness_core.mcp._server import EventLoopThread, ServerHandle, call, serve
from harness_core.mcp._tools import McpCallResult, McpTool, tool_name
from harness_core.policy import Act, Decision, Verdict
from harness_core.sandbox._process import resolve_program, scrub_env
from harness_core.tools import ActGate, PauseRequested, Tool
from harness_core.workspace import Workspace

__all__ = ["SESSION_MARKER", "McpFailure", "McpRefusal", "McpSession", "server_environment"]

SESSION_MARKER = "IO_MCP_SESSION"
"""Set in every server's environment to a per-session token; `close` kills what carries it."""

INSTALL_HINT = "pip install 'io-harness[mcp]'"

_START_GRACE = 10.0
"""Seconds a caller waits past `timeout` for a failed start to unwind (the SDK's own
shutdown is bounded at about 6 s: 2 s after stdin closes, 2 s after SIGTERM, 2 s to reap)."""
_STOP_WAIT = 10.0
"""Seconds `close` gives the servers to stop the SDK's way before cancelling them."""
_KILL_WAIT = 5.0
"""Seconds `close` waits for killed stragglers to die (SIGKILL lands within milliseconds)."""
_CALL_GRACE = 5.0
"""Seconds past a call's own timeout before the caller stops waiting for the loop."""


@dataclass(frozen=True)
class McpRefusal:
    """A server the policy did not let start.

    Attributes:
        server: The server's configured name.
        act: The exec act that was checked (its command and arguments).
        decision: The gate's decision, with the rule and layer that decided.
    """

    server: str
    act: Act
    decision: Decision

    def describe(self) -> str:
        """One line: which server, what was refused, why, and by which rule and layer."""
        where = f" (rule {self.decision.rule!r}, layer {self.decision.layer})" if (
            self.decision.rule) else (f" (layer {self.decision.layer})"
                                      if self.decision.layer else "")
        return (f"MCP server {self.server!r} not started: {self.act.describe()}:"
                f" {self.decision.reason}{where}")


@dataclass(frozen=True)
class McpFailure:
    """A server the policy allowed that did not start (or stopped answering at start).

    Attributes:
        server: The server's configured name.
        message: What went wrong, with the tail of the server's stderr when it wrote any.
    """

    server: str
    message: str


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


def _load_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"[[mcp]] servers need the MCP SDK, which is not installed: {INSTALL_HINT}",
            hint=INSTALL_HINT,
        ) from exc
    # A library must not print: without this, the SDK's warnings reach stderr through
    # logging's last-resort handler and tear the live trace.
    logger = logging.getLogger("mcp")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _decide(gate: ActGate, act: Act) -> Decision:
    try:
        return gate.check(act)
    except PauseRequested as pause:
        # Nothing can answer an approval before the run exists, so an `ask` left
        # unanswered keeps the server off; an allow rule lets it start unattended.
        payload = pause.payload
        rule, layer, reason = payload.get("rule"), payload.get("layer"), payload.get("reason")
        return Decision(
            Verdict.DENY,
            f"needs approval, which nobody can give before the run starts ({reason})",
            rule if isinstance(rule, str) else None,
            layer if isinstance(layer, str) else None,
        )


def _kill_marked(token: str) -> None:
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


class McpSession:
    """The stdio MCP servers of one run, started, and their tools.

    Build one with `McpSession.start`; `McpSession()` is an empty session (no servers).
    Use it as a context manager, or call `close` at the end of the run.

    Attributes:
        tools: One `Tool` per tool the started servers listed, named
            ``mcp__<server>__<tool>``; add them to the run's `Toolbox`.
        refusals: Servers the policy did not let start.
        failures: Servers that were allowed but did not start.
    """

    def __init__(self) -> None:
        self.tools: list[Tool] = []
        self.refusals: list[McpRefusal] = []
        self.failures: list[McpFailure] = []
        self._servers: dict[str, ServerHandle] = {}
        self._loop: EventLoopThread | None = None
        self._token = secrets.token_hex(12)
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def start(
        cls,
        configs: Sequence[McpServerConfig],
        *,
        gate: ActGate,
        env: Mapping[str, str],
        workspace: Workspace,
        timeout: float = 30,
    ) -> McpSession:
        """Start every configured server the policy allows, and list its tools.

        Each start is first checked as ``Act.exec([command, *args])`` through `gate`.
        Servers start concurrently; each has `timeout` seconds to answer ``initialize``
        and ``tools/list``.

        Args:
            configs: The `[[mcp]]` servers, in order.
            gate: The run's policy gate (records refusals; may ask an approver).
            env: The caller's environment; only default names are passed on (see
                `server_environment`).
            workspace: A server without `cwd` starts in its root.
            timeout: Seconds each server has to start and list its tools.

        Returns:
            The session. A refused or failed server is reported in `refusals` or
            `failures`, never raised.

        Raises:
            ConfigError: A server was allowed to start but the `mcp` SDK is not
                installed (``pip install 'io-harness[mcp]'``).
        """
        session = cls()
        try:
            session._start(configs, gate, env, workspace, timeout)
        except BaseException:
            session.close()
            raise
        return session

    def _start(self, configs: Sequence[McpServerConfig], gate: ActGate,
               env: Mapping[str, str], workspace: Workspace, timeout: float) -> None:
        planned = [server for config in configs
                   if (server := self._admit(config, gate, env, workspace)) is not None]
        if not planned:
            return
        _load_sdk()
        loop = self._loop = EventLoopThread()
        for server in planned:
            server.task = loop.submit(serve(server, timeout))
        deadline = time.monotonic() + timeout + _START_GRACE
        taken: set[str] = set()
        for server in planned:
            try:
                listed = server.ready.result(max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                listed = f"did not start within {timeout:g} s"
                loop.call_soon(server.stop.set)
            if isinstance(listed, str):
                self.failures.append(McpFailure(server.name,
                                                f"MCP server {server.name!r} {listed}"))
                continue
            for info in listed:
                name = tool_name(server.name, info.name, taken)
                taken.add(name)
                self.tools.append(McpTool(server.name, info, name, self))

    def _admit(self, config: McpServerConfig, gate: ActGate, env: Mapping[str, str],
               workspace: Workspace) -> ServerHandle | None:
        try:
            act = Act.exec(config.argv)
        except PolicyError as exc:
            self.failures.append(McpFailure(config.name, f"MCP server {config.name!r}: {exc}"))
            return None
        decision = _decide(gate, act)
        if not decision.is_allowed:
            self.refusals.append(McpRefusal(config.name, act, decision))
            return None
        server_env = server_environment(config, env)
        server_env[SESSION_MARKER] = self._token
        cwd = config.cwd if config.cwd is not None else workspace.root
        try:
            program = resolve_program(config.command, server_env, cwd)
            server = ServerHandle(config, program, server_env, cwd)
        except (ToolError, OSError) as exc:
            self.failures.append(McpFailure(
                config.name, f"MCP server {config.name!r} did not start: {exc}"))
            return None
        self._servers[config.name] = server
        return server

    @property
    def servers(self) -> tuple[str, ...]:
        """The names of the servers that started and are still running."""
        return tuple(name for name, server in self._servers.items() if server.is_running)

    def call_tool(self, server: str, tool: str, arguments: dict[str, Any],
                  timeout: float) -> McpCallResult:
        """Call `tool` on the started `server` and wait for its result.

        Args:
            server: The server's configured name.
            tool: The tool's name on the server.
            arguments: The call's arguments (a JSON object).
            timeout: Seconds to wait for the answer.

        Returns:
            The result; a failure, a dead server, a closed session and a timeout are
            error results, never exceptions.
        """
        with self._lock:
            entry = self._servers.get(server)
            loop = self._loop
            if self._closed or loop is None or entry is None:
                return McpCallResult(f"MCP server {server!r} is not running", is_error=True)
            future = loop.submit(call(entry, tool, arguments, timeout))
        try:
            return future.result(timeout + _CALL_GRACE)
        except TimeoutError:
            future.cancel()
            return McpCallResult(
                f"MCP tool {tool!r} of server {server!r} did not answer within {timeout:g} s",
                is_error=True)
        except CancelledError:
            return McpCallResult(f"MCP server {server!r} was stopped during the call",
                                 is_error=True)

    def close(self) -> None:
        """Stop every server and the loop thread; leaves no server process behind.

        Safe to call more than once, and from `__exit__` after a failed start.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, self._loop = self._loop, None
            servers = list(self._servers.values())
        try:
            if loop is not None:
                _stop_servers(loop, servers)
                loop.stop(_STOP_WAIT)
                _kill_marked(self._token)
        finally:
            for server in servers:
                server.discard_log()

    def __enter__(self) -> McpSession:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _stop_servers(loop: EventLoopThread, servers: Sequence[ServerHandle]) -> None:
    for server in servers:
        loop.call_soon(server.stop.set)
    deadline = time.monotonic() + _STOP_WAIT
    for server in servers:
        task = server.task
        if task is None:
            continue
        try:
            task.result(max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            task.cancel()
        except CancelledError:
            pass

