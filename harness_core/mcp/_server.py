"""The asyncio side of the MCP client: one event loop thread, and one task per server.

The `mcp` SDK is asyncio (anyio). `EventLoopThread` runs one loop in a daemon thread for
a whole session; sync callers bridge to it with `asyncio.run_coroutine_threadsafe`.
`serve` is a server's whole life in one task: it opens the server's transport (the
SDK's `stdio_client` for a local server, which closes its stdin and then signals its
process group on exit; streamable HTTP for a remote one, `harness_core.mcp._http`) and
a `ClientSession`, publishes the tool listing on `ServerHandle.ready`, re-lists the tools
when the server says they changed, waits for `ServerHandle.stop`, and leaves both
contexts in that same task, as anyio requires. `call` sends one `tools/call`.

What a server sends on its own is handled here: a log message is written to the
server's log file (quoted when it fails), a tools/list_changed notification refreshes
the listing, and an elicitation is declined or answered with the schema's defaults, as
the server's `elicitation` setting says.

Every SDK import is inside a coroutine: importing this module loads no SDK. Payloads
are dumped to JSON (wire field names) and parsed by `harness_core.mcp._tools` at once.
Nothing here decides policy or writes to the terminal: a server's stderr goes to a
temporary file whose tail is quoted in failures.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import CancelledError, Future
from contextlib import AbstractAsyncContextManager, suppress
from typing import TYPE_CHECKING, Any, TypeVar

from harness_core.mcp._tools import McpCallResult, McpToolInfo
from harness_core.tool_servers import McpElicitation, McpServerConfig

if TYPE_CHECKING:
    from mcp import ClientSession, types
    from mcp.client.context import ClientRequestContext

__all__ = ["SESSION_EXPIRED", "EventLoopThread", "Opener", "ServerHandle", "call", "serve",
           "stop_servers"]

SESSION_EXPIRED = "its session expired"
"""`ServerHandle.ended` of a remote server that answered 404 to a request of a session
it no longer knows: that request was not processed, so it may be sent again."""

_STDERR_TAIL = 2000
"""Bytes of a server's stderr quoted when it fails."""
_MAX_PAGES = 100
"""Pages of a tool listing read before giving up on a server that never ends it."""

_T = TypeVar("_T")


class EventLoopThread:
    """One asyncio event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name="io-mcp", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = asyncio.all_tasks(self.loop)
                for task in pending:
                    task.cancel()
                if pending:
                    self.loop.run_until_complete(
                        asyncio.gather(*pending, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
                self.loop.run_until_complete(self.loop.shutdown_default_executor())
            finally:
                self.loop.close()

    def submit(self, coro: Coroutine[object, object, _T]) -> Future[_T]:
        """Run `coro` on the loop; the caller waits on the returned future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, fn: Callable[[], object]) -> None:
        with suppress(RuntimeError):  # the loop already stopped
            self.loop.call_soon_threadsafe(fn)

    def stop(self, timeout: float) -> None:
        """Stop the loop (its pending tasks are cancelled and awaited) and join the thread."""
        self.call_soon(self.loop.stop)
        self._thread.join(timeout)


Opener = Callable[["ServerHandle"], AbstractAsyncContextManager[tuple[Any, Any]]]
"""Opens a server's transport: its (read, write) streams, closed when the context ends."""


