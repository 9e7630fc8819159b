"""The launcher that lives inside a run's sandbox and forks the processes commands run in.

This file is a program, not a library module: the host runs its source with the
interpreter `io` runs on (`python -I -S -c SOURCE FD`), inside bubblewrap (native) or
directly (floor), so it imports nothing but the standard library. FD is its end of a
unix stream socket pair whose other end `io` holds (`_resident`).

A message is an 8-byte header (body length, number of fds; the fds ride on the header
as SCM_RIGHTS) and a `marshal`ed dict body. `io` sends the launcher only
``{"kind": "spare"}``, with pairs of socket ends (a *run* socket and a *status* socket),
one pair per spare wanted. For each the launcher (when commands get pids cgroups) makes
a fresh cgroup inside the sandbox's own and forks a *spare*: a child that moves itself
into that cgroup (a migration costs the
kernel an RCU grace period, ~10 ms, so it is done before any command needs it), leads
a new session, and waits on its run socket.

`io` then hands a command straight to a spare, on its run socket:
``{"program", "argv", "env", "cwd", "rlimits"}`` with the command's stdin, stdout and
stderr. The spare sets the rlimits, changes directory, takes the three fds as 0, 1 and
2, and executes the program (a failure there is reported on the command's stderr and
exit status 127). Once ready, before any command, the spare sends ``P`` on the status
socket: the kernel attaches its pid as `io` sees it (SCM_CREDENTIALS), and that pid is
the command's. The launcher waits for every child: at its
exit it sends ``X<returncode>`` (the `Popen` convention) on the status socket and
leaves it unreaped until `io` answers ``R`` or closes the socket, so its process group
id cannot be reused while `io` may still signal it. A spare whose run socket closes
without a command exits.

When `io` closes the control socket (run end, a retired sandbox, `io` killed) the
launcher exits once every child is reaped, or orphaned because `io` is gone.

With ``--reaper IO_PID`` (the floor, where no PID namespace ends a sandbox's processes
with it) the launcher is a child subreaper: a process a command left behind (a `setsid`
escapee whose parent exited, at any depth) is handed to the launcher rather than to
init. When `io` ends (watched through a pidfd, so a `kill -9` is seen at once) the
launcher kills every command's session and every process handed to it, over and over
until none is left (each kill can orphan more), for at most `_REAP_SECONDS`, then exits.
A process it may not signal (another user's) outlives it and is left to the next `io`'s
sweep, which reports it.
"""

from __future__ import annotations

import _socket as socket  # not `socket`: its enums cost the launcher's start ~6 ms
import marshal
import os
import select
import signal
import struct
import sys
import time

TYPE_CHECKING = False  # not `typing`'s: importing typing costs the start ~4 ms
if TYPE_CHECKING:
    from typing import Any

_HEADER = struct.Struct("!II")
_MAX_FDS = 8


def recv_message(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """One message (body, fds) from `sock`, or None at end of file."""
    fds: list[int] = []
    head = b""
    while len(head) < _HEADER.size:
        data, ancillary, _, _ = sock.recvmsg(
            _HEADER.size - len(head), socket.CMSG_SPACE(_MAX_FDS * 4))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                fds += list(struct.unpack(f"{usable // 4}i", payload[:usable]))
        if not data:
            for fd in fds:
                os.close(fd)
            return None
        head += data
    size, _ = _HEADER.unpack(head)
    body = bytearray()
    while len(body) < size:
        chunk = sock.recv(min(size - len(body), 1 << 20))
        if not chunk:
            for fd in fds:
                os.close(fd)
            return None
        body += chunk
    message = marshal.loads(bytes(body))
    if not isinstance(message, dict):
        raise ValueError("launcher message is not a dict")
    return message, fds


def send_message(sock: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
    """Send `message` with `fds` attached (see the module docstring for the framing)."""
    body = marshal.dumps(message)
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))]
    sock.sendmsg([_HEADER.pack(len(body), len(fds))], ancillary if fds else [])
    sock.sendall(body)


