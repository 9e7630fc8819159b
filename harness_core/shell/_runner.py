"""The runner: a checked `RunPlan` run as bash would run it, with no shell in between.

Each pipeline's stages are started through the `ProcessLauncher` (which resolves the
program on PATH and makes each stage lead its own process group), joined by pipes the
runner makes itself. Redirects are opened by the runner, left to right, just before the
stage starts; ``2>&1`` points fd 2 wherever fd 1 points at that moment. Exit statuses
follow bash: a pipeline's is its last stage's, a signal is 128 + its number, ``&&`` and
``||`` skip on the previous status, ``;`` always runs, a program that cannot be started
is 127 and a redirect that cannot be opened is 1.

Before each pipeline starts, every stage goes through `recheck` (paths that moved since
the check, new operand acts); a stage it blocks stops the line there.

When the line ends — finished, timed out, cancelled or blocked — every process it
started is killed (`ProcessTracker`) before the stage processes are reaped: a line
leaves nothing running behind it. Output to the caller is bounded (`Capture`). This
module decides nothing about policy and never runs ``sh -c``.
"""

from __future__ import annotations

import errno
import os
import selectors
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from harness_core._held_files import REFUSAL, held
from harness_core._record import record
from harness_core.clock import Clock
from harness_core.errors import ToolError
from harness_core.sandbox import LaunchRequest, ProcessLauncher, exit_fd, peek_status
from harness_core.shell._plan import (
    Blocked,
    CheckedPipeline,
    CheckedStage,
    Connector,
    RedirectKind,
    RunPlan,
)
from harness_core.shell._tree import ProcessTracker
from harness_core.workspace import Workspace

__all__ = ["TIMEOUT_STATUS", "Capture", "Execution", "LineResult", "run_line"]

TIMEOUT_STATUS = 124
"""Exit status reported for a line killed by its timeout (as `timeout(1)` reports)."""

_SNAPSHOT_FIRST = 0.02
_SNAPSHOT_MAX = 0.2
# A process that escaped every kill may still hold the capture pipe; stop reading then.
_DRAIN_GRACE = 1.0
_HAS_WAITID = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")
_NO_PIDFD_TICK = 0.01
_READ_CHUNK = 65536
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_OPEN_FLAGS = {
    RedirectKind.STDOUT: os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    RedirectKind.APPEND: os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    RedirectKind.STDERR: os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    RedirectKind.STDERR_APPEND: os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    RedirectKind.STDIN: os.O_RDONLY,
}


