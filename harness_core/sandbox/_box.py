"""One live resident sandbox: its host process, its control socket, its spares.

`Resident` starts the host process (bwrap around the launcher, or on the floor the
launcher itself, `_inner`) from a thread that lives as long as the process (bwrap's
`--die-with-parent` follows the thread that forked it), asks the launcher for spares,
hands each command to a ready spare, and ends the sandbox. See `_resident` for how a
launcher uses it and `_inner` for the launcher's side of the protocol.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Hashable
from dataclasses import field
from pathlib import Path
from typing import Any

from harness_core._record import record
from harness_core.errors import SandboxUnavailable
from harness_core.sandbox._cgroup import PidsCgroup, PidsHierarchy
from harness_core.sandbox._inner import send_message
from harness_core.sandbox._ledger import current_ledger
from harness_core.sandbox._started import process_started

__all__ = ["INTERPRETER", "Resident", "ResidentStart", "inner_source"]

INTERPRETER = os.path.realpath(sys.executable)
"""Runs the launcher (and the egress forwarder) with `-I -S`: no site, no user paths."""

_PREFIX = "c"
"""Names of the commands' cgroups inside the sandbox's own: c1, c2, ..."""
_SPARES = 4
"""Spare processes kept ready, each already in its own pids cgroup."""
_LOW = 2
"""The pool is topped up to `_SPARES` (in one message) when this few are left after a
command finished (`top_up`)."""
_START_SECONDS = 30.0
"""How long a command may wait for the launcher to start it before it is given up."""

_source: str | None = None


def inner_source() -> str:
    """The launcher program's source (run with ``python -I -S -c``)."""
    global _source
    if _source is None:
        _source = Path(__file__).with_name("_inner.py").read_text(encoding="utf-8")
    return _source


@record(frozen=False)
class ResidentStart:
    """How a backend starts its sandbox's host process around the launcher.

    Attributes:
        argv: The full command line; the launcher's control fd is `control_fd`.
        env: The host process's environment.
        pass_fds: Fds the host process inherits besides the control socket.
        parent_fds: Fds to close in `io` once it started.
        on_close: Clean-ups once the sandbox has ended (placeholders).
        launcher_args: Flags for the launcher itself (`--proxy-env`).
    """

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    parent_fds: list[int] = field(default_factory=lambda: [])
    on_close: list[Callable[[], None]] = field(default_factory=lambda: [])
    launcher_args: list[str] = field(default_factory=lambda: [])


_spawn_queue: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[Any]]] | None = None
_spawn_lock = threading.Lock()


def _spawner() -> None:
    assert _spawn_queue is not None
    while True:
        job, reply = _spawn_queue.get()
        try:
            reply.put((True, job()))
        except BaseException as exc:  # handed back to the caller's thread
            reply.put((False, exc))