def _close_except(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _execute(message: dict[str, Any], fds: list[int], status: socket.socket) -> None:
    """In the spare: become the command. Never returns."""
    import resource  # unix only; `main` loaded it before any spare was forked

    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    for fd in set(fds):
        if fd > 2:
            os.close(fd)
    status.close()
    program: bytes = message["program"]
    try:
        for res, soft, hard in message["rlimits"]:
            resource.setrlimit(res, (soft, hard))
        os.chdir(message["cwd"])
        os.execve(program, message["argv"], {**dict(_pairs(message["env"])), **_extra_env})
    except OSError as exc:
        what = exc.filename if isinstance(exc.filename, bytes) else program
        os.write(2, b"io: cannot run %s: %s\n" % (what, (exc.strerror or "").encode()))
        os._exit(127)


def _pairs(env: list[bytes]) -> list[tuple[bytes, bytes]]:
    out = []
    for entry in env:
        name, _, value = entry.partition(b"=")
        out.append((name, value))
    return out


def _spare(run: int, status: int, procs: int | None, cgroup: str) -> None:
    """The spare's life: join the cgroup, lead a session, wait for a command."""
    _close_except({run, status} | (set() if procs is None else {procs}))
    try:
        if procs is not None:
            os.write(procs, b"0")
            os.close(procs)
        os.setsid()
        # Ready. The kernel attaches this pid as `io` sees it (SCM_CREDENTIALS).
        os.write(status, b"P" + cgroup.encode())
        received = recv_message(socket.socket(fileno=run))
    except OSError:
        os._exit(126)
    if received is None:
        os._exit(0)
    _execute(*received, socket.socket(fileno=status))


class Cgroups:
    """The commands' pids cgroups, made and removed by the launcher inside the sandbox's
    own cgroup, through a directory fd `io` opened on it (the sandbox sees
    `/sys/fs/cgroup` read-only; `io` made the directory, so its owner, whom the launcher
    runs as, may create in it without any capability)."""

    def __init__(self, base: int, prefix: str, max_pids: str) -> None:
        self.base = base
        self.prefix = prefix
        self.max_pids = max_pids.encode()
        self.serial = 0
        self.pending: dict[str, int] = {}
        """Names whose removal failed (a member not gone yet) -> tries left."""

    def create(self) -> tuple[str, int]:
        """A fresh cgroup with `pids.max` set: (its name, its `cgroup.procs` opened to write)."""
        self.serial += 1
        name = f"{self.prefix}{self.serial}"
        os.mkdir(name, dir_fd=self.base)
        try:
            limit = os.open(f"{name}/pids.max", os.O_WRONLY, dir_fd=self.base)
            try:
                os.write(limit, self.max_pids)
            finally:
                os.close(limit)
            return name, os.open(f"{name}/cgroup.procs", os.O_WRONLY, dir_fd=self.base)
        except OSError:
            os.rmdir(name, dir_fd=self.base)
            raise

    def remove(self, name: str, tries: int = 200) -> None:
        try:
            os.rmdir(name, dir_fd=self.base)
        except FileNotFoundError:
            pass
        except OSError:
            if tries > 0:
                self.pending[name] = tries - 1

    def retry(self) -> None:
        pending, self.pending = self.pending, {}
        for name, tries in pending.items():
            self.remove(name, tries)


def _prctl(option: int, value: int, what: str) -> None:
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), what)


_IO_EXIT_SECONDS = 2.0
"""How long a launcher left with commands waits to see whether `io` is dying."""

_REAP_SECONDS = 10.0
"""How long the launcher keeps ending what a dead `io` left before it gives up."""


def _adopted() -> list[int]:
    """The launcher's children now (its commands and the orphans handed to it)."""
    try:  # one thread: its children are the process's
        with open(f"/proc/self/task/{os.getpid()}/children", "rb") as handle:
            return [int(pid) for pid in handle.read().split()]
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN: every process's parent
        pass
    me = str(os.getpid()).encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == me:
            found.append(int(name))
    return found


