"""One sandbox per run: a resident launcher that starts each command inside it.

Starting a sandbox per command costs bubblewrap's namespaces and mounts, and moving
the command into its pids cgroup costs the kernel an RCU grace period (~10 ms here).
A `ResidentLauncher` instead starts one long-lived sandbox at its first command: the
host process (bwrap, or on the floor the launcher itself) runs `_inner`, which receives
each command over a unix socket (program, argv, env, cwd, rlimits, and the command's
stdin/stdout/stderr as fds passed with SCM_RIGHTS), hands it to a *spare* child that
already sits in a fresh pids cgroup of its own, and reports the command's pid (as `io`
sees it) and later its exit status. The command is returned as a `RemoteProcess`.

What each command gets is what the per-command path gave it: its own session and
process group, its own pids cgroup with `pids.max`, the rlimits, the scrubbed
environment, fds 0-2 only. The backend decides per command whether the running sandbox
still fits (`_fits`): the Linux backend compares the read masks and protected-path
binds the policy decides now (paths and the inodes under them) with those the sandbox
was built with, and starts a fresh sandbox when they differ; the old one is retired
once its running commands are finished.

The sandbox dies with `io`: bwrap runs with `--die-with-parent` (it is started from a
thread that lives as long as the process, since the parent-death signal follows the
thread that forked) and the launcher exits when its control socket closes. The ledger
records the sandbox's process, so a sweep after `kill -9` of `io` ends what is left.
A launcher that dies under a run costs one command a `SandboxUnavailable`; the next
command starts a fresh sandbox.
"""

from __future__ import annotations

import abc
import os
import subprocess
import threading
import weakref
from collections.abc import Hashable
from pathlib import Path
from typing import IO

from harness_core.errors import SandboxUnavailable, ToolError
from harness_core.sandbox._base import LaunchRequest, SandboxSpec, Selected
from harness_core.sandbox._box import INTERPRETER, Resident, ResidentStart, inner_source
from harness_core.sandbox._cgroup import PidsHierarchy
from harness_core.sandbox._ledger import current_ledger
from harness_core.sandbox._process import PosixLauncher, _Run, resolve_program
from harness_core.sandbox._remote import RemoteProcess

__all__ = ["INTERPRETER", "ResidentLauncher", "ResidentStart", "inner_source"]


def _stdio(value: IO[bytes] | int | None, default: int, writing: bool) -> tuple[int, IO[bytes] | None, bool]:
    """(fd for the child, parent-side file object, whether to close the fd after sending)."""
    if value is None:
        return default, None, False
    if value == subprocess.DEVNULL:
        return os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC), None, True
    if value == subprocess.PIPE:
        read_end, write_end = os.pipe()
        if writing:  # the child writes: the parent reads
            return write_end, open(read_end, "rb", buffering=0), True  # noqa: SIM115
        return read_end, open(write_end, "wb", buffering=0), True  # noqa: SIM115
    if isinstance(value, int):
        return value, None, False
    return value.fileno(), None, False


def _stdio_parts(request: LaunchRequest) -> list[tuple[int, IO[bytes] | None, bool]]:
    """`_stdio` of the request's stdin, stdout and stderr; stderr into stdout is stdout's
    descriptor again (nothing of its own to close)."""
    parts = [
        _stdio(request.stdin, 0, writing=False),
        _stdio(request.stdout, 1, writing=True),
        _stdio(request.stderr, 2, writing=True)
        if request.stderr != subprocess.STDOUT else (-1, None, False),
    ]
    if parts[2][0] == -1:
        parts[2] = (parts[1][0], None, False)
    return parts