class Capture:
    """A bounded capture of one stream: the first and last bytes, and a count of the rest.

    Args:
        limit: Bytes kept in all; half from the start, half from the end.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 0)
        self._head_limit = self.limit // 2
        self._tail_limit = self.limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        """Add bytes read from the stream."""
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data and self._tail_limit:
            self._tail += data
            if len(self._tail) > 2 * self._tail_limit:
                del self._tail[: len(self._tail) - self._tail_limit]

    @property
    def omitted(self) -> int:
        """Bytes read but not kept."""
        return max(self.total - self.limit, 0)

    def parts(self) -> tuple[bytes, bytes]:
        """(first bytes, last bytes); together everything when nothing was omitted."""
        tail = bytes(self._tail[-self._tail_limit :]) if self._tail_limit else b""
        if self.total <= self.limit:
            return bytes(self._head) + bytes(self._tail), b""
        return bytes(self._head), tail


@record
class LineResult:
    """How a foreground line ended.

    Attributes:
        exit_status: Bash's status for the line (`TIMEOUT_STATUS` when timed out).
        stdout: The captured standard output (see `Capture`).
        stderr: The captured standard error.
        timed_out: The timeout killed it.
        blocked: A stage blocked at spawn time stopped the line (what ran, ran).
        pids: Pids of every process the line was seen to start.
    """

    exit_status: int
    stdout: Capture
    stderr: Capture
    timed_out: bool
    blocked: Blocked | None
    pids: tuple[int, ...]


class _Proc:
    __slots__ = ("pidfd", "popen", "stage", "status")

    def __init__(self, stage: CheckedStage, popen: subprocess.Popen[bytes] | None,
                 status: int | None) -> None:
        self.stage = stage
        self.popen = popen
        self.status = status
        self.pidfd: int | None = None


class Execution:
    """One run of a `RunPlan`: its processes, their exit statuses, their end.

    Args:
        plan: The checked plan.
        launcher: Starts each stage.
        workspace: Where the stages' directories and redirect targets lie.
        clock: For the deadline.
        stdout_fd: Where the last stage of each pipeline writes (unless redirected).
        stderr_fd: Where every stage's stderr goes (unless redirected), and where the
            runner writes its own messages (a redirect it could not open …).
        recheck: Asked about each stage right before its pipeline starts.
        sinks: Pipes to drain while waiting, each into its `Capture`.
    """

    def __init__(
        self,
        plan: RunPlan,
        *,
        launcher: ProcessLauncher,
        workspace: Workspace,
        clock: Clock,
        stdout_fd: int,
        stderr_fd: int,
        recheck: Callable[[CheckedStage], Blocked | None] | None = None,
        sinks: dict[int, Capture] | None = None,
    ) -> None:
        self.plan = plan
        self.launcher = launcher
        self.workspace = workspace
        self.clock = clock
        self.stdout_fd = stdout_fd
        self.stderr_fd = stderr_fd
        self.recheck = recheck
        self.tracker = ProcessTracker()
        self.started = threading.Event()
        self.status: int | None = None
        self.blocked: Blocked | None = None
        self.timed_out = False
        self._sinks = dict(sinks or {})
        self._cancelled = False
        self._closed = False
        self._lock = threading.Lock()
        self._procs: list[_Proc] = []
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        for fd in self._sinks:
            os.set_blocking(fd, False)
            self._selector.register(fd, selectors.EVENT_READ)

    # -- control from other threads ---------------------------------------------------

    def cancel(self) -> None:
        """Stop the line: start nothing more, kill every process it started."""
        with self._lock:
            self._cancelled = True
        self.tracker.kill()
        with self._lock:
            if not self._closed:
                try:
                    os.write(self._wake_w, b"x")
                except BlockingIOError:
                    pass  # the pipe is full of earlier wake-ups: the waiter will wake

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    # -- the run ----------------------------------------------------------------------

    def run(self, deadline: float | None = None) -> int | None:
        """Run the plan to its end (or the deadline, or a cancel), then kill what is left.

        Args:
            deadline: A `clock.monotonic()` time after which every process is killed.

        Returns:
            The line's exit status; `TIMEOUT_STATUS` on timeout; None when cancelled or
            blocked before any pipeline ran.
        """
        try:
            self.status = self._chains(deadline)
            return self.status
        finally:
            self.started.set()
            self._finish()

    def _chains(self, deadline: float | None) -> int | None:
        status: int | None = None
        for chain in self.plan.chains:
            last = 0
            for index, pipeline in enumerate(chain.pipelines):
                if index:
                    connector = chain.connectors[index - 1]
                    if (connector is Connector.AND and last != 0) or (
                        connector is Connector.OR and last == 0
                    ):
                        continue
                result = self._pipeline(pipeline, deadline)
                if result is None:
                    return TIMEOUT_STATUS if self.timed_out else status
                last = status = result
        return 0 if status is None else status

    def _pipeline(self, pipeline: CheckedPipeline, deadline: float | None) -> int | None:
        if self.recheck is not None:
            for stage in pipeline.stages:
                blocked = self.recheck(stage)
                if blocked is not None:
                    self.blocked = blocked
                    return None
        with self._lock:
            if self._cancelled:
                return None
            procs = self._spawn_all(pipeline)
        if any(p.popen is not None for p in procs):
            self.started.set()
        if not self._wait(procs, deadline):
            return None
        status = procs[-1].status
        return 0 if status is None else status

    def _spawn_all(self, pipeline: CheckedPipeline) -> list[_Proc]:
        procs: list[_Proc] = []
        stdin: int = subprocess.DEVNULL
        count = len(pipeline.stages)
        for index, stage in enumerate(pipeline.stages):
            read_end = write_end = None
            if index < count - 1:
                read_end, write_end = os.pipe()
            try:
                stdout = write_end if write_end is not None else self.stdout_fd
                procs.append(self._spawn(stage, stdin, stdout))
            finally:
                if write_end is not None:
                    os.close(write_end)
                if stdin != subprocess.DEVNULL:
                    os.close(stdin)
            stdin = read_end if read_end is not None else subprocess.DEVNULL
        return procs

    def _say(self, text: str) -> None:
        try:
            os.write(self.stderr_fd, f"io: {text}\n".encode("utf-8", "replace"))
        except OSError:
            pass  # nobody is reading the runner's own messages any more

    def _spawn(self, stage: CheckedStage, stdin: int, stdout: int) -> _Proc:
        fds = [stdin, stdout, self.stderr_fd]
        opened: list[int] = []
        try:
            for redirect in stage.redirects:
                if redirect.kind is RedirectKind.STDERR_TO_STDOUT:
                    fds[2] = fds[1]
                    continue
                if held(self._abs(redirect.path), os.lstat):
                    self._say(f"{redirect.word}: {REFUSAL}")  # see `harness_core._held_files`
                    return _Proc(stage, None, 1)
                try:
                    fd = os.open(self._abs(redirect.path),
                                 _OPEN_FLAGS[redirect.kind] | _O_CLOEXEC | _O_NOFOLLOW, 0o666)
                except OSError as exc:
                    self._say(f"{redirect.word}: {os.strerror(exc.errno or errno.EIO)}")
                    return _Proc(stage, None, 1)
                opened.append(fd)
                fds[0 if redirect.kind is RedirectKind.STDIN else
                    2 if redirect.kind in (RedirectKind.STDERR, RedirectKind.STDERR_APPEND)
                    else 1] = fd
            return self._start(stage, fds)
        finally:
            for fd in opened:
                os.close(fd)

    def _abs(self, rel: str) -> str:
        return os.path.join(self.workspace.root, *rel.split("/")) if rel else str(
            self.workspace.root
        )

    def _start(self, stage: CheckedStage, fds: list[int]) -> _Proc:
        if stage.cd is not None:
            if os.path.isdir(self._abs(stage.cd)):
                return _Proc(stage, None, 0)
            self._say(f"cd: {stage.stage.cd}: No such file or directory")
            return _Proc(stage, None, 1)
        if not stage.argv:
            return _Proc(stage, None, 0)
        cwd = self._abs(stage.cwd)
        if not os.path.isdir(cwd):
            self._say(f"{stage.argv[0]}: cannot run in {stage.stage.cwd or '.'!r}: "
                      "No such directory (cd is applied when the line is planned)")
            return _Proc(stage, None, 1)
        request = LaunchRequest(
            argv=list(stage.argv), cwd=Path(cwd), stdin=fds[0], stdout=fds[1], stderr=fds[2]
        )
        try:
            popen = self.launcher.popen(request)
        except ToolError as exc:
            self._say(f"{stage.argv[0]}: {exc.message}")
            return _Proc(stage, None, 127)
        proc = _Proc(stage, popen, None)
        self.tracker.add(popen)
        self._procs.append(proc)
        proc.pidfd = exit_fd(popen)
        if proc.pidfd is not None:
            self._selector.register(proc.pidfd, selectors.EVENT_READ, proc)
        return proc

    # -- waiting ------------------------------------------------------------------------

    def _wait(self, procs: list[_Proc], deadline: float | None) -> bool:
        pending = [p for p in procs if p.status is None]
        interval = _SNAPSHOT_FIRST
        next_snapshot = self.clock.monotonic() + interval
        while True:
            pending = [p for p in pending if not self._exited(p)]
            if not pending:
                return True
            if self._cancelled:
                return False
            now = self.clock.monotonic()
            if deadline is not None and now >= deadline:
                self.timed_out = True
                self.tracker.kill()
                return False
            if now >= next_snapshot:
                self.tracker.snapshot()
                interval = min(interval * 2, _SNAPSHOT_MAX)
                next_snapshot = now + interval
            timeout = next_snapshot - now
            if deadline is not None:
                timeout = min(timeout, deadline - now)
            if any(p.pidfd is None for p in pending):
                timeout = min(timeout, _NO_PIDFD_TICK)
            self._pump(max(timeout, 0.0))

    def _exited(self, proc: _Proc) -> bool:
        if proc.status is not None:
            return True
        assert proc.popen is not None
        if _HAS_WAITID:
            proc.status = peek_status(proc.popen)
        else:  # without WNOWAIT the leader is reaped here (see _tree on group ids)
            code = proc.popen.poll()
            proc.status = None if code is None else (128 - code if code < 0 else code)
        if proc.status is not None and proc.pidfd is not None:
            self._selector.unregister(proc.pidfd)
            os.close(proc.pidfd)
            proc.pidfd = None
        return proc.status is not None

    def _pump(self, timeout: float) -> None:
        for key, _ in self._selector.select(timeout):
            fd = int(key.fd)
            if fd == self._wake_r:
                try:
                    os.read(fd, 512)
                except BlockingIOError:
                    pass
            elif fd in self._sinks:
                self._drain_once(fd)

    def _drain_once(self, fd: int) -> bool:
        """Read what is there; False (and stop watching) at end of file."""
        try:
            data = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return True
        if data:
            self._sinks[fd].feed(data)
            return True
        self._selector.unregister(fd)
        del self._sinks[fd]
        return False

    def drain(self, grace: float = _DRAIN_GRACE) -> None:
        """Read the sinks to end of file (their write ends closed by the caller).

        Gives up after `grace` seconds: a process that escaped every kill may hold a
        write end open for ever.
        """
        stop = self.clock.monotonic() + grace
        while self._sinks:
            left = stop - self.clock.monotonic()
            if left <= 0:
                break
            for key, _ in self._selector.select(left):
                fd = int(key.fd)
                if fd in self._sinks:
                    self._drain_once(fd)

    # -- the end ------------------------------------------------------------------------

    def _finish(self) -> None:
        self.tracker.kill()
        for proc in self._procs:
            popen = proc.popen
            assert popen is not None
            try:
                if proc.status is not None:
                    popen.wait()
                else:
                    self.launcher.kill_tree(popen)
                    if proc.status is None and popen.returncode is not None:
                        code = popen.returncode
                        proc.status = 128 - code if code < 0 else code
            finally:
                self.launcher.finish(popen)
            if proc.pidfd is not None:
                self._selector.unregister(proc.pidfd)
                os.close(proc.pidfd)
                proc.pidfd = None

    def close(self) -> None:
        """Release the runner's own descriptors (after `run` and `drain`). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._selector.close()
            os.close(self._wake_r)
            os.close(self._wake_w)


