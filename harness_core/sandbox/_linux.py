"""The Linux native backend: bubblewrap namespaces, a seccomp filter, rlimits, a pids cgroup.

Commands run in a bubblewrap sandbox kept for the run (`_resident`: one sandbox, a
launcher inside it, each command handed to it) in new user, mount, PID, IPC, UTS and
network namespaces (with `[sandbox] network = true` the one way out is the run's egress
proxy, see `_proxy`), with every capability dropped and new user namespaces disabled
inside. The filesystem is the host's, read-only, with a private `/tmp`, an empty `/run`
(host daemons' sockets live there), fresh `/dev` and `/proc`, and the workdir bound
writable. Protected paths inside the workdir are bound read-only on top; one that does
not exist yet gets an empty read-only placeholder over its first missing component (an
empty file for the last component, an empty directory for one above it), so it cannot
be created either (except ``.git/commondir``: an empty one stops git; see
`_NO_PLACEHOLDER`). Every existing directory on the way to a protected path is bound
onto itself, which makes it a mount point: it can still be written into but not renamed
away, so `mv .git x; mkdir -p .git/hooks` does not get around the read-only
`.git/hooks`. A missing `.git` therefore becomes an empty read-only directory and `git
init` cannot run inside; that is the price of the guarantee.

A placeholder needs a mount point, and the mount point is created in the real workdir
(by io, and recorded in the process ledger: see `_placeholders`). It is removed again
when the last sandbox of this process that covers it has ended, if it is still empty,
or after `kill -9` of io by the next sweep; one the host filled meanwhile (the git
tool's `git init`) is no longer treated as a placeholder, so the next command gets a
sandbox that binds it. Two `io` processes sharing a workspace do not know each other's
placeholders; one may remove a mount point the other still uses.

bwrap loads the seccomp program (`_seccomp`) from a pipe just before it executes the
launcher, and closes the pipe; the launcher and every command inherit the filter. The
rlimits and the pids cgroup are set per command by the launcher (`_inner`).

Before each command `LinuxLauncher._fits` works out the read masks and protected-path
binds the policy decides now, with the inode under each: a sandbox built from other
ones is not reused (see `_resident`).

`probe_bwrap` runs the real argument set once per process against `true`, so a
host where bwrap is installed but user namespaces are refused (Ubuntu's AppArmor
restriction, a container without CAP_SYS_ADMIN) is found at selection time. This module never decides what is protected: the
paths come from the spec, which the run derives from its policy.
"""

from __future__ import annotations

import functools
import os
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from harness_core._record import record
from harness_core.errors import SandboxUnavailable
from harness_core.sandbox._proxy import SANDBOX_SOCKET
from harness_core.sandbox._reads import ReadPlan

__all__ = [
    "BwrapInfo",
    "ProtectionPlan",
    "bwrap_arguments",
    "plan_protection",
    "probe_bwrap",
]

_PROBE_SECONDS = 10.0


@record
class BwrapInfo:
    """A bubblewrap binary that worked when probed.

    Attributes:
        path: Absolute path of the binary.
        version: What `bwrap --version` printed.
        can_disable_userns: Whether it knows `--disable-userns` (0.8.0 and later).
    """

    path: str
    version: str
    can_disable_userns: bool


@record
class ProtectionPlan:
    """How the protected paths of one command are bound.

    Attributes:
        keep: Existing directories on the way to a protected path, bound onto
            themselves (writable) so they cannot be renamed away.
        read_only: Existing protected paths, bound read-only.
        empty_dirs: Missing components covered by an empty read-only directory.
        empty_files: Missing last components covered by an empty read-only file.
    """

    keep: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    empty_dirs: tuple[Path, ...] = ()
    empty_files: tuple[Path, ...] = ()

    @property
    def placeholders(self) -> tuple[Path, ...]:
        return self.empty_dirs + self.empty_files


def _relative(path: Path, workdir: Path, real_workdir: Path) -> Path | None:
    path = Path(os.path.normpath(path if path.is_absolute() else workdir / path))
    for root in (workdir, real_workdir):
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue
        return rel if rel.parts else None
    return None


_NO_PLACEHOLDER = frozenset({Path(".git/commondir")})
"""Protected files that get no placeholder while missing: git stops with "failed to
read .git/commondir" on an empty one, inside the sandbox and, through the mount point,
on the host. One that exists is bound read-only like any other; one created meanwhile
makes io's git built-ins refuse the repository (`harness_core.tools._git`)."""


@functools.lru_cache(maxsize=64)
def _relatives(
    workdir: Path, protected: tuple[Path, ...]
) -> tuple[str, tuple[tuple[tuple[str, ...], bool], ...]]:
    """The workdir's real path, and each protected path inside it as its components
    relative to it (with whether it may get a placeholder): worked out once per
    launcher, since this runs before every command."""
    real = workdir.resolve()
    rels = (_relative(path, workdir, real) for path in protected)
    return str(real), tuple((rel.parts, rel not in _NO_PLACEHOLDER)
                            for rel in rels if rel is not None)