class ResidentLauncher(PosixLauncher, abc.ABC):
    """A `PosixLauncher` whose commands start inside one long-lived sandbox per fit.

    Subclasses say how to start the sandbox (`_start`), and what must match for a
    command to reuse it (`_fits`).
    """

    def __init__(
        self, selected: Selected, spec: SandboxSpec, *, pids: PidsHierarchy | None
    ) -> None:
        super().__init__(selected, spec, apply_rlimits=True, pids=pids)
        self.pids = pids
        self._current: Resident | None = None
        self._resident_lock = threading.Lock()
        self._owners: dict[int, Resident] = {}

    # -- what backends provide --------------------------------------------------------

    def _fits(self) -> Hashable:
        """What the sandbox was built from; a command needing another value gets a fresh one."""
        return ()

    @abc.abstractmethod
    def _start(self, key: Hashable) -> ResidentStart:
        """Start the sandbox that `key` describes, its launcher waiting on a socket."""

    # -- the launcher ---------------------------------------------------------------

    def _resident(self) -> Resident:
        key = self._fits()
        with self._resident_lock:
            current = self._current
            if current is not None and not current.alive():
                if current.failed is None:
                    current.failed = f"the sandbox's launcher ended ({current.why_dead()})"
                self._current = None
                self._retire(current)
                raise SandboxUnavailable(current.dead_message())
            if current is not None and current.key != key:
                self._current = None
                self._retire(current)
                current = None
            if current is None:
                current = self._current = Resident(
                    key, self._start(key), self.pids, self.spec.limits.max_processes)
                # A launcher dropped without `close` (library use) still ends its sandbox.
                weakref.finalize(self, current.close, True)
            current.users += 1
            return current

    def _retire(self, resident: Resident) -> None:
        """Close `resident` once its last command is finished (now, if it has none)."""
        resident.retiring = True
        if resident.users == 0:
            resident.close(wait=False)

    def popen(self, request: LaunchRequest) -> subprocess.Popen[bytes]:
        """Start one command inside the run's sandbox (see the module docstring): the
        command and its stdio descriptors go to a spare child waiting inside it, as one
        message (`Resident.run`).

        Raises:
            ToolError: Empty argv, a missing working directory, or the program is not found.
            SandboxUnavailable: The sandbox could not start or run the command.
        """
        if not request.argv:
            raise ToolError("empty command line")
        cwd = Path(request.cwd)
        if not cwd.is_dir():
            raise ToolError(f"working directory does not exist: {cwd}")
        env = self._environment()
        program = resolve_program(request.argv[0], env, cwd)
        argv = [program, *request.argv[1:]]
        resident = self._resident()
        try:
            parts = _stdio_parts(request)
            try:
                pid, status, cgroup, started = resident.run(
                    self._run_message(request, program, argv, env), [p[0] for p in parts])
            except BaseException:
                for _, parent, _ in parts:
                    if parent is not None:
                        parent.close()
                raise
            finally:
                for fd, _, close in parts:
                    if close:
                        os.close(fd)
        except BaseException:
            self._release_user(resident)
            if resident.failed is not None:  # this command had the error; the next starts afresh
                with self._resident_lock:
                    if self._current is resident:
                        self._current = None
                        self._retire(resident)
            raise
        stdin, stdout, stderr = (p[1] for p in parts)
        process = RemoteProcess(argv, pid, status, stdin, stdout, stderr)
        with self._lock:
            self._runs[process.pid] = _Run(cgroup, [])
            self._owners[process.pid] = resident
        ledger = current_ledger()
        if ledger is not None:
            ledger.add(process.pid, cgroup.path if cgroup is not None else None, started=started)
        return process

    def _run_message(self, request: LaunchRequest, program: str, argv: list[str],
                     env: dict[str, str]) -> dict[str, object]:
        """The spare's `run` message: what to execute, where, with which limits."""
        return {
            "kind": "run",
            "program": os.fsencode(program),
            "argv": [os.fsencode(a) for a in argv],
            "env": [os.fsencode(f"{k}={v}") for k, v in env.items()],
            "cwd": os.fsencode(os.path.realpath(request.cwd)),
            "rlimits": self._rlimits,
        }

    def _release_user(self, resident: Resident) -> None:
        with self._resident_lock:
            resident.users -= 1
            retire = resident.retiring
            if retire and resident.users == 0:
                resident.close(wait=False)
        if not retire:
            resident.top_up()

    def finish(self, process: subprocess.Popen[bytes]) -> None:
        """Kill what is left of the command, remove its cgroup (in the background: a
        removal waits for any cgroup migration in flight), retire its sandbox if that
        was the last command of a retiring one."""
        if process.returncode is None:
            self.kill_tree(process)
        with self._lock:
            run = self._runs.pop(process.pid, None)
            resident = self._owners.pop(process.pid, None)
        if run is not None:  # the launcher removes the cgroup once it reaped the command
            if run.cgroup is not None:
                run.cgroup.kill_all()  # what the command left behind (a setsid grandchild)
            ledger = current_ledger()
            if ledger is not None:
                ledger.remove(process.pid)
        if resident is not None:
            self._release_user(resident)

    def close(self) -> None:
        """End the sandbox (at run end). Commands still running are killed with it."""
        with self._resident_lock:
            current, self._current = self._current, None
        if current is not None:
            current.close(wait=True)
