"""The portable floor: rlimits, a whole-tree kill, a scrubbed environment, nothing more.

Used when the platform's native primitive is missing at run time (bwrap not
installed, user namespaces refused) or when the operator asks for it. It does not
confine the filesystem or the network and installs no syscall filter; `Selected`
says so. On Linux it still puts each command in its own `pids` cgroup when a
writable one exists, which both bounds `max_processes` and lets the kill reach a
grandchild that left its session and lost its parent. Without that cgroup such a
grandchild can outlive the kill, and `Selected` says that too.
"""

from __future__ import annotations

from harness_core.sandbox._base import SandboxSpec, Selected
from harness_core.sandbox._cgroup import PidsHierarchy
from harness_core.sandbox._process import PosixLauncher

__all__ = ["FloorLauncher"]


class FloorLauncher(PosixLauncher):
    """Runs the program itself, in its own session, under rlimits (and a pids cgroup)."""

    def __init__(
        self, selected: Selected, spec: SandboxSpec, *, pids: PidsHierarchy | None
    ) -> None:
        super().__init__(selected, spec, apply_rlimits=True, pids=pids)
