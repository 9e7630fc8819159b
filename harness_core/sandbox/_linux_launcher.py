"""The Linux backend's launcher: one bubblewrap sandbox per run and fit (see `_linux`).

Before each command `LinuxLauncher._fits` works out the read masks and protected-path
binds the policy decides now, with the inode under each (a mount follows the inode it
was made on, so a path replaced on the host is no longer covered in a running sandbox);
a sandbox built from other ones is not reused (`_resident`).
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable
from pathlib import Path

from harness_core._record import record
from harness_core.sandbox._base import SandboxSpec, Selected
from harness_core.sandbox._cgroup import PidsHierarchy
from harness_core.sandbox._linux import (
    BwrapInfo,
    ProtectionPlan,
    _readable_pipe,
    bwrap_arguments,
    plan_protection,
)
from harness_core.sandbox._placeholders import (
    claim_placeholders,
    pending_placeholders,
    release_placeholders,
)
from harness_core.sandbox._proxy import FORWARDER, SANDBOX_SOCKET
from harness_core.sandbox._reads import ReadPlan, empty_file, plan_reads
from harness_core.sandbox._resident import (
    INTERPRETER,
    ResidentLauncher,
    ResidentStart,
    inner_source,
)

__all__ = ["LinuxLauncher"]


def _identity(paths: Iterable[Path]) -> tuple[tuple[str, int, int], ...]:
    """Each path with its inode: a mount follows the inode, so a path replaced on the
    host (renamed over, deleted and made again) is no longer covered in a running sandbox."""
    out: list[tuple[str, int, int]] = []
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            out.append((str(path), -1, -1))
            continue
        out.append((str(path), info.st_dev, info.st_ino))
    return tuple(out)


@record
class _Fit:
    """What a sandbox is built from; a command that needs another one gets a fresh sandbox."""

    reads: ReadPlan
    plan: ProtectionPlan
    inodes: tuple[tuple[str, int, int], ...]


class LinuxLauncher(ResidentLauncher):
    """Runs every command inside one bubblewrap sandbox per run and fit (see `_resident`).

    Before each command the read masks and protected-path binds are worked out as the
    policy decides them now; while they (and the inodes under them) equal those the
    running sandbox was built with, the command starts inside it; otherwise a fresh
    sandbox is started and the old one retired when its last command is finished.
    """

    def __init__(
        self,
        selected: Selected,
        spec: SandboxSpec,
        *,
        bwrap: BwrapInfo,
        pids: PidsHierarchy | None,
        seccomp: bytes | None,
    ) -> None:
        super().__init__(selected, spec, pids=pids)
        self._bwrap = bwrap
        self._seccomp = seccomp
        self._workdir = spec.workdir.resolve()

    def _environment(self) -> dict[str, str]:
        env = super()._environment()
        env["TMPDIR"] = "/tmp"  # the private tmpfs; a host TMPDIR may be read-only or hidden
        return env

    def _fits(self) -> Hashable:
        spec = self.spec
        reads = plan_reads(
            spec.env,
            read_paths=spec.read_paths,
            hidden=spec.hidden,
            masked=spec.masked() if spec.masked is not None else (),
            workdir=self._workdir,
        )
        plan = plan_protection(spec.workdir, spec.read_only, pending=pending_placeholders())
        watched = (*reads.mask_dirs, *reads.mask_files, *plan.read_only, *plan.keep)
        return _Fit(reads, plan, _identity(watched))

    def _start(self, key: Hashable) -> ResidentStart:
        assert isinstance(key, _Fit)
        plan = key.plan
        placeholders = claim_placeholders(plan.empty_dirs, plan.empty_files)
        fds: list[int] = []
        try:
            seccomp_fd = _readable_pipe(self._seccomp) if self._seccomp is not None else None
            fds += [] if seccomp_fd is None else [seccomp_fd]
            empty_fds = [_readable_pipe(b"") for _ in plan.empty_files]
            fds += empty_fds
        except OSError:
            for fd in fds:
                os.close(fd)
            release_placeholders(placeholders)
            raise
        env = self._environment()
        # With network = true the egress forwarder runs once per sandbox, as the
        # launcher's parent, and the launcher passes its proxy variables to each command.
        forwarder = ([INTERPRETER, "-I", "-S", "-c", FORWARDER, SANDBOX_SOCKET]
                     if self.spec.egress is not None else [])
        argv = bwrap_arguments(
            self._bwrap,
            workdir=self._workdir,
            cwd=self._workdir,
            network=False,
            plan=plan,
            env=env,
            command=[*forwarder, INTERPRETER, "-I", "-S", "-c", inner_source()],
            seccomp_fd=seccomp_fd,
            empty_file_fds=empty_fds,
            reads=key.reads,
            empty=empty_file() if key.reads.mask_files else None,
            egress=self.spec.egress,
        )
        return ResidentStart(
            argv=argv,
            env=env,
            pass_fds=tuple(fds),
            parent_fds=fds,
            on_close=[lambda: release_placeholders(placeholders)] if placeholders else [],
            launcher_args=["--proxy-env"] if forwarder else [],
        )
