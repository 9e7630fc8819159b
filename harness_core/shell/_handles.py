"""Process handles: a checked line left running, polled by byte cursor, always ended.

A handle is a different lifetime for a command line, not a second way to run one: the
line reaching `HandleRegistry.start` was parsed and checked by the same code as a
foreground `shell` call, and it runs through the same `Execution` (so each stage
leads its own process group and every descendant is tracked). Its stdout and stderr
go, merged, to a capture file in the run's temporary directory; `poll` returns a
bounded window of what is new since the previous poll, by byte cursor.

At most `MAX_LIVE_HANDLES` run at once; the next start is refused with a reason naming
the cap (a queue would be a leak with a delay). `close_all` kills every live handle
and is meant for every way a run ends; a `weakref.finalize` backstop does the same if
the registry is dropped or the interpreter exits without it.

A handle never survives the process that started it. Building a registry for a run
marks every handle an earlier process left unended as orphaned; an orphaned handle is
answered from its record and never signalled, polled or re-attached, because its
recorded pid may by now belong to an unrelated process. This module never decides
policy and never writes to the terminal.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from harness_core._record import record
from harness_core.clock import Clock
from harness_core.errors import ToolError
from harness_core.sandbox import ProcessLauncher
from harness_core.workspace import Workspace

if TYPE_CHECKING:  # the runner (and the planner) load with the first handle started
    from harness_core.shell._plan import Blocked, CheckedStage, RunPlan
    from harness_core.shell._runner import Execution

__all__ = [
    "DEFAULT_POLL_WINDOW",
    "MAX_LIVE_HANDLES",
    "HandlePoll",
    "HandleRegistry",
    "HandleRow",
    "HandleStart",
    "HandleStore",
]

MAX_LIVE_HANDLES = 8
"""Handles one run may have running at once; the next start is refused, not queued."""
DEFAULT_POLL_WINDOW = 16_000
"""Bytes one poll returns at most when the caller names no smaller window."""
_JOIN_SECONDS = 10.0
_START_SECONDS = 30.0


class HandleRow(Protocol):
    """A handle's record as the store returns it (`harness_core.store.HandleRecord`)."""

    @property
    def handle_id(self) -> str: ...
    @property
    def line(self) -> str: ...
    @property
    def pids(self) -> tuple[int, ...]: ...
    @property
    def started_at(self) -> str: ...
    @property
    def ended_at(self) -> str | None: ...
    @property
    def end_reason(self) -> str | None: ...
    @property
    def exit_status(self) -> int | None: ...
    @property
    def owner_pid(self) -> int: ...
    @property
    def cursor(self) -> int: ...


class HandleStore(Protocol):
    """Persistence of handles; `harness_core.store.Store` implements it."""

    def record_handle_start(
        self, run_id: str, handle_id: str, line: str, pids: Sequence[int], started_at: str,
        owner_pid: int,
    ) -> None: ...

    def record_handle_output(self, run_id: str, handle_id: str, cursor: int, text: str) -> int: ...

    def record_handle_end(
        self, run_id: str, handle_id: str, end_reason: str, exit_status: int | None,
        ended_at: str,
    ) -> None: ...

    def handles(self, run_id: str) -> Sequence[HandleRow]: ...

    def handle_record(self, run_id: str, handle_id: str) -> HandleRow | None: ...

    def mark_orphaned_handles(self, run_id: str, at: str | None = None) -> int: ...


@record
class HandleStart:
    """What `start` did.

    Attributes:
        handle_id: The new handle's id, or None when nothing started.
        pids: The stage processes of its first pipeline.
        blocked: Why nothing started, when a spawn-time re-check stopped the line.
    """

    handle_id: str | None
    pids: tuple[int, ...]
    blocked: Blocked | None = None


@record
class HandlePoll:
    """A handle's state and what a poll read.

    Attributes:
        handle_id: The handle.
        line: Its command line.
        text: Output new since the previous poll (bounded window).
        cursor: Bytes of output read so far, after this poll.
        pending: Bytes of output already written but beyond this window.
        running: Whether its line is still running.
        exit_status: The line's status, once it exited on its own.
        end_reason: ``exited``, ``killed``, ``swept``, ``orphaned`` or None while running.
        orphaned: Started by a process that is gone and left unended: never polled,
            signalled or re-attached.
        blocked: Why a spawn-time re-check stopped its line, if one did.
        from_record: Answered from the store (a handle of an earlier process), not from
            a process of this one.
    """

    handle_id: str
    line: str
    text: str
    cursor: int
    pending: int
    running: bool
    exit_status: int | None
    end_reason: str | None
    orphaned: bool = False
    blocked: Blocked | None = None
    from_record: bool = False


class _Live:
    def __init__(self, handle_id: str, line: str, execution: Execution, capture: Path) -> None:
        self.handle_id = handle_id
        self.line = line
        self.execution = execution
        self.capture = capture
        self.cursor = 0
        self.done = threading.Event()
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.end_reason: str | None = None
        self.recorded_end = False