def run_line(
    plan: RunPlan,
    *,
    launcher: ProcessLauncher,
    workspace: Workspace,
    clock: Clock,
    timeout: float,
    output_cap: int,
    recheck: Callable[[CheckedStage], Blocked | None] | None = None,
) -> LineResult:
    """Run a checked line in the foreground and capture its output.

    Args:
        plan: The checked plan.
        launcher: Starts each stage.
        workspace: The root the plan's paths are relative to.
        clock: For the timeout.
        timeout: Seconds before every process of the line is killed.
        output_cap: Bytes of stdout kept, and as many of stderr (first half and last
            half of each; the rest counted).
        recheck: Asked about each stage right before its pipeline starts.

    Returns:
        The line's exit status, its bounded output, and whether it timed out or was
        stopped by a recheck.

    Raises:
        SandboxUnavailable: The launcher could not confine a stage (nothing more runs).
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    stdout, stderr = Capture(output_cap), Capture(output_cap)
    execution = Execution(
        plan, launcher=launcher, workspace=workspace, clock=clock, stdout_fd=out_w,
        stderr_fd=err_w, recheck=recheck, sinks={out_r: stdout, err_r: stderr},
    )
    try:
        try:
            status = execution.run(clock.monotonic() + timeout)
        finally:
            os.close(out_w)
            os.close(err_w)
        execution.drain()
    finally:
        execution.close()
        os.close(out_r)
        os.close(err_r)
    return LineResult(
        exit_status=TIMEOUT_STATUS if execution.timed_out else (status or 0),
        stdout=stdout,
        stderr=stderr,
        timed_out=execution.timed_out,
        blocked=execution.blocked,
        pids=tuple(execution.tracker.pids()),
    )
