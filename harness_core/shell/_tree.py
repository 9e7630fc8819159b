"""Every process one command line started, and the kill that reaches all of them.

Two mechanisms, because one is not enough without a PID namespace:

- **Process groups.** Each stage leads its own group (the launcher starts it in a new
  session). Membership is inherited across ``fork`` and survives the death of every
  parent in between, so a grandchild whose parent has exited is still reached by
  ``killpg``. The group leaders are left unreaped (zombies) until the line's
  processes are all dead, so a group id can never be handed to an unrelated process
  while this tracker might still signal it.
- **Descendants seen while running.** A process that calls ``setsid()`` leaves its
  group. While the line runs, its descendants are listed (psutil) every few tens of
  milliseconds and remembered together with their start time; the kill signals each
  one still alive whose start time matches, then lists the survivors' own children,
  until no new process appears. psutil's `Process.kill` re-checks the start time, so
  a pid reused by an unrelated process is never signalled.

A `setsid()` escapee that is born *and* loses its parent between two listings is the
one case left without a PID namespace; under the native sandbox the namespace's end
kills it. A descendant seen outside its stage's session or group is also written to the
process ledger (`harness_core.sandbox._ledger`), so after `kill -9` of `io` the next
`io` can still name it by pid and start time. This module never decides whether a line
may run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import TYPE_CHECKING

from harness_core.sandbox._ledger import note_escapee

if TYPE_CHECKING:
    import psutil
else:
    from harness_core._lazy import psutil  # imported on its first use

__all__ = ["ProcessTracker"]

_KILL_ROUNDS = 8


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


class ProcessTracker:
    """The processes of one line: stage processes, their groups, descendants seen."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stages: list[subprocess.Popen[bytes]] = []
        self._groups: list[int] = []
        self._seen: dict[int, psutil.Process] = {}
        self._stage_of: dict[int, int] = {}
        self._unsettled: dict[int, tuple[psutil.Process, int]] = {}
        self._killed = False

    @property
    def killed(self) -> bool:
        """Whether `kill` was called (later stages are killed as they are added)."""
        return self._killed

    def add(self, process: subprocess.Popen[bytes]) -> None:
        """Track a stage process just started (killed at once if the line was killed)."""
        with self._lock:
            self._stages.append(process)
            self._stage_of[process.pid] = process.pid
            try:
                group = os.getpgid(process.pid)
            except OSError:
                group = None
            if group is not None and group == process.pid and group not in self._groups:
                self._groups.append(group)
            found = _process(process.pid)
            if found is not None:
                self._seen[process.pid] = found
            killed = self._killed
        if killed:
            self.kill()

    def pids(self) -> list[int]:
        """Pids of every process tracked so far (stages first)."""
        with self._lock:
            return list(self._seen)

    def stage_pids(self) -> list[int]:
        """Pids of the stage processes, in the order started."""
        with self._lock:
            return [p.pid for p in self._stages]

    def snapshot(self) -> int:
        """Remember the current descendants of every tracked live process.

        Returns:
            How many processes were seen for the first time.
        """
        with self._lock:
            roots = list(self._seen.values())
        found: dict[int, tuple[psutil.Process, int | None]] = {}
        for root in roots:
            try:
                # is_running compares the start time: a reused pid is not our process.
                if not root.is_running() or root.status() == psutil.STATUS_ZOMBIE:
                    continue  # its children, if any, were already handed to another parent
                for child in root.children(recursive=True):
                    found.setdefault(child.pid, (child, self._stage_of.get(root.pid)))
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        new = 0
        with self._lock:
            for pid, (proc, stage) in found.items():
                if pid not in self._seen:
                    self._seen[pid] = proc
                    new += 1
                    if stage is not None:
                        self._stage_of[pid] = stage
                        self._unsettled[pid] = (proc, stage)
            # One still in its stage's session and group may leave it later (a fork
            # is seen before its child's setsid()): looked at again each time.
            pending = list(self._unsettled.items())
        for pid, (proc, stage) in pending:
            if note_escapee(stage, proc):
                with self._lock:
                    self._unsettled.pop(pid, None)
        return new

    def kill(self) -> int:
        """SIGKILL every process of the line: groups, then each descendant seen.

        Safe to call from another thread and more than once.

        Returns:
            How many signals reached a process.
        """
        with self._lock:
            self._killed = True
        self.snapshot()
        sent = 0
        with self._lock:
            groups = list(self._groups)
        for group in groups:
            try:
                os.killpg(group, signal.SIGKILL)
                sent += 1
            except (ProcessLookupError, PermissionError):
                pass
        for _ in range(_KILL_ROUNDS):
            with self._lock:
                victims = list(self._seen.values())
            for proc in victims:
                try:
                    if proc.status() != psutil.STATUS_ZOMBIE:
                        proc.kill()
                        sent += 1
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            if self.snapshot() == 0:
                break
        return sent