def _is_dir(path: str, info: os.stat_result) -> bool:
    """`Path.is_dir` from an `lstat` already made (a symlink is followed)."""
    if stat.S_ISLNK(info.st_mode):
        return os.path.isdir(path)
    return stat.S_ISDIR(info.st_mode)


def plan_protection(
    workdir: Path, protected: Iterable[Path], *, pending: Collection[Path] = ()
) -> ProtectionPlan:
    """Decide the binds that keep `protected` read-only and uncreatable inside `workdir`.

    Paths outside the workdir are ignored (everything there is read-only already).
    A component that is a symlink is followed by the mount, so the target is
    protected and the link itself is not.

    Args:
        workdir: The writable root.
        protected: Paths (absolute, or relative to `workdir`) to keep read-only.
        pending: Placeholders another live command of this process created; they
            are treated as missing so this command registers them too.

    Returns:
        The plan, each list sorted so that a parent is bound before its children.
    """
    real, rels = _relatives(workdir, tuple(p if isinstance(p, Path) else Path(p) for p in protected))
    waiting = {str(p) for p in pending}
    keep: set[str] = set()
    read_only: set[str] = set()
    empty_dirs: set[str] = set()
    empty_files: set[str] = set()
    for parts, may_hold in rels:
        current = real.rstrip("/")
        last = len(parts) - 1
        for index, part in enumerate(parts):
            current = f"{current}/{part}"
            try:
                info = None if current in waiting else os.lstat(current)
            except OSError:
                info = None
            if info is None:
                if index < last or may_hold:
                    (empty_files if index == last else empty_dirs).add(current)
                break
            if index == last or not _is_dir(current, info):
                read_only.add(current)
                break
            keep.add(current)
    return ProtectionPlan(
        keep=_parents_first(keep - read_only - empty_dirs),
        read_only=_parents_first(read_only),
        empty_dirs=_parents_first(empty_dirs),
        empty_files=_parents_first(empty_files - empty_dirs),
    )


def _parents_first(paths: Iterable[str]) -> tuple[Path, ...]:
    """Absolute normalized paths, a parent before its children (fewer components first)."""
    return _as_paths(tuple(sorted(paths, key=lambda p: (p.count("/"), p))))


@functools.lru_cache(maxsize=256)
def _as_paths(paths: tuple[str, ...]) -> tuple[Path, ...]:
    """`Path`s of `paths` (made once: the same plan comes back before every command)."""
    return tuple(Path(p) for p in paths)


