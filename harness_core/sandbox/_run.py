"""Run one command to its end through a launcher: wall clock, output caps, whole-tree kill.

`run_command` is what verification gates and `exec` call. It feeds stdin, reads
stdout and stderr at once (so neither pipe can fill and stall the child), keeps at
most `max_output` bytes of each and counts the rest, and enforces the wall clock:
at the deadline the launcher's `kill_tree` ends the process group, every
descendant, the pid namespace and the cgroup. When the command's own process
exits, whatever it left running is killed the same way, so a background
grandchild cannot keep the pipes open or outlive the command. The deadline is the
smaller of the caller's timeout and the launcher's `[sandbox] wall_seconds`. While it
runs, its descendants are sampled (from 20 ms, the gap doubling to 1 s) and each one
that left its session or group is written to the process ledger, so a sweep after
`kill -9` of `io` can name it.

It never raises for the command's own failure: a non-zero exit, a kill by a limit
and a timeout are all data in `CommandResult`.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from contextlib import suppress
from dataclasses import replace
from typing import IO

from harness_core._record import record
from harness_core.sandbox._base import LaunchRequest, ProcessLauncher, SandboxSpec
from harness_core.sandbox._ledger import current_ledger, note_escapees
from harness_core.sandbox._remote import exit_fd, peek_status

__all__ = ["DEFAULT_MAX_OUTPUT", "CommandResult", "run_command"]

DEFAULT_MAX_OUTPUT = 1024 * 1024
"""Bytes kept per stream; the rest is counted in `truncated_bytes`."""

_DRAIN_SECONDS = 0.5
"""How long to keep reading once the tree is dead. Only a process that escaped the
kill (possible on the floor without a cgroup) can hold the pipes open longer."""
_POLL_SECONDS = 0.05
"""Exit check interval where the kernel has no pidfd to wait on."""
_SAMPLE_FIRST = 0.02
_SAMPLE_MAX = 1.0
"""The first and the longest gap between two samples of a command's descendants (a
sample lists every process: about a millisecond on a host with a few hundred)."""


@record
class CommandResult:
    """How one command ended.

    Attributes:
        exit_status: The exit status as a shell reports it: 0-255, or 128+N when a
            signal N ended the process (a CPU-limit kill is 128+24 or 128+9).
        stdout: Up to `max_output` bytes of standard output.
        stderr: Up to `max_output` bytes of standard error (empty when merged into stdout).
        truncated_bytes: Bytes read beyond the caps and dropped, both streams together.
        timed_out: The wall clock ran out and the tree was killed.
        stdout_dropped: Of `truncated_bytes`, those of standard output.
        stderr_dropped: Of `truncated_bytes`, those of standard error.
    """

    exit_status: int
    stdout: bytes
    stderr: bytes
    truncated_bytes: int
    timed_out: bool
    stdout_dropped: int = 0
    stderr_dropped: int = 0


def run_command(
    launcher: ProcessLauncher,
    request: LaunchRequest,
    *,
    timeout: float | None = None,
    stdin_data: bytes | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> CommandResult:
    """Start `request` through `launcher`, wait for it within the wall clock, collect output.

    Args:
        launcher: The confinement to run under.
        request: What to run; its stdout and stderr are replaced by pipes (a request
            that merges stderr into stdout keeps that).
        timeout: Seconds before the whole tree is killed; capped by the launcher's
            `wall_seconds` when it has a spec.
        stdin_data: Bytes fed to stdin, then closed; None keeps `request.stdin`.
        max_output: Bytes kept per stream.

    Returns:
        The exit status, the captured output and whether the clock ran out.

    Raises:
        ToolError: The program was not found.
        SandboxUnavailable: The confinement could not be set up.
    """
    limit = _effective_timeout(launcher, timeout)
    merged = request.stderr == subprocess.STDOUT
    request = replace(
        request,
        stdin=subprocess.PIPE if stdin_data is not None else request.stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
    )
    process = launcher.popen(request)
    try:
        pump = _Pump(launcher, process, stdin_data or b"", max_output)
    except BaseException:
        launcher.finish(process)  # kills what it started
        _close_pipes(process)
        raise
    try:
        timed_out = pump.run(None if limit is None else time.monotonic() + limit)
    finally:
        if process.returncode is None:
            launcher.kill_tree(process)
        launcher.finish(process)
        pump.close()
    status = process.returncode if process.returncode is not None else -9
    return CommandResult(
        exit_status=status if status >= 0 else 128 - status,
        stdout=bytes(pump.out[1]),
        stderr=bytes(pump.out[2]),
        truncated_bytes=pump.truncated,
        stdout_dropped=pump.dropped[1],
        stderr_dropped=pump.dropped[2],
        timed_out=timed_out,
    )


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with suppress(OSError):
                stream.close()


def _effective_timeout(launcher: ProcessLauncher, timeout: float | None) -> float | None:
    spec = getattr(launcher, "spec", None)
    wall = spec.limits.wall_seconds if isinstance(spec, SandboxSpec) else None
    if wall is None:
        return timeout
    return wall if timeout is None else min(timeout, wall)


class _Pump:
    """Moves bytes between the pipes and buffers until the command and its tree are done."""

    def __init__(
        self,
        launcher: ProcessLauncher,
        process: subprocess.Popen[bytes],
        stdin_data: bytes,
        max_output: int,
    ) -> None:
        self._launcher = launcher
        self._process = process
        self._max = max_output
        self._pending = memoryview(stdin_data)
        self.out: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        self.truncated = 0
        self.dropped: dict[int, int] = {1: 0, 2: 0}
        self._selector = selectors.DefaultSelector()
        self._pidfd = exit_fd(process)
        self._streams: dict[int, IO[bytes]] = {}
        for number, stream in ((1, process.stdout), (2, process.stderr)):
            if stream is not None:
                self._streams[number] = stream
                self._selector.register(stream.fileno(), selectors.EVENT_READ, number)
        if process.stdin is not None:
            os.set_blocking(process.stdin.fileno(), False)
            self._selector.register(process.stdin.fileno(), selectors.EVENT_WRITE, 0)
        if self._pidfd is not None:
            self._selector.register(self._pidfd, selectors.EVENT_READ, -1)
        self._exited = False
        self._sampled: set[int] = set()
        self._gap = _SAMPLE_FIRST
        self._next_sample: float | None = (
            time.monotonic() + _SAMPLE_FIRST if current_ledger() is not None else None)

    def run(self, deadline: float | None) -> bool:
        """Pump until done; returns whether the deadline killed the command."""
        drain_until: float | None = None
        timed_out = False
        while self._readers() or not self._exited:
            now = time.monotonic()
            if drain_until is not None and now >= drain_until:
                break
            if not self._exited and deadline is not None and now >= deadline:
                timed_out = True
                self._end_tree()
                drain_until = now + _DRAIN_SECONDS
                continue
            self._sample(now)
            upcoming = deadline if self._next_sample is None or self._exited else (
                self._next_sample if deadline is None else min(deadline, self._next_sample))
            self._step(_wait_seconds(now, upcoming, drain_until, self._pidfd is None))
            if not self._exited and self._child_exited():
                self._end_tree()
                drain_until = time.monotonic() + _DRAIN_SECONDS
        return timed_out

    def _sample(self, now: float) -> None:
        """Record the command's escaped descendants in the ledger when a sample is due."""
        if self._next_sample is None or self._exited or now < self._next_sample:
            return
        note_escapees(self._process.pid, self._sampled)
        self._gap = min(self._gap * 2, _SAMPLE_MAX)
        self._next_sample = now + self._gap

    def _readers(self) -> bool:
        return bool(self._streams)

    def _child_exited(self) -> bool:
        return peek_status(self._process) is not None

    def _end_tree(self) -> None:
        """The command is over (exit or deadline): kill what is left, reap, stop feeding it."""
        self._exited = True
        self._launcher.kill_tree(self._process)
        self._close_stdin()
        if self._pidfd is not None:
            self._selector.unregister(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    def _step(self, wait: float | None) -> None:
        for key, _ in self._selector.select(wait):
            tag = key.data
            if tag == 0:
                self._feed()
            elif tag in (1, 2):
                self._read(tag)

    def _read(self, number: int) -> None:
        stream = self._streams[number]
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            self._selector.unregister(stream.fileno())
            del self._streams[number]
            return
        buffer = self.out[number]
        room = max(0, self._max - len(buffer))
        buffer += chunk[:room]
        self.truncated += len(chunk) - min(room, len(chunk))
        self.dropped[number] += len(chunk) - min(room, len(chunk))

    def _feed(self) -> None:
        stdin = self._process.stdin
        if stdin is None:
            return
        try:
            written = os.write(stdin.fileno(), self._pending[:65536])
        except BlockingIOError:
            return
        except (BrokenPipeError, OSError):
            self._close_stdin()
            return
        self._pending = self._pending[written:]
        if not self._pending:
            self._close_stdin()

    def _close_stdin(self) -> None:
        stdin = self._process.stdin
        if stdin is None or stdin.closed:
            return
        with suppress(KeyError, ValueError):
            self._selector.unregister(stdin.fileno())
        with suppress(OSError):
            stdin.close()

    def close(self) -> None:
        self._close_stdin()
        for stream in (self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        self._selector.close()


def _wait_seconds(
    now: float, deadline: float | None, drain_until: float | None, polling: bool
) -> float | None:
    ends = [t for t in (deadline, drain_until) if t is not None]
    wait = max(0.0, min(ends) - now) if ends else None
    if polling:
        wait = _POLL_SECONDS if wait is None else min(wait, _POLL_SECONDS)
    return wait
