"""McpSession: connect the configured MCP servers for one run, and stop them after.

Reaching a server is an act, decided through the run's one gate before anything is
spawned or dialled: a local server's start is ``Act.exec(argv)`` (the check the `exec`
tool makes on a command), a remote server's endpoint ``Act.net(host, port)`` (the
check the egress proxy makes), and every other host its HTTP client dials later (an
OAuth authorization server) is decided the same way (`harness_core.mcp._http`). A
refusal is recorded by the gate with its rule and layer.

A server that is refused or cannot start, connect or authorize stops the run from
starting (`McpUnavailable`), unless it is marked `optional`: then it is listed in
`refusals` or `failures` and the run goes on without its tools.

What the policy decides is the start and the hosts, not what a server then does: a
local server runs outside the command sandbox with this process's privileges
(`harness_core.mcp._stdio`); each tool call is decided again as ``Act.mcp`` by the
tool itself (`harness_core.mcp._tools`).

The `mcp` SDK is imported only once a server has passed the gate; the asyncio side (one
loop thread, one task per server) is `harness_core.mcp._server`. The gate is only ever
consulted from the caller's thread (`harness_core.mcp._relay`). Nothing here writes to
the terminal: a server's stderr and log messages go to a temporary file whose tail is
quoted when it fails, the SDK's loggers get a null handler, and a notice for a person
(where to authorize) goes to the `notice` callback.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError
from types import TracebackType
from typing import Any

from harness_core._record import record
from harness_core.errors import HostBoundaryError, McpUnavailable, PolicyError, ToolError
from harness_core.host import check_host_command, host_dir, host_environment, is_inside
from harness_core.mcp._relay import Relay
from harness_core.mcp._server import (
    SESSION_EXPIRED,
    EventLoopThread,
    ServerHandle,
    call,
    serve,
    stop_servers,
)
from harness_core.mcp._stdio import SESSION_MARKER, kill_marked, server_environment, stdio_opener
from harness_core.mcp._tools import McpCallResult, McpTool, McpToolInfo, tool_name
from harness_core.policy import Act, Decision, Verdict
from harness_core.sandbox import Admission
from harness_core.tool_servers import McpGrant, McpServerConfig
from harness_core.tools import ActGate, PauseRequested, Tool
from harness_core.workspace import Workspace

__all__ = ["SESSION_MARKER", "McpFailure", "McpRefusal", "McpSession", "server_environment"]

_START_GRACE = 10.0
"""Seconds a caller waits past `timeout` for a failed start to unwind (the SDK's own
shutdown is bounded at about 6 s: 2 s after stdin closes, 2 s after SIGTERM, 2 s to reap)."""
_STOP_WAIT = 10.0
"""Seconds `close` gives the servers to stop the SDK's way before cancelling them."""
_CALL_GRACE = 5.0
"""Seconds past a call's own timeout before the caller stops waiting for the loop."""
_OPTIONAL_HINT = "mark the server optional = true to run without it when it is unavailable"


