"""The portable floor: rlimits, a whole-tree kill, a scrubbed environment, nothing more.

Used when the platform's native primitive is missing at run time (bwrap not
installed, user namespaces refused) or when the operator asks for it. It does not
confine the filesystem or the network and installs no syscall filter; `Selected`
says so. On Linux it still puts each command in its own `pids` cgroup when a
writable one exists, which both bounds `max_processes` and lets the kill reach a
grandchild that left its session and lost its parent. Without that cgroup such a
grandchild can outlive the kill, and `Selected` says that too.

On Linux the commands start through a resident launcher (`_resident`): one process per
run, started with the scrubbed environment in a session of its own, that starts each
command as its child (each in its own session, cgroup and rlimits) and exits when `io`
closes its socket or dies. It is a child subreaper, so what a command leaves behind (a
`setsid` escapee, at any depth) is handed to it, and when `io` dies (a `kill -9`
included) it kills every command and everything handed to it before it exits (`_inner`
``--reaper``). Elsewhere each command is started directly.
"""

from __future__ import annotations

import os
import subprocess
import sys

from harness_core.sandbox._base import LaunchRequest, SandboxSpec, Selected
from harness_core.sandbox._cgroup import PidsHierarchy
from harness_core.sandbox._process import PosixLauncher
from harness_core.sandbox._resident import (
    INTERPRETER,
    ResidentLauncher,
    ResidentStart,
    inner_source,
)

__all__ = ["FloorLauncher"]

_RESIDENT = sys.platform.startswith("linux")
"""The launcher reads its children's pids with SCM_CREDENTIALS, which is Linux's."""


class FloorLauncher(ResidentLauncher):
    """Runs the program itself, in its own session, under rlimits (and a pids cgroup)."""

    def __init__(
        self, selected: Selected, spec: SandboxSpec, *, pids: PidsHierarchy | None
    ) -> None:
        super().__init__(selected, spec, pids=pids)

    def _start(self, key: object) -> ResidentStart:
        # `--reaper`: no PID namespace ends the commands with the sandbox, so the
        # launcher adopts what they leave and ends it all when io does (see `_inner`).
        return ResidentStart(
            argv=[INTERPRETER, "-I", "-S", "-c", inner_source()], env=self._environment(),
            launcher_args=["--reaper", str(os.getpid())])

    def popen(self, request: LaunchRequest) -> subprocess.Popen[bytes]:
        if _RESIDENT:
            return super().popen(request)
        return PosixLauncher.popen(self, request)