def _drive(live: _Live, fd: int) -> None:
    try:
        live.execution.run(None)
    except BaseException as exc:  # noqa: BLE001 - reported by poll, never lost in a thread
        live.error = exc
    finally:
        live.execution.close()
        os.close(fd)
        live.done.set()


def _sweep(live: dict[str, _Live]) -> None:
    """The backstop: kill whatever is still running (no store writes)."""
    for handle in list(live.values()):
        if not handle.done.is_set():
            handle.execution.cancel()
    for handle in list(live.values()):
        if handle.thread is not None:
            handle.thread.join(_JOIN_SECONDS)
        try:
            handle.capture.unlink()
        except OSError:
            pass


def _utf8_cut(data: bytes) -> int:
    """Length of `data` without a trailing incomplete UTF-8 sequence."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII)
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 \
                else 4 if byte >> 3 == 0b11110 else 1
            return len(data) - back if need > back else len(data)
    return len(data)


class HandleRegistry:
    """The process handles of one run in this process.

    Constructing one for a run with a store marks every handle an earlier process left
    unended as orphaned (see the module docstring).

    Args:
        run_id: The run.
        launcher: Starts each stage (the run's sandbox launcher).
        workspace: The root.
        capture_dir: The run's temporary directory; capture files live (and die) here.
        clock: Timestamps.
        store: Where handles are recorded; None keeps them in memory only.
        max_live: The cap on handles running at once.
        owner_pid: The pid recorded as the starting process (this one by default).
    """

    def __init__(
        self,
        *,
        run_id: str,
        launcher: ProcessLauncher,
        workspace: Workspace,
        capture_dir: Path,
        clock: Clock,
        store: HandleStore | None = None,
        max_live: int = MAX_LIVE_HANDLES,
        owner_pid: int | None = None,
    ) -> None:
        self.run_id = run_id
        self.launcher = launcher
        self.workspace = workspace
        self.capture_dir = Path(capture_dir)
        self.clock = clock
        self.store = store
        self.max_live = max_live
        self.owner_pid = os.getpid() if owner_pid is None else owner_pid
        self._live: dict[str, _Live] = {}
        self._closed = False
        self.orphaned_at_start = 0
        count = 0
        if store is not None:
            self.orphaned_at_start = store.mark_orphaned_handles(run_id, self._now())
            count = len(store.handles(run_id))
        self._next = count + 1
        self._finalizer = weakref.finalize(self, _sweep, self._live)

    def _now(self) -> str:
        return self.clock.now().isoformat(timespec="microseconds")

    # -- queries ------------------------------------------------------------------------

    def live_count(self) -> int:
        """Handles whose line is still running."""
        return sum(1 for h in self._live.values() if not h.done.is_set())

    def has_room(self) -> bool:
        """Whether another handle may start now."""
        return not self._closed and self.live_count() < self.max_live

    def cap_reason(self) -> str:
        """The refusal reason for a start beyond the cap."""
        return (
            f"{self.live_count()} handles are running and a run may have at most "
            f"MAX_LIVE_HANDLES = {self.max_live} at once; kill one with shell_kill first "
            "(starts are refused, not queued)"
        )

    def tracked_pids(self, handle_id: str) -> list[int]:
        """Pids of every process seen belonging to a live handle of this process."""
        live = self._live.get(handle_id)
        return [] if live is None else live.execution.tracker.pids()

    # -- start --------------------------------------------------------------------------

    def start(
        self, plan: RunPlan, *, recheck: Callable[[CheckedStage], Blocked | None] | None = None
    ) -> HandleStart:
        """Start a checked line as a handle.

        Args:
            plan: The checked line.
            recheck: Asked about each stage right before its pipeline starts.

        Returns:
            The handle id and first pids, or why nothing started.

        Raises:
            ToolError: The run has ended, or `MAX_LIVE_HANDLES` handles are running.
            SandboxUnavailable: The launcher could not confine the first stage.
        """
        if self._closed:
            raise ToolError("the run has ended; its handles were closed")
        if not self.has_room():
            raise ToolError(self.cap_reason())
        handle_id = f"h{self._next}"
        self._next += 1
        self.capture_dir.mkdir(parents=True, exist_ok=True)
        capture = self.capture_dir / f"handle-{handle_id}-{os.getpid()}.log"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(capture, flags, 0o600)
        from harness_core.shell._runner import Execution

        execution = Execution(
            plan, launcher=self.launcher, workspace=self.workspace, clock=self.clock,
            stdout_fd=fd, stderr_fd=fd, recheck=recheck,
        )
        live = _Live(handle_id, plan.line, execution, capture)
        self._live[handle_id] = live
        live.thread = threading.Thread(
            target=_drive, args=(live, fd), name=f"io-handle-{handle_id}", daemon=True
        )
        live.thread.start()
        execution.started.wait(_START_SECONDS)
        pids = tuple(execution.tracker.stage_pids())
        if not pids and live.done.wait(_JOIN_SECONDS) and execution.blocked is not None:
            del self._live[handle_id]
            self._discard(live)
            return HandleStart(None, (), execution.blocked)
        if not pids and live.error is not None:
            del self._live[handle_id]
            self._discard(live)
            raise live.error
        if self.store is not None:
            self.store.record_handle_start(
                self.run_id, handle_id, plan.line, pids, self._now(), self.owner_pid
            )
        return HandleStart(handle_id, pids)

    # -- poll / kill --------------------------------------------------------------------

    def poll(self, handle_id: str, max_bytes: int | None = None) -> HandlePoll:
        """What a handle printed since the previous poll, and whether it still runs.

        `max_bytes` of 0 reads nothing and only reports the state. An orphaned handle (or one this process does not hold) is answered from its
        record; nothing is read from or sent to any process.

        Raises:
            ToolError: The run never started a handle with this id.
        """
        live = self._live.get(handle_id)
        if live is None:
            return self._from_record(handle_id)
        done = live.done.is_set()
        window = DEFAULT_POLL_WINDOW if max_bytes is None else max(0, max_bytes)
        try:
            with open(live.capture, "rb") as handle:
                handle.seek(live.cursor)
                data = handle.read(window)
                size = os.fstat(handle.fileno()).st_size
        except OSError as exc:
            raise ToolError(f"cannot read the output of handle {handle_id}: {exc}") from exc
        keep = len(data)
        if not done or live.cursor + len(data) < size:
            keep = _utf8_cut(data)
        text = data[:keep].decode("utf-8", errors="replace")
        live.cursor += keep
        if text and self.store is not None:
            self.store.record_handle_output(self.run_id, handle_id, live.cursor, text)
        if done:
            self._record_end(live, "exited")
        return self._state(live, text, max(size - live.cursor, 0))

    def kill(self, handle_id: str) -> HandlePoll:
        """End a handle's line and every process it started; frees its slot.

        An orphaned handle is answered from its record and never signalled.

        Raises:
            ToolError: The run never started a handle with this id.
        """
        live = self._live.get(handle_id)
        if live is None:
            return self._from_record(handle_id)
        if not live.done.is_set():
            live.execution.cancel()
            self._join(live)
            self._record_end(live, "killed")
        else:
            self._record_end(live, "exited")
        return self._state(live, "", 0)

    def end_running(self, reason: str = "swept") -> int:
        """Kill every handle still running, and keep the registry open for later starts.

        The run calls it before it fingerprints the gates' inputs, so no process the
        agent left running can rewrite a file between that fingerprint and the gates.

        Args:
            reason: The end reason recorded for each handle killed.

        Returns:
            How many handles were still running.
        """
        running = [h for h in self._live.values() if not h.done.is_set()]
        for live in running:
            live.execution.cancel()
        for live in running:
            self._join(live)
            self._record_end(live, reason)
        return len(running)

    def close_all(self, reason: str = "swept") -> int:
        """Kill every live handle (the run is ending) and delete the capture files.

        Idempotent. Every way a run ends must call it: finish, budget stop, cancel, an
        exception, Ctrl-C, a panic in a tool.

        Args:
            reason: The end reason recorded for handles still running (``swept``).

        Returns:
            How many handles were still running.
        """
        if self._closed:
            return 0
        self._closed = True
        running = [h for h in self._live.values() if not h.done.is_set()]
        for live in running:
            live.execution.cancel()
        for live in self._live.values():
            self._join(live)
        for live in self._live.values():
            self._record_end(live, reason if live in running else "exited")
            self._discard(live)
        self._finalizer.detach()
        return len(running)

    def __enter__(self) -> HandleRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_all()

    # -- helpers ------------------------------------------------------------------------

    def _join(self, live: _Live) -> None:
        if live.thread is not None:
            live.thread.join(_JOIN_SECONDS)

    def _discard(self, live: _Live) -> None:
        self._join(live)
        try:
            live.capture.unlink()
        except OSError:
            pass  # already gone

    def _record_end(self, live: _Live, reason: str) -> None:
        if live.recorded_end:
            return
        live.recorded_end = True
        live.end_reason = reason
        status = live.execution.status if reason == "exited" else None
        if self.store is not None:
            self.store.record_handle_end(self.run_id, live.handle_id, reason, status, self._now())

    def _state(self, live: _Live, text: str, pending: int) -> HandlePoll:
        done = live.done.is_set()
        return HandlePoll(
            handle_id=live.handle_id,
            line=live.line,
            text=text,
            cursor=live.cursor,
            pending=pending,
            running=not done,
            exit_status=live.execution.status if done and live.end_reason == "exited" else None,
            end_reason=live.end_reason if done else None,
            blocked=live.execution.blocked,
        )

    def _from_record(self, handle_id: str) -> HandlePoll:
        row = self.store.handle_record(self.run_id, handle_id) if self.store else None
        if row is None:
            known = ", ".join(sorted(self._live)) or "none"
            raise ToolError(f"no handle {handle_id!r} in this run (this process holds: {known})")
        orphaned = row.end_reason == "orphaned" or row.ended_at is None
        return HandlePoll(
            handle_id=handle_id,
            line=row.line,
            text="",
            cursor=row.cursor,
            pending=0,
            running=False,
            exit_status=row.exit_status,
            end_reason="orphaned" if orphaned else row.end_reason,
            orphaned=orphaned,
            from_record=True,
        )