class ServerHandle:
    """One server's state, shared between the caller's thread and the loop's.

    Args:
        config: The server.
        opener: Opens its transport (stdio or streamable HTTP).
        start_timeout: Seconds it has to answer initialize and tools/list.
        person_wait: Seconds added to that once the start waits on a person (a remote
            server's authorization in a browser); 0 when nobody can be asked.
    """

    def __init__(self, config: McpServerConfig, opener: Opener, start_timeout: float,
                 person_wait: float = 0.0) -> None:
        self.config = config
        self.opener = opener
        self.start_timeout = start_timeout
        self.person_wait = person_wait
        self._start_scope: Any = None
        fd, self._log_path = tempfile.mkstemp(prefix="io-mcp-", suffix=".log")
        os.close(fd)
        self.errlog = open(self._log_path, "a", encoding="utf-8", errors="replace")
        self.ready: Future[tuple[McpToolInfo, ...] | str] = Future()
        self.stop = asyncio.Event()
        self.relist = asyncio.Event()
        self.task: Future[None] | None = None
        self.session: ClientSession | None = None
        self.ended: str | None = None
        self.tools: tuple[McpToolInfo, ...] = ()

    def renew(self) -> None:
        """Reset for a new connection (a remote server whose connection was lost)."""
        self.ready = Future()
        self.stop = asyncio.Event()
        self.relist = asyncio.Event()
        self.session = None
        self.ended = None

    @property
    def longest_start(self) -> float:
        """The most a start may take: its timeout, and a person's wait if one comes."""
        return self.start_timeout + self.person_wait

    def wait_on_person(self) -> None:
        """Extend the running start's deadline by `person_wait` (loop thread)."""
        scope = self._start_scope
        if scope is not None:
            scope.deadline += self.person_wait

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def is_running(self) -> bool:
        return self.session is not None and self.ended is None

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr, or ""."""
        try:
            with open(self._log_path, "rb") as log:
                size = log.seek(0, os.SEEK_END)
                log.seek(max(0, size - _STDERR_TAIL))
                text = log.read().decode("utf-8", errors="replace").strip()
        except OSError:
            return ""
        return f"\nserver stderr (last lines):\n{text}" if text else ""

    def discard_log(self) -> None:
        self.errlog.close()
        with suppress(OSError):
            os.unlink(self._log_path)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _describe(exc: BaseException) -> str:
    leaves = _leaves(exc)
    leaf = next((e for e in leaves if not isinstance(e, asyncio.CancelledError)), leaves[0])
    text = str(leaf)
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


async def _list_tools(session: ClientSession) -> tuple[McpToolInfo, ...]:
    from mcp import types

    found: list[McpToolInfo] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        if cursor is None:
            result = await session.list_tools()
        else:
            result = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        data = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        listed = data.get("tools")
        for entry in listed if isinstance(listed, list) else []:
            info = McpToolInfo.from_json(entry) if isinstance(entry, dict) else None
            if info is not None:
                found.append(info)
        following = data.get("nextCursor")
        if not isinstance(following, str) or not following:
            break
        cursor = following
    return tuple(found)


def _callbacks(server: ServerHandle) -> dict[str, Any]:
    from mcp import types

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        server.errlog.write(f"[{params.level}] {params.data}\n")
        server.errlog.flush()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            server.relist.set()
        elif isinstance(message, Exception):
            server.errlog.write(f"[transport] {_describe(message)}\n")
            server.errlog.flush()

    async def on_elicit(context: ClientRequestContext, params: types.ElicitRequestParams
                        ) -> types.ElicitResult:
        return _elicited(server.config.elicitation, params)

    return {"logging_callback": on_log, "message_handler": on_message,
            "elicitation_callback": on_elicit}


def _elicited(mode: McpElicitation, params: types.ElicitRequestParams) -> types.ElicitResult:
    from mcp import types

    if mode is McpElicitation.DEFAULTS and isinstance(params, types.ElicitRequestFormParams):
        schema = params.requested_schema
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        content = {name: spec["default"] for name, spec in properties.items()
                   if isinstance(spec, dict) and "default" in spec}
        required = schema.get("required")
        if all(name in content for name in (required if isinstance(required, list) else [])):
            return types.ElicitResult(action="accept", content=content)
    return types.ElicitResult(action="decline")


async def _hold(server: ServerHandle, session: ClientSession) -> None:
    """Wait for `stop`, re-listing the tools each time the server says they changed."""
    while not server.stop.is_set():
        waits = [asyncio.ensure_future(server.stop.wait()),
                 asyncio.ensure_future(server.relist.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        if server.relist.is_set() and not server.stop.is_set():
            server.relist.clear()
            server.tools = await _list_tools(session)


async def serve(server: ServerHandle) -> None:
    """Open `server`, publish its tools on `ready`, and hold it until `stop` is set."""
    import anyio
    from mcp import ClientSession

    timeout = server.start_timeout
    try:
        async with server.opener(server) as (read, write), \
                ClientSession(read, write, **_callbacks(server)) as session:
            with anyio.fail_after(timeout) as scope:
                server._start_scope = scope
                await session.initialize()
                tools = await _list_tools(session)
            server._start_scope = None
            server.session = session
            server.tools = tools
            server.ready.set_result(tools)
            await _hold(server, session)
    except Exception as exc:
        leaves = _leaves(exc)
        if any(isinstance(leaf, TimeoutError) for leaf in leaves):
            message = f"no answer to initialize and tools/list within {timeout:g} s" + (
                " (and the time given to authorize)" if server.person_wait else "")
        else:
            message = _describe(exc)
        if not server.ready.done():
            server.ready.set_result(f"did not start: {message}{server.stderr_tail()}")
        elif not server.stop.is_set():
            server.ended = message
    finally:
        server.session = None
        if server.ended is None and server.stop.is_set():
            server.ended = "stopped"
        if not server.ready.done():
            server.ready.set_result("did not start: cancelled")


async def call(server: ServerHandle, tool: str, arguments: dict[str, Any],
               timeout: float) -> McpCallResult:
    """Send one ``tools/call``; every failure (timeout, lost server) is an error result."""
    import anyio

    session = server.session
    if session is None or server.ended is not None:
        return McpCallResult(_not_running(server), is_error=True)
    try:
        with anyio.fail_after(timeout):
            result = await session.call_tool(tool, arguments)
    except TimeoutError:
        return McpCallResult(
            f"MCP tool {tool!r} of server {server.name!r} did not answer within {timeout:g} s",
            is_error=True)
    except Exception as exc:
        if _is_session_expired(exc):
            server.ended = SESSION_EXPIRED
            return McpCallResult(_not_running(server), is_error=True)
        if _is_connection_lost(exc):
            server.ended = "its connection closed; it may have exited"
            return McpCallResult(_not_running(server), is_error=True)
        return McpCallResult(
            f"MCP tool {tool!r} of server {server.name!r} failed: {_describe(exc)}",
            is_error=True)
    return McpCallResult.from_json(result.model_dump(mode="json", by_alias=True,
                                                     exclude_none=True))


def _is_connection_lost(exc: BaseException) -> bool:
    import anyio
    from mcp.types import CONNECTION_CLOSED

    for leaf in _leaves(exc):
        if isinstance(leaf, (anyio.ClosedResourceError, anyio.BrokenResourceError,
                             anyio.EndOfStream)):
            return True
        # The SDK's error type was renamed between major versions; its payload was not.
        error = getattr(leaf, "error", None)
        if getattr(error, "code", None) == CONNECTION_CLOSED:
            return True
    return False


def _is_session_expired(exc: BaseException) -> bool:
    from mcp.types import INVALID_REQUEST

    for leaf in _leaves(exc):
        error = getattr(leaf, "error", None)
        if getattr(error, "code", None) == INVALID_REQUEST and getattr(
                error, "message", None) == "Session terminated":
            return True
    return False


def _not_running(server: ServerHandle) -> str:
    why = f" ({server.ended})" if server.ended else ""
    return f"MCP server {server.name!r} is not running{why}{server.stderr_tail()}"


def stop_servers(loop: EventLoopThread, servers: Sequence[ServerHandle], wait: float) -> None:
    """Ask every server to stop, wait up to `wait` seconds in all, then cancel the rest."""
    for server in servers:
        loop.call_soon(server.stop.set)
    deadline = time.monotonic() + wait
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
