"""No confinement (`[sandbox] backend = "off"`): the operator's explicit choice.

The process still leads its own session, so it has no controlling terminal and the
kill reaches its process group and descendants, and it still gets the scrubbed
environment and only fds 0, 1 and 2. No limits, no cgroup, no filesystem or network
confinement. This module must not add any: "off" has to mean off.
"""

from __future__ import annotations

from harness_core.sandbox._base import SandboxSpec, Selected
from harness_core.sandbox._process import PosixLauncher

__all__ = ["OffLauncher"]


class OffLauncher(PosixLauncher):
    """Runs the program itself in its own session; nothing else."""

    def __init__(self, selected: Selected, spec: SandboxSpec) -> None:
        super().__init__(selected, spec, apply_rlimits=False, pids=None)
