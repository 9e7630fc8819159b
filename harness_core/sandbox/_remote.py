"""A command started by a run's resident launcher, seen from `io` as a `Popen`.

The command is the launcher's child, not `io`'s, so `io` cannot `waitid` it. The
launcher reports its exit on the command's status socket (``X<returncode>``) and keeps
it unreaped until `io` releases it (``R``, or closing the socket), so its pid and
process group id stay reserved while `io` may signal them, as with a child of its own.
`peek_status` and `exit_fd` (`_process`) read a `RemoteProcess` through that socket.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import IO

__all__ = ["RemoteProcess", "exit_fd", "peek_status"]


def _zombie_code(pid: int) -> int | None:
    """The exit status (`Popen.returncode` form) of zombie `pid`, from `/proc/PID/stat`.

    The kernel shows the exit code only to a reader with ptrace access to the process
    (it prints 0 otherwise: a setuid command run by a non-root io); `/proc/PID/io` is
    refused under the same check, so a refusal there means "ask the launcher".
    """
    try:
        with open(f"/proc/{pid}/io", "rb") as handle:
            handle.read(1)
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2:].split()
    if len(fields) < 50 or fields[0] not in (b"Z", b"X"):
        return None
    status = int(fields[49])  # field 52, exit_code, as waitpid reports it
    return (status >> 8) & 0xFF if status & 0x7F == 0 else -(status & 0x7F)


class RemoteProcess(subprocess.Popen[bytes]):
    """A launcher-started command with the `Popen` surface the runners use.

    `Popen.__init__` is deliberately not called: the launcher started the process.
    """

    def __init__(  # noqa: PLR0913 - the parts of a started process
        self,
        args: Sequence[str],
        pid: int,
        status: socket.socket,
        stdin: IO[bytes] | None,
        stdout: IO[bytes] | None,
        stderr: IO[bytes] | None,
    ) -> None:
        self.args = list(args)
        self.pid = pid
        self.returncode: int | None = None
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self._child_created = False
        self.text_mode = False
        self.encoding = None
        self.errors = None
        self.universal_newlines = False
        self._input = None
        self._communication_started = False
        self._sigint_wait_secs = 0.25
        self._closed_child_pipe_fds = True
        self._waitpid_lock = threading.Lock()
        self._status_sock: socket.socket | None = status
        self._reported: int | None = None
        self._lock = threading.Lock()
        try:  # signals through a pidfd cannot reach a reused pid
            self._pidfd: int | None = os.pidfd_open(pid)
        except OSError:
            self._pidfd = None

    def _read_report(self, timeout: float | None) -> None:
        """Take the launcher's exit report if one is there within `timeout` seconds."""
        sock = self._status_sock
        if sock is None or self._reported is not None:
            return
        ready, _, _ = select.select([sock], [], [], timeout)
        if not ready:
            return
        try:
            data = sock.recv(64)
        except OSError:
            data = b""
        if data.startswith(b"X"):
            self._reported = int(data[1:])
            return
        # The launcher is gone without a report (its sandbox ended, so did the command;
        # on the floor an orphan may remain: kill it, start time checked).
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        self._reported = -signal.SIGKILL

    def _check(self) -> None:
        """Take the exit status if the process has exited: from the zombie itself (the
        launcher leaves it unreaped, so `/proc/PID/stat` still holds its exit code and
        no hop through the launcher is waited for), else from the launcher's report."""
        if self._reported is not None:
            return
        if self._pidfd is not None and select.select([self._pidfd], [], [], 0)[0]:
            self._reported = _zombie_code(self.pid)
            if self._reported is not None:
                return
        self._read_report(0)

    def peek_status(self) -> int | None:
        """The exit status as a shell reports it (0-255, 128+N), leaving it unreaped."""
        with self._lock:
            if self.returncode is not None:
                code = self.returncode
            else:
                self._check()
                if self._reported is None:
                    return None
                code = self._reported
        return code if code >= 0 else 128 - code

    def exit_fd(self) -> int | None:
        """A new fd that becomes readable when the process exits (caller closes it)."""
        with self._lock:
            if self._pidfd is not None:
                return os.dup(self._pidfd)
            if self._status_sock is None:
                return None
            return os.dup(self._status_sock.fileno())

    def _release(self) -> None:
        sock, self._status_sock = self._status_sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.send(b"R")
            sock.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        assert self._reported is not None
        self.returncode = self._reported

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                self._check()
                if self._reported is not None:
                    self._release()
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                self._check()
                if self.returncode is None and self._reported is not None:
                    self._release()
                if self.returncode is not None:
                    return self.returncode
                sock = self._status_sock
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            watch = [fd for fd in (self._pidfd, sock.fileno() if sock else None) if fd is not None]
            with contextlib.suppress(OSError, ValueError):  # outside the lock: a kill may come
                select.select(watch, [], [], left)

    def __del__(self) -> None:
        """Dropped unreleased (a caller that never waited): let the launcher reap it."""
        sock, self._status_sock = self._status_sock, None
        if sock is not None:
            sock.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def send_signal(self, sig: int) -> None:
        with self._lock:
            if self.returncode is None:  # unreleased: the pid is still this process's
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, sig)


def peek_status(process: subprocess.Popen[bytes]) -> int | None:
    """The exit status of `process` as a shell reports it (0-255, or 128+N for signal N)
    if it has exited, leaving it unreaped (its pid stays reserved); else None."""
    if isinstance(process, RemoteProcess):
        return process.peek_status()
    if process.returncode is not None:
        code = process.returncode
        return code if code >= 0 else 128 - code
    try:
        info = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return 128 + signal.SIGKILL
    if info is None or info.si_pid == 0:
        return None
    if info.si_code == os.CLD_EXITED:
        return int(info.si_status)
    return 128 + int(info.si_status)


def exit_fd(process: subprocess.Popen[bytes]) -> int | None:
    """A new fd that becomes readable when `process` exits (the caller closes it), or
    None where the kernel offers none (poll `peek_status` then)."""
    if isinstance(process, RemoteProcess):
        return process.exit_fd()
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(process.pid)
    except OSError:
        return None
    return fd