def _on_spawner_thread(job: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """Run `job` (a Popen) on one thread that lives as long as the process: bwrap's
    `--die-with-parent` follows the thread that forked it, not the process."""
    global _spawn_queue
    with _spawn_lock:
        if _spawn_queue is None:
            _spawn_queue = queue.SimpleQueue()
            threading.Thread(target=_spawner, name="io-sandbox-spawner", daemon=True).start()
    reply: queue.SimpleQueue[Any] = queue.SimpleQueue()
    _spawn_queue.put((job, reply))
    ok, value = reply.get()
    if not ok:
        raise value
    result: subprocess.Popen[bytes] = value
    return result


@record(frozen=False)
class _Spare:
    run: socket.socket
    status: socket.socket


class Resident:
    """One live sandbox: its host process, its control socket, its spares."""

    def __init__(
        self, key: Hashable, start: ResidentStart, pids: PidsHierarchy | None,
        max_processes: int | None,
    ) -> None:
        self.key = key
        self.users = 0
        self.retiring = False
        self.failed: str | None = None
        self._on_close = start.on_close
        self._spares: list[_Spare] = []
        self._lock = threading.Lock()
        self._closed = False
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._control = mine
        argv = [*start.argv, str(theirs.fileno())]
        passed = [*start.pass_fds, theirs.fileno()]
        self.cgroup: PidsCgroup | None = None
        try:
            if pids is not None:  # the sandbox's cgroup; each command gets one inside it
                self.cgroup = PidsCgroup.create(pids, None)
                base = os.open(self.cgroup.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                start.parent_fds.append(base)
                passed.append(base)
                limit = "max" if max_processes is None else str(max_processes)
                argv += ["--cgroups", str(base), _PREFIX, limit]
            argv += start.launcher_args
            self.process = _on_spawner_thread(lambda: subprocess.Popen(
                argv, env=start.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
                pass_fds=tuple(passed)))
        except (OSError, subprocess.SubprocessError) as exc:
            mine.close()
            if self.cgroup is not None:
                self.cgroup.remove()
            for clean_up in self._on_close:
                clean_up()
            raise SandboxUnavailable(f"could not start the sandbox: {exc}") from exc
        finally:
            theirs.close()
            for fd in start.parent_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        ledger = current_ledger()
        if ledger is not None:
            ledger.add(self.process.pid, self.cgroup.path if self.cgroup else None)
        try:
            self._add_spares(_SPARES)
        except SandboxUnavailable:
            self.kill()
            self.close(wait=True)
            raise

    def _add_spares(self, count: int) -> None:
        """Ask the launcher for `count` more spares, in one message (one wake-up)."""
        pairs = [(socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM),
                  socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)) for _ in range(count)]
        for _, (status, _) in pairs:
            status.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        fds = [fd for (_, run), (_, status) in pairs for fd in (run.fileno(), status.fileno())]
        try:
            with self._lock:
                if self._closed:
                    raise SandboxUnavailable("the sandbox was closed")
                send_message(self._control, {"kind": "spare"}, fds)
                self._spares += [_Spare(run, status) for (run, _), (status, _) in pairs]
        except (OSError, SandboxUnavailable) as exc:
            for (run, _), (status, _) in pairs:
                run.close()
                status.close()
            if isinstance(exc, OSError):
                self.failed = f"the sandbox's launcher is gone ({exc.strerror or exc})"
                raise SandboxUnavailable(self.dead_message()) from exc
            raise
        finally:
            for (_, run), (_, status) in pairs:
                run.close()
                status.close()

    def alive(self) -> bool:
        return self.failed is None and self.process.poll() is None

    def why_dead(self) -> str:
        if self.failed is not None:
            return self.failed
        said = b""
        if self.process.stderr is not None:
            with contextlib.suppress(OSError, TypeError, ValueError):
                os.set_blocking(self.process.stderr.fileno(), False)
                said = self.process.stderr.read(4096) or b""
        text = said.decode(errors="replace").strip().splitlines()
        status = self.process.poll()
        return f"exit status {status}" + (f": {text[-1]}" if text else "")

    def run(
        self, message: dict[str, Any], stdio: list[int]
    ) -> tuple[int, socket.socket, PidsCgroup | None, float | None]:
        """Hand one command to a ready spare; returns (its pid, its status socket, its
        cgroup, its start time for the ledger). Does not wait for the command to start:
        the spare's pid is its pid, and its start time is read while it waits (a read
        during the command's `exec` would wait for the exec)."""
        with self._lock:
            spare = self._spares.pop(0) if self._spares else None
        while spare is None:  # all taken (a pipeline's stages, other threads): one more
            self._add_spares(1)
            with self._lock:
                spare = self._spares.pop(0) if self._spares else None
        try:
            pid, cgroup = self._ready(spare.status)
            started = process_started(pid)
            try:
                send_message(spare.run, message, stdio)
            except OSError as exc:
                self.failed = f"a spare of the sandbox's launcher is gone ({exc.strerror or exc})"
                raise SandboxUnavailable(self.dead_message()) from exc
            finally:
                spare.run.close()
        except BaseException:
            spare.run.close()
            spare.status.close()
            raise
        return pid, spare.status, cgroup, started

    def top_up(self) -> None:
        """Ask for more spares when few are left. Called once a command is finished, not
        as it starts: the launcher's forks would compete with the command for the CPUs."""
        with self._lock:
            short = _SPARES - len(self._spares) if len(self._spares) <= _LOW and not self._closed else 0
        if short > 0:
            with contextlib.suppress(SandboxUnavailable):  # the next command reports it
                self._add_spares(short)

    def _ready(self, status: socket.socket) -> tuple[int, PidsCgroup | None]:
        """Wait for the spare's ``P`` (normally there already): its pid and cgroup."""
        status.settimeout(_START_SECONDS)
        try:
            data, ancillary, _, _ = status.recvmsg(4096, socket.CMSG_SPACE(12))
        except TimeoutError:
            self.failed = (f"the sandbox's launcher did not ready a process within "
                           f"{_START_SECONDS:g} s")
            self.kill()
            raise SandboxUnavailable(self.dead_message()) from None
        except OSError as exc:
            data, ancillary = b"", []
            self.failed = f"the sandbox's launcher is gone ({exc})"
        status.settimeout(None)
        if data.startswith(b"E"):
            raise SandboxUnavailable(data[1:].decode(errors="replace"))
        if not data.startswith(b"P"):
            if self.failed is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=1)
                self.failed = f"the sandbox's launcher ended ({self.why_dead()})"
            raise SandboxUnavailable(self.dead_message())
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid: int = struct.unpack("3i", payload[:12])[0]
                if pid > 0:
                    return pid, self._cgroup(data[1:].decode())
        raise SandboxUnavailable("the launcher's report carried no process id")

    def _cgroup(self, name: str) -> PidsCgroup | None:
        if self.cgroup is None:
            return None
        if not name.startswith(_PREFIX) or not name[len(_PREFIX):].isdigit():
            raise SandboxUnavailable(f"the launcher reported an unexpected cgroup {name!r}")
        return PidsCgroup(self.cgroup.hierarchy, self.cgroup.path / name)

    def dead_message(self) -> str:
        return (f"{self.failed}; the command did not start, and the next command starts "
                "a fresh sandbox")

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def close(self, wait: bool) -> None:
        """End the sandbox: its launcher exits once no command of it is left; with
        `wait` (run end) it is killed at once if a command still runs, and waited for."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            spares, self._spares = self._spares, []
        if wait and self.users > 0:
            self.kill()
        for spare in spares:  # an idle spare exits when its run socket closes
            spare.run.close()
            spare.status.close()
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        self._control.close()
        if wait:
            self._finish()
        else:
            threading.Thread(target=self._finish, name="io-sandbox-retire", daemon=True).start()

    def _finish(self) -> None:
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        ledger = current_ledger()
        if ledger is not None:
            ledger.remove(self.process.pid)
        if self.cgroup is not None:  # and what a launcher that died left behind in it
            with contextlib.suppress(OSError):
                for entry in self.cgroup.path.iterdir():
                    if entry.is_dir():
                        PidsCgroup(self.cgroup.hierarchy, entry).remove()
            self.cgroup.remove()
        for clean_up in self._on_close:
            clean_up()