def bwrap_arguments(
    info: BwrapInfo,
    *,
    workdir: Path,
    cwd: Path,
    network: bool,
    plan: ProtectionPlan,
    env: Mapping[str, str],
    command: Sequence[str],
    seccomp_fd: int | None,
    empty_file_fds: Sequence[int] = (),
    run_visible: Sequence[Path] = (),
    info_fd: int | None = None,
    block_fd: int | None = None,
    reads: ReadPlan | None = None,
    empty: Path | None = None,
    egress: Path | None = None,
) -> list[str]:
    """The full `bwrap` command line for one command. Pure: touches nothing.

    Args:
        info: The probed binary.
        workdir: The writable root (a real path).
        cwd: Working directory inside the sandbox.
        network: Keep the host's network namespace.
        plan: Protected-path binds (see `plan_protection`).
        env: The exact environment of the payload.
        command: The payload's argv, program resolved to an absolute path.
        seccomp_fd: Fd carrying the BPF program, or None for no filter.
        empty_file_fds: One readable fd per `plan.empty_files` entry (read to EOF).
        run_visible: Host paths under `/run` to keep visible (the resolver, when
            the network is on).
        info_fd: Where bwrap writes the sandbox's first pid (JSON), or None.
        block_fd: What the sandbox reads one byte from before it runs the payload, or None.
        reads: Read confinement (hidden homes, paths bound back, masks); see `_reads`.
        empty: An empty host file bound over each masked file (needed with `reads`).
        egress: The egress proxy's host socket, bound at `SANDBOX_SOCKET`, or None.
    """
    args = [info.path, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not network:
        args.append("--unshare-net")
    args.append("--unshare-cgroup-try")
    if info.can_disable_userns:
        args.append("--disable-userns")
    args += ["--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    args += ["--tmpfs", "/tmp", "--tmpfs", "/run"]
    args += _run_arguments(run_visible, egress)
    for hidden in _toolchains_under_tmp(env.get("PATH", ""), workdir):
        args += ["--ro-bind-try", hidden, hidden]
    args += _home_arguments(reads)
    args += ["--bind", str(workdir), str(workdir)]
    for path in plan.keep:
        args += ["--bind", str(path), str(path)]
    for path in plan.read_only:
        args += ["--ro-bind", str(path), str(path)]
    for path in plan.empty_dirs:
        args += ["--perms", "0555", "--tmpfs", str(path), "--remount-ro", str(path)]
    for path, fd in zip(plan.empty_files, empty_file_fds, strict=True):
        args += ["--perms", "0444", "--ro-bind-data", str(fd), str(path)]
    args += _mask_arguments(reads, empty)
    args += ["--chdir", str(cwd), "--clearenv"]
    for name, value in sorted(env.items()):
        args += ["--setenv", name, value]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    if info_fd is not None and block_fd is not None:
        args += ["--info-fd", str(info_fd), "--block-fd", str(block_fd)]
    return [*args, "--", *command]


def _run_arguments(run_visible: Sequence[Path], egress: Path | None) -> list[str]:
    args: list[str] = []
    for path in run_visible:
        args += ["--ro-bind-try", str(path), str(path)]
    if egress is not None:
        args += ["--bind", str(egress), SANDBOX_SOCKET]
    return args


def _home_arguments(reads: ReadPlan | None) -> list[str]:
    """Hide the home directories, then bind back what toolchains need."""
    args: list[str] = []
    for home in reads.hidden_homes if reads else ():
        args += ["--perms", "0700", "--tmpfs", str(home)]
    for path in reads.exposed if reads else ():
        args += ["--ro-bind-try", str(path), str(path)]
    return args


def _mask_arguments(reads: ReadPlan | None, empty: Path | None) -> list[str]:
    """Masks last, so they cover whatever an earlier bind put at the same place."""
    args: list[str] = []
    if reads is None:
        return args
    for path in reads.mask_dirs:
        args += ["--perms", "0500", "--tmpfs", str(path), "--remount-ro", str(path)]
    if reads.mask_files and empty is None:
        raise SandboxUnavailable("internal: masked files need an empty file to bind over them")
    for path in reads.mask_files:
        args += ["--ro-bind", str(empty), str(path)]
    return args


def _readable_pipe(data: bytes) -> int:
    """A pipe's read end that yields `data` then EOF (data must fit the pipe buffer)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)
    finally:
        os.close(write_end)
    return read_end


_probed: dict[str, BwrapInfo | str] = {}
_probe_lock = threading.Lock()


def probe_bwrap(path: str, *, command: Sequence[str], seccomp: bytes | None) -> BwrapInfo | str:
    """Check once per process that `path` can build our sandbox; cached by path.

    Args:
        path: The bwrap binary.
        command: A command that exits 0 (`true`), its program as an absolute path.
        seccomp: The filter to load in the probe, so a kernel without seccomp shows up here.

    Returns:
        The binary's description, or why it cannot be used.
    """
    with _probe_lock:
        if path not in _probed:
            _probed[path] = _probe(path, command, seccomp)
        return _probed[path]


def _run_quietly(argv: Sequence[str], pass_fds: Sequence[int] = ()) -> tuple[int, str]:
    done = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=_PROBE_SECONDS,
        close_fds=True,
        pass_fds=tuple(pass_fds),
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).decode(errors="replace").strip()


def _probe(path: str, command: Sequence[str], seccomp: bytes | None) -> BwrapInfo | str:
    try:
        status, version = _run_quietly([path, "--version"])
        if status != 0:
            return f"{path} --version failed: {version or status}"
        _, usage = _run_quietly([path, "--help"])
        info = BwrapInfo(path, version.splitlines()[0], "--disable-userns" in usage)
        with tempfile.TemporaryDirectory(prefix="io-bwrap-probe-") as scratch:
            fd = _readable_pipe(seccomp) if seccomp is not None else None
            try:
                argv = bwrap_arguments(
                    info,
                    workdir=Path(scratch).resolve(),
                    cwd=Path(scratch).resolve(),
                    network=False,
                    plan=ProtectionPlan(),
                    env={"PATH": "/usr/bin:/bin"},
                    command=command,
                    seccomp_fd=fd,
                )
                status, output = _run_quietly(argv, () if fd is None else (fd,))
            finally:
                if fd is not None:
                    os.close(fd)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{path} could not be run: {exc}"
    if status != 0:
        last = output.splitlines()[-1] if output else f"exit status {status}"
        return f"bwrap cannot create the sandbox here: {last}"
    return info


def _toolchains_under_tmp(path_var: str, workdir: Path) -> list[str]:
    """PATH directories the private /tmp would hide (a venv or toolchain unpacked under
    /tmp), to bind back read-only; a virtualenv's whole root, so its site-packages come
    along. The workdir itself is already bound."""
    out: list[str] = []
    entries = [*path_var.split(os.pathsep), os.path.join(sys.base_prefix, "bin")]
    for entry in entries:
        if not entry.startswith("/tmp/") or not os.path.isdir(entry):
            continue
        root = os.path.dirname(entry.rstrip("/"))
        target = root if os.path.isfile(os.path.join(root, "pyvenv.cfg")) else entry
        real = os.path.realpath(target)
        if real.startswith(str(workdir) + os.sep) or real in out:
            continue
        out.append(real)
    return out