def end_everything() -> None:
    """`io` is gone: kill every child and what they started, until nothing is left."""
    own = os.getpgrp()
    deadline = time.monotonic() + _REAP_SECONDS
    while time.monotonic() < deadline:
        children = _adopted()
        for pid in children:
            try:
                group = os.getpgid(pid)
                if group != own:
                    os.killpg(group, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            if not children:
                return
        select.select([], [], [], 0.02)


def _dumpable(value: int) -> None:
    """prctl(PR_SET_DUMPABLE): a non-dumpable launcher's fds (the cgroup directory) cannot
    be opened through /proc/PID/fd by a command."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")


class Launcher:
    """The launcher's state: its children (spares and the commands they became)."""

    def __init__(self, control: socket.socket, cgroups: Cgroups | None,
                 io_pidfd: int | None = None) -> None:
        self.control: socket.socket | None = control
        self.cgroups = cgroups
        self.io_pidfd = io_pidfd
        """A pidfd on `io` (``--reaper``): readable once `io` has ended."""
        self.io_gone = False
        self.running: dict[int, tuple[int, socket.socket, str]] = {}
        """pidfd -> (pid, status socket, cgroup name) of a child that has not exited."""
        self.exited: dict[int, tuple[int, socket.socket, str]] = {}
        """status socket fd -> (pid, status socket, cgroup): exit reported, not released."""
        self.orphans: dict[int, tuple[int, str]] = {}
        """pidfd -> (pid, cgroup) of a child whose `io` end is gone: reaped, no report."""

    def on_control(self) -> None:
        assert self.control is not None
        received = recv_message(self.control)
        if received is None:
            self.control.close()
            self.control = None
            return
        _, fds = received
        for run, status in zip(fds[::2], fds[1::2], strict=True):
            self.fork_spare(run, status)

    def fork_spare(self, run: int, status: int) -> None:
        """A spare, given its run and status socket ends (see the module docstring)."""
        cgroup, procs = "", None
        if self.cgroups is not None:
            try:
                cgroup, procs = self.cgroups.create()
            except OSError as exc:
                os.write(status, b"E" + f"could not create a pids cgroup: {exc}".encode())
                os.close(run)
                os.close(status)
                return
        pid = os.fork()
        if pid == 0:
            _spare(run, status, procs, cgroup)
            os._exit(0)
        for fd in (run, procs):
            if fd is not None:
                os.close(fd)
        self.running[os.pidfd_open(pid)] = (pid, socket.socket(fileno=status), cgroup)

    def reap(self, pid: int, cgroup: str) -> None:
        os.waitpid(pid, 0)
        if cgroup and self.cgroups is not None:
            self.cgroups.remove(cgroup)

    def on_exit(self, pidfd: int) -> None:
        os.close(pidfd)
        if pidfd in self.orphans:
            self.reap(*self.orphans.pop(pidfd))
            return
        pid, status, cgroup = self.running.pop(pidfd)
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        code = 0
        if info is not None:
            code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        try:
            status.sendall(b"X%d" % code)
        except OSError:
            status.close()
            self.reap(pid, cgroup)
            return
        self.exited[status.fileno()] = (pid, status, cgroup)

    def on_release(self, fd: int) -> None:
        """`io` released an exited child (or went away): reap it, remove its cgroup."""
        pid, status, cgroup = self.exited.pop(fd)
        status.close()
        self.reap(pid, cgroup)

    def on_gone(self, pidfd: int) -> None:
        """The status socket of a running child closed: `io` no longer waits for it."""
        pid, status, cgroup = self.running.pop(pidfd)
        status.close()
        self.orphans[pidfd] = (pid, cgroup)

    def done(self) -> bool:
        return self.control is None and not self.running and not self.exited

    def step(self) -> None:
        watch: list[int] = [*self.running, *self.orphans, *self.exited]
        statuses = {s.fileno(): pidfd for pidfd, (_, s, _) in self.running.items()}
        watch += list(statuses)
        if self.control is not None:
            watch.append(self.control.fileno())
        if self.io_pidfd is not None:
            watch.append(self.io_pidfd)
        pending = self.cgroups is not None and self.cgroups.pending
        ready, _, _ = select.select(watch, [], [], 0.01 if pending else None)
        for fd in ready:
            if fd == self.io_pidfd:
                self.io_gone = True
            elif self.control is not None and fd == self.control.fileno():
                self.on_control()
            elif fd in self.running or fd in self.orphans:
                self.on_exit(fd)
            elif fd in self.exited:
                self.on_release(fd)
            elif fd in statuses and statuses[fd] in self.running:
                self.on_gone(statuses[fd])
        if self.cgroups is not None:
            self.cgroups.retry()


PROXY_VARIABLES = (b"HTTP_PROXY", b"HTTPS_PROXY", b"http_proxy", b"https_proxy",
                   b"NO_PROXY", b"no_proxy")
_extra_env: dict[bytes, bytes] = {}
"""Set in every command's environment: the egress forwarder's proxy variables."""


def main() -> None:
    """`CONTROL_FD [--cgroups DIR_FD PREFIX PIDS_MAX] [--proxy-env]`."""
    import resource  # noqa: F401 - loaded once here, so no spare loads it on a command's path

    args = sys.argv[2:]
    cgroups = None
    if args[:1] == ["--cgroups"]:
        _dumpable(0)
        cgroups = Cgroups(int(args[1]), args[2], args[3])
        args = args[4:]
    io_pidfd = None
    while args:
        if args[0] == "--proxy-env":  # under the egress forwarder: pass its variables on
            _extra_env.update({k: os.environb[k] for k in PROXY_VARIABLES if k in os.environb})
            args = args[1:]
        elif args[0] == "--reaper":  # the floor: end what a dead io left (module doc)
            try:
                io_pidfd = os.pidfd_open(int(args[1]))
                _prctl(36, 1, "prctl(PR_SET_CHILD_SUBREAPER)")
            except ProcessLookupError:
                end_everything()
                return
            except (OSError, AttributeError):  # a kernel before 5.3: the sweep remains
                io_pidfd = None
            args = args[2:]
        else:
            raise SystemExit(f"launcher: unknown argument {args[0]!r}")
    launcher = Launcher(socket.socket(fileno=int(sys.argv[1])), cgroups, io_pidfd)
    while not launcher.done():
        launcher.step()
        if launcher.io_gone:
            end_everything()
            return
    # A `kill -9` closes the control socket a moment before the pidfd says io is gone:
    # with commands or their leftovers still here, look again before leaving them.
    if io_pidfd is not None and (launcher.orphans or _adopted()):
        if select.select([io_pidfd], [], [], _IO_EXIT_SECONDS)[0]:
            end_everything()


if __name__ == "__main__":
    main()
