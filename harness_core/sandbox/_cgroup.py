"""Per-command `pids` cgroups: the mechanism that bounds a fork bomb on Linux.

A PID namespace does not bound how many processes a payload makes, and
RLIMIT_NPROC counts per real uid (it would throttle the operator's whole login, and
it does not bind root mapped into a user namespace). The `pids` cgroup controller
does: every command gets its own cgroup with `pids.max` set, the child joins it
before it executes anything, and everything it forks stays in it. Membership is
also the most reliable list of what a command started: a grandchild that called
`setsid` and lost its parent is still a member, so the kill and the clean-up read
the cgroup rather than walk the process table.

Two layouts are supported: the cgroup v1 `pids` hierarchy (what this project's CI
machines have, writable by root) and a cgroup v2 subtree delegated to us with the
`pids` controller already enabled for its children. Discovery runs once per process
and its result is cached; a host with neither gets a reason string instead, which
`Selected` reports.

This module never signals a process that is not a member of a cgroup it created.
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import signal
import threading
import time
from pathlib import Path

from harness_core._record import record

__all__ = [
    "PidsCgroup",
    "PidsHierarchy",
    "discover_pids_hierarchy",
    "find_pids_hierarchy",
    "locate_pids_hierarchy",
]

_CLEANUP_SECONDS = 5.0
_NAME = re.compile(r"^io-(\d+)-\d+$")


@record
class PidsHierarchy:
    """Where per-command cgroups are made.

    Attributes:
        version: 1 for the v1 `pids` hierarchy, 2 for a delegated v2 subtree.
        base: The directory new cgroups are created in (this process's own cgroup).
    """

    version: int
    base: Path

    def describe(self) -> str:
        return f"cgroup v{self.version} pids ({self.base})"


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _own_path(cgroup_text: str, version: int) -> str | None:
    for line in cgroup_text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hier, controllers, path = parts
        if version == 2 and hier == "0" and controllers == "":
            return path
        if version == 1 and "pids" in controllers.split(","):
            return path
    return None


def locate_pids_hierarchy(mountinfo_text: str, cgroup_text: str) -> PidsHierarchy | str:
    """Find this process's pids cgroup directory from `/proc/self/{mountinfo,cgroup}` text.

    Pure: reads nothing itself, so it can be tested against recorded text. Whether
    the directory is usable is checked by `find_pids_hierarchy`.

    Args:
        mountinfo_text: Contents of `/proc/self/mountinfo`.
        cgroup_text: Contents of `/proc/self/cgroup`.

    Returns:
        The candidate hierarchy (v1 preferred, it is what the host exposes when both
        exist), or a reason why there is none.
    """
    v2: PidsHierarchy | None = None
    for line in mountinfo_text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        root, mountpoint, fstype, superopts = fields[3], _unescape(fields[4]), tail[0], tail[2]
        version = 1 if fstype == "cgroup" and "pids" in superopts.split(",") else 0
        version = 2 if fstype == "cgroup2" else version
        own = _own_path(cgroup_text, version) if version else None
        if own is None:
            continue
        root = _unescape(root)
        if root != "/" and not (own == root or own.startswith(root.rstrip("/") + "/")):
            continue
        rel = own[len(root) :] if root != "/" else own
        found = PidsHierarchy(version, Path(mountpoint) / rel.lstrip("/"))
        if version == 1:
            return found
        v2 = v2 or found
    if v2 is not None:
        return v2
    return "no pids cgroup hierarchy is mounted"


def _v2_usable(base: Path) -> str | None:
    try:
        enabled = (base / "cgroup.subtree_control").read_text().split()
    except OSError as exc:
        return f"cannot read {base / 'cgroup.subtree_control'}: {exc.strerror}"
    if "pids" not in enabled:
        return f"cgroup v2 at {base} does not delegate the pids controller to its children"
    return None


def _probe(hierarchy: PidsHierarchy) -> str | None:
    if hierarchy.version == 2 and (problem := _v2_usable(hierarchy.base)):
        return problem
    probe = hierarchy.base / f"io-{os.getpid()}-probe"
    try:
        probe.mkdir()
    except FileExistsError:
        pass
    except OSError as exc:
        return f"no writable pids cgroup ({hierarchy.base}: {exc.strerror})"
    try:
        if not (probe / "pids.max").exists():
            return f"{hierarchy.base} has no pids.max"
        return None
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


def _sweep_stale(base: Path) -> None:
    """Remove empty cgroups that runners which no longer exist left behind."""
    try:
        entries = list(base.iterdir())
    except OSError:
        return
    for entry in entries:
        match = _NAME.match(entry.name)
        if not match or int(match.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            try:  # a sandbox's cgroup holds its commands' cgroups
                for inner in entry.iterdir():
                    if inner.is_dir():
                        inner.rmdir()
                entry.rmdir()
            except OSError:
                pass
        except PermissionError:
            continue


def discover_pids_hierarchy(proc: Path = Path("/proc")) -> PidsHierarchy | str:
    """Find a writable pids hierarchy now, without the cache (see `find_pids_hierarchy`).

    Args:
        proc: Where procfs is mounted.

    Returns:
        The hierarchy, or a reason why commands cannot get a pids cgroup here.
    """
    try:
        mountinfo = (proc / "self" / "mountinfo").read_text()
        own = (proc / "self" / "cgroup").read_text()
    except OSError as exc:
        return f"cannot read {proc}/self: {exc.strerror}"
    found = locate_pids_hierarchy(mountinfo, own)
    if isinstance(found, str):
        return found
    problem = _probe(found)
    if problem is not None:
        return problem
    _sweep_stale(found.base)
    return found


_discovered: PidsHierarchy | str | None = None
_discover_lock = threading.Lock()


def find_pids_hierarchy() -> PidsHierarchy | str:
    """Find a writable pids hierarchy, once per process (the answer is cached).

    Returns:
        The hierarchy, or a reason why commands cannot get a pids cgroup here.
    """
    global _discovered
    with _discover_lock:
        if _discovered is None:
            _discovered = discover_pids_hierarchy()
        return _discovered


_serial = itertools.count(1)


class PidsCgroup:
    """One command's cgroup: created before the launch, removed after the reap."""

    def __init__(self, hierarchy: PidsHierarchy, path: Path) -> None:
        self.hierarchy = hierarchy
        self.path = path
        self._procs_file = os.fsencode(path / "cgroup.procs")
        self._kill_file = os.fsencode(path / "cgroup.kill")

    @classmethod
    def create(cls, hierarchy: PidsHierarchy, max_pids: int | None) -> PidsCgroup:
        """Make a fresh cgroup under `hierarchy` with `pids.max` set.

        Raises:
            OSError: The cgroup could not be made or limited (it is removed again).
        """
        path = hierarchy.base / f"io-{os.getpid()}-{next(_serial)}"
        path.mkdir()
        try:
            (path / "pids.max").write_text("max" if max_pids is None else str(max_pids))
        except OSError:
            path.rmdir()
            raise
        return cls(hierarchy, path)

    def enter(self) -> None:
        """Move the calling process into the cgroup (runs in the child before exec)."""
        self.admit(os.getpid())

    def admit(self, pid: int) -> None:
        """Move process `pid` into the cgroup (it must not have forked yet)."""
        fd = os.open(self._procs_file, os.O_WRONLY)
        try:
            os.write(fd, b"%d" % pid)
        finally:
            os.close(fd)

    def members(self) -> list[int]:
        """The pids in the cgroup now, as this process's pid namespace numbers them."""
        try:
            fd = os.open(self._procs_file, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return []
        try:
            text = b""
            while chunk := os.read(fd, 65536):
                text += chunk
        except OSError:
            return []
        finally:
            os.close(fd)
        return [int(line) for line in text.split()]

    def kill_all(self) -> None:
        """SIGKILL every member until the cgroup is empty or a few seconds pass.

        An empty cgroup is left as it is: a process joins one only by being forked by
        a member or written into its `cgroup.procs`, which only io and a sandbox's
        launcher do (a command sees the cgroup files read-only).
        """
        pids = self.members()
        if not pids:
            return
        if self.hierarchy.version == 2:
            try:  # every member at once, forks in flight included (Linux 5.14 and later)
                fd = os.open(self._kill_file, os.O_WRONLY | os.O_CLOEXEC)
                try:
                    os.write(fd, b"1")
                finally:
                    os.close(fd)
            except OSError:
                pass
        deadline = time.monotonic() + _CLEANUP_SECONDS
        while pids and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.001)
            pids = self.members()

    def remove(self) -> bool:
        """Kill what is left and remove the cgroup (and the cgroups inside it).

        Returns:
            Whether the directory is gone (a member stuck in the kernel can keep it).
        """
        self.kill_all()
        deadline = time.monotonic() + _CLEANUP_SECONDS
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                    return False
            # Members that were just killed leave the cgroup a moment after they die.
            time.sleep(0.002)