@record
class McpRefusal:
    """A server the policy did not let start (or whose host it did not let io dial).

    Attributes:
        server: The server's configured name.
        act: The act that was checked (exec of its command, or net to its host).
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


@record
class McpFailure:
    """A server the policy allowed that did not start, connect or authorize.

    Attributes:
        server: The server's configured name.
        message: What went wrong, with the tail of the server's stderr when it wrote any.
    """

    server: str
    message: str


def _load_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:  # a core dependency: its absence is a broken install
        raise McpUnavailable("MCP servers need the `mcp` SDK, which is not installed",
                             hint="reinstall io: pip install --force-reinstall io-harness"
                             ) from exc

    # A library must not print: without this, the SDK's warnings reach stderr through
    # logging's last-resort handler and tear the live trace.
    for name in ("mcp", "httpx2", "httpcore2"):
        logger = logging.getLogger(name)
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


class McpSession:
    """The MCP servers of one run, connected, and their tools.

    Build one with `McpSession.start`; `McpSession()` is an empty session (no servers).
    Use it as a context manager, or call `close` at the end of the run.

    Attributes:
        tools: One `Tool` per tool the connected servers listed, named
            ``mcp__<server>__<tool>``; add them to the run's `Toolbox`.
        refusals: Optional servers the policy did not let start.
        failures: Optional servers that were allowed but did not start.
        skipped: Why a listed tool was not offered (its name holds ``/``), one line
            each; each line also goes to `notice`.
    """

    def __init__(self) -> None:
        self.tools: list[Tool] = []
        self.refusals: list[McpRefusal] = []
        self.failures: list[McpFailure] = []
        self.skipped: list[str] = []
        self._servers: dict[str, ServerHandle] = {}
        self._loop: EventLoopThread | None = None
        self._relay = Relay(lambda host, port: Decision(Verdict.DENY, "no session"), None)
        self._token = secrets.token_hex(12)
        self._lock = threading.Lock()
        self._closed = False
        self._required: list[str] = []

    @classmethod
    def start(
        cls,
        configs: Sequence[McpServerConfig],
        *,
        gate: ActGate,
        env: Mapping[str, str],
        workspace: Workspace,
        timeout: float = 30,
        notice: Callable[[str], None] | None = None,
        net: Callable[[str, int], Decision | Admission] | None = None,
    ) -> McpSession:
        """Connect every configured server the policy allows, and list its tools.

        Servers start concurrently; each has `timeout` seconds to answer ``initialize``
        and ``tools/list`` (a remote server that asks a person to authorize gets its
        `authorize_timeout` on top).

        Args:
            configs: The `[[mcp]]` servers, in order.
            gate: The run's policy gate (records refusals; may ask an approver).
            env: The caller's environment; only default names are passed on to a
                local server (see `server_environment`).
            workspace: A local server without `cwd` starts in its root.
            timeout: Seconds each server has to start and list its tools.
            notice: Shows a person one line (the URL to authorize a remote server at, a
                tool that is not offered); None when nobody can be shown one (a server
                that needs a person to authorize then fails).
            net: Decides (and records) dialling a host and port, as the run's egress
                check does (by name, then every address it resolves to); an
                `Admission` names the checked addresses, the only ones then dialled
                (an admission without one refuses). None checks ``Act.net(host, port)``
                through `gate`, and the client dials the name.

        Returns:
            The session; an optional server that was refused or failed is listed in
            `refusals` or `failures`.

        Raises:
            McpUnavailable: A server that is not optional was refused, or did not start,
                connect or authorize (every such server is named).
        """
        session = cls()
        try:
            session._start(configs, gate, env, workspace, timeout, notice, net)
        except BaseException:
            session.close()
            raise
        return session

    def _start(self, configs: Sequence[McpServerConfig], gate: ActGate,
               env: Mapping[str, str], workspace: Workspace, timeout: float,
               notice: Callable[[str], None] | None,
               net: Callable[[str, int], Decision | Admission] | None) -> None:
        relay = self._relay = Relay(
            net or (lambda host, port: _decide(gate, Act.net(host, port))), notice)
        planned = [server for config in configs if (
            server := self._admit(config, gate, env, workspace, timeout)) is not None]
        if planned:
            _load_sdk()
            loop = self._loop = EventLoopThread()
            began = time.monotonic()
            for server in planned:
                server.task = loop.submit(serve(server))
            taken: set[str] = set()
            for server in planned:
                deadline = began + server.longest_start + _START_GRACE
                try:
                    listed = relay.wait(server.ready, max(0.0, deadline - time.monotonic()))
                except TimeoutError:
                    listed = f"did not start within {server.start_timeout:g} s"
                    loop.call_soon(server.stop.set)
                if isinstance(listed, str):
                    self._fail(server.config, f"MCP server {server.name!r} {listed}")
                    continue
                self._offer(server.name, listed, taken, notice)
        if self._required:
            raise McpUnavailable("; ".join(self._required), hint=_OPTIONAL_HINT)

    def _offer(self, server: str, listed: Sequence[McpToolInfo], taken: set[str],
               notice: Callable[[str], None] | None) -> None:
        for info in listed:
            if "/" in info.name:
                # ``server/a/delete_x`` has no one reading as server/tool: a rule such as
                # ``*/delete_*`` would match neither part, so the tool is not offered.
                text = (f"MCP server {server!r} lists a tool named {info.name!r}; a tool name"
                        " holding '/' is not offered (policy rules name server/tool)")
                self.skipped.append(text)
                if notice is not None:
                    notice(text)
                continue
            name = tool_name(server, info.name, taken)
            taken.add(name)
            self.tools.append(McpTool(server, info, name, self))

    def _fail(self, config: McpServerConfig, message: str) -> None:
        if config.optional:
            self.failures.append(McpFailure(config.name, message))
        else:
            self._required.append(message)

    def _refuse(self, config: McpServerConfig, act: Act, decision: Decision) -> None:
        refusal = McpRefusal(config.name, act, decision)
        if config.optional:
            self.refusals.append(refusal)
        else:
            self._required.append(refusal.describe())

    def _admit(self, config: McpServerConfig, gate: ActGate, env: Mapping[str, str],
               workspace: Workspace, timeout: float) -> ServerHandle | None:
        if config.is_remote:
            return self._admit_remote(config, timeout)
        try:
            act = Act.exec(config.argv)
        except PolicyError as exc:
            self._fail(config, f"MCP server {config.name!r}: {exc}")
            return None
        decision = _decide(gate, act)
        if not decision.is_allowed:
            self._refuse(config, act, decision)
            return None
        server_env = host_environment(server_environment(config, env), workspace.root)
        server_env[SESSION_MARKER] = self._token
        what = f"MCP server {config.name!r}"
        try:
            cwd = host_dir(workspace.root) if config.cwd is None else config.cwd
            if config.cwd is not None and is_inside(config.cwd, workspace.root):
                raise HostBoundaryError(f"{what}: its cwd {str(config.cwd)!r} lies in the"
                                        " workspace, which the agent can write",
                                        hint="give a cwd outside the workspace")
            program = check_host_command(
                config.argv, server_env, workspace=workspace.root, what=what, cwd=config.cwd,
                hint="install the server outside the workspace and name it by an absolute"
                     " path or on PATH")
            server = ServerHandle(config, stdio_opener(program, server_env, cwd), timeout)
        except HostBoundaryError as exc:
            detail = exc.message.removeprefix(f"{what}: ")
            self._fail(config, f"{what} did not start: {detail}"
                       + (f" ({exc.hint})" if exc.hint else ""))
            return None
        except (ToolError, OSError) as exc:
            self._fail(config, f"{what} did not start: {exc}")
            return None
        self._servers[config.name] = server
        return server

    def _admit_remote(self, config: McpServerConfig, timeout: float) -> ServerHandle | None:
        from harness_core.mcp._http import http_opener

        host, port = config.endpoint
        decision = self._relay.decide(host, port)
        if not decision.is_allowed:
            self._refuse(config, Act.net(host, port), decision)
            return None
        oauth = config.oauth
        waits_on_a_person = self._relay.can_notify and (
            oauth is None or oauth.grant is McpGrant.AUTHORIZATION_CODE)
        extra = (oauth.authorize_timeout if oauth is not None else 300.0) if (
            waits_on_a_person) else 0.0
        server = ServerHandle(config, http_opener(self._relay), timeout, extra)
        self._servers[config.name] = server
        return server

    @property
    def servers(self) -> tuple[str, ...]:
        """The names of the servers that started and are still running."""
        return tuple(name for name, server in self._servers.items() if server.is_running)

    def listed_tools(self, server: str) -> tuple[McpToolInfo, ...]:
        """`server`'s current tool listing (re-read whenever it says its tools changed)."""
        entry = self._servers.get(server)
        return entry.tools if entry is not None else ()

    def call_tool(self, server: str, tool: str, arguments: dict[str, Any],
                  timeout: float) -> McpCallResult:
        """Call `tool` on the connected `server` and wait for its result.

        A remote server whose connection was lost is connected again (a new session)
        before the call is sent.

        Args:
            server: The server's configured name.
            tool: The tool's name on the server.
            arguments: The call's arguments (a JSON object).
            timeout: Seconds to wait for the answer.

        Returns:
            The result; a failure, a dead server, a closed session and a timeout are
            error results, never exceptions.
        """
        result = self._call(server, tool, arguments, timeout)
        entry = self._servers.get(server)
        if entry is not None and entry.ended == SESSION_EXPIRED:
            # The server answered 404: it never processed the call, so sending it again
            # on a new session cannot run it twice.
            result = self._call(server, tool, arguments, timeout)
        return result

    def _call(self, server: str, tool: str, arguments: dict[str, Any],
              timeout: float) -> McpCallResult:
        with self._lock:
            entry = self._servers.get(server)
            loop = self._loop
            if self._closed or loop is None or entry is None:
                return McpCallResult(f"MCP server {server!r} is not running", is_error=True)
            if entry.config.is_remote and entry.ended not in (None, "stopped"):
                lost = self._reconnect(loop, entry)
                if lost is not None:
                    return lost
            future = loop.submit(call(entry, tool, arguments, timeout))
        try:
            return self._relay.wait(future, timeout + _CALL_GRACE)
        except TimeoutError:
            future.cancel()
            return McpCallResult(
                f"MCP tool {tool!r} of server {server!r} did not answer within {timeout:g} s",
                is_error=True)
        except CancelledError:
            return McpCallResult(f"MCP server {server!r} was stopped during the call",
                                 is_error=True)

    def _reconnect(self, loop: EventLoopThread, entry: ServerHandle) -> McpCallResult | None:
        why = entry.ended
        loop.call_soon(entry.stop.set)  # the old connection, if it still holds on
        if entry.task is not None:
            try:
                self._relay.wait(entry.task, _STOP_WAIT)
            except (TimeoutError, CancelledError):
                entry.task.cancel()
        entry.renew()
        entry.task = loop.submit(serve(entry))
        try:
            listed = self._relay.wait(entry.ready, entry.longest_start + _START_GRACE)
        except TimeoutError:
            loop.call_soon(entry.stop.set)
            listed = f"did not answer within {entry.start_timeout:g} s"
        if isinstance(listed, str):
            entry.ended = listed
            return McpCallResult(f"MCP server {entry.name!r} lost its connection ({why}) and"
                                 f" could not reconnect: {listed}", is_error=True)
        return None

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
                stop_servers(loop, servers, _STOP_WAIT)
                loop.stop(_STOP_WAIT)
                kill_marked(self._token)
        finally:
            for server in servers:
                server.discard_log()

    def __enter__(self) -> McpSession:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

