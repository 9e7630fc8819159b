"""What every unix launcher shares: the scrub, the program lookup, rlimits, the tree kill.

`PosixLauncher` starts one process as the leader of its own session (so it has no
controlling terminal and its process group id is its pid), with the environment cut
down to an allowlist, only fds 0, 1 and 2 inherited, resource limits applied in the
child before it executes anything, and (when the backend has one) a fresh `pids`
cgroup joined before exec. Backends subclass it and say what to execute
(`_wrap`): the program itself (floor, off) or a wrapper around it (bwrap,
sandbox-exec).

The kill reaches the whole tree without ever signalling a pid that is not ours:
the process group (signalled only while its leader is unreaped, so the group id
cannot have been reused), every descendant collected before that kill (children
that moved to their own session), and every member of the command's cgroup (a
grandchild that also lost its parent).

Nothing here decides policy or reads `os.environ`: the environment comes from the
spec.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from harness_core._record import record
from harness_core.errors import HarnessError, SandboxUnavailable, ToolError
from harness_core.sandbox._base import LaunchRequest, SandboxLimits, SandboxSpec, Selected
from harness_core.sandbox._cgroup import PidsCgroup, PidsHierarchy
from harness_core.sandbox._ledger import TOKEN_VARIABLE, current_ledger
from harness_core.sandbox._remote import peek_status
from harness_core.sandbox._started import spawn_clock

if TYPE_CHECKING:
    import psutil
else:
    from harness_core._lazy import psutil  # imported on its first use

__all__ = [
    "DEFAULT_ENV_NAMES",
    "Launch",
    "PosixLauncher",
    "has_exited",
    "kill_process_tree",
    "resolve_program",
    "rlimit_plan",
    "scrub_env",
]

DEFAULT_ENV_NAMES: tuple[str, ...] = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TZ",
    "TMPDIR",
)
"""Variables every launcher passes through; anything else needs `env_allow`."""


def scrub_env(env: Mapping[str, str], allow: Iterable[str] = ()) -> dict[str, str]:
    """Keep only the default variables and the extra names in `allow`.

    Args:
        env: The environment the caller would pass.
        allow: Extra variable names to keep (`[sandbox] env_allow`).

    Returns:
        A new mapping holding only allowed names that are set in `env`.
    """
    names = set(DEFAULT_ENV_NAMES).union(allow)
    return {name: value for name, value in env.items() if name in names}


def resolve_program(program: str, env: Mapping[str, str], cwd: Path) -> str:
    """Find the file `program` names, the way a shell would, on the scrubbed PATH.

    Args:
        program: `argv[0]`: a bare name looked up on PATH, or a path (relative to `cwd`).
        env: The scrubbed environment (its PATH is searched; `os.defpath` when unset).
        cwd: The command's working directory.

    Returns:
        An absolute path to an executable file.

    Raises:
        ToolError: Nothing executable matches.
    """
    if not program:
        raise ToolError("empty program name")
    if os.sep in program or (os.altsep is not None and os.altsep in program):
        candidate = Path(program) if os.path.isabs(program) else cwd / program
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
        raise ToolError(f"program not found or not executable: {program}")
    path = env.get("PATH", os.defpath)
    found = shutil.which(program, path=path)
    if found is None:
        raise ToolError(
            f"program not found on PATH: {program}",
            hint=f"PATH inside the sandbox is {path!r}",
        )
    return os.path.abspath(found)


def rlimit_plan(limits: SandboxLimits) -> list[tuple[int, int, int]]:
    """The `(resource, soft, hard)` triples the child sets, clamped to our own hard limits.

    Memory is RLIMIT_AS (address space, so a runtime that reserves much more than it
    touches needs a higher `memory_mb`); CPU is RLIMIT_CPU with SIGXCPU at the limit
    and SIGKILL one second later (per process, not per tree); open files is
    RLIMIT_NOFILE. Core dumps are always off, so a killed payload leaves no memory
    image in the workspace.
    """
    import resource

    wanted: list[tuple[int, int | None, int | None]] = [(resource.RLIMIT_CORE, 0, 0)]
    if limits.memory_mb is not None:
        size = limits.memory_mb * 1024 * 1024
        wanted.append((resource.RLIMIT_AS, size, size))
    if limits.cpu_seconds is not None:
        wanted.append((resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1))
    if limits.open_files is not None:
        wanted.append((resource.RLIMIT_NOFILE, limits.open_files, limits.open_files))
    plan: list[tuple[int, int, int]] = []
    for res, soft, hard in wanted:
        ceiling = resource.getrlimit(res)[1]

        def clamp(value: int | None, ceiling: int = ceiling) -> int:
            if value is None:
                return ceiling
            return value if ceiling == resource.RLIM_INFINITY else min(value, ceiling)

        plan.append((res, clamp(soft), clamp(hard)))
    return plan


class _ChildSetup:
    """Runs in the forked child before exec: limits, then the cgroup. Only syscalls."""

    def __init__(self, limits: Sequence[tuple[int, int, int]], cgroup: PidsCgroup | None) -> None:
        import resource

        self._setrlimit = resource.setrlimit
        self._limits = tuple(limits)
        self._cgroup = cgroup

    def __call__(self) -> None:
        if self._cgroup is not None:
            self._cgroup.enter()
        for res, soft, hard in self._limits:
            self._setrlimit(res, (soft, hard))


def has_exited(pid: int) -> bool:
    """Whether our child `pid` has exited, without reaping it (its pid stays reserved)."""
    try:
        status = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return status is not None


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _kill_group_remnants(pgid: int) -> None:
    """Kill members of group `pgid` whose leader is already reaped.

    The leader's pid is skipped: once it is reaped the number may belong to anyone,
    and only a new group leader could carry it as its group id.
    """
    for proc in psutil.process_iter():
        if proc.pid == pgid:
            continue
        with suppress(OSError, psutil.Error):
            if os.getpgid(proc.pid) == pgid:
                proc.kill()


def kill_process_tree(process: subprocess.Popen[bytes], cgroup: PidsCgroup | None) -> None:
    """SIGKILL the process's group, its descendants and its cgroup's members; reap it.

    Args:
        process: A process started as the leader of its own session.
        cgroup: The command's cgroup, when it has one.
    """
    leader = process.pid
    if process.returncode is None:
        victims = [] if peek_status(process) is not None else _descendants(leader)
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(leader, signal.SIGKILL)
        for victim in victims:
            # psutil refuses to signal a pid that was reused since it was listed.
            with suppress(psutil.Error):
                victim.kill()
    else:
        _kill_group_remnants(leader)
    if cgroup is not None:
        cgroup.kill_all()
    process.wait()


@record(frozen=False)
class Launch:
    """What a backend asks `PosixLauncher.popen` to execute.

    Attributes:
        argv: The full command line (a wrapper's, when there is one).
        executable: The file to execute when it differs from `argv[0]`.
        env: The environment of the executed file.
        pass_fds: Extra fds the executed file inherits (the wrapper reads and closes them).
        parent_fds: Fds to close in the parent once the child is started.
        handshake: Parent ends of the wrapper's start-up handshake (`_admit` uses and
            closes them).
        on_finish: Clean-ups to run after the process is reaped (or the start failed).
    """

    argv: list[str]
    executable: str | None
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    parent_fds: list[int] = field(default_factory=lambda: [])
    handshake: list[int] = field(default_factory=lambda: [])
    on_finish: list[Callable[[], None]] = field(default_factory=lambda: [])


@record(frozen=False)
class _Run:
    cgroup: PidsCgroup | None
    on_finish: list[Callable[[], None]]


class PosixLauncher:
    """A `ProcessLauncher` for unix; subclasses override `_wrap`, `_environment`, `_admit`.

    By default the rlimits and the cgroup are applied in the forked child before it
    executes (a `preexec_fn`). A wrapper that can pause before running the payload
    (bwrap) sets `_limits_in_child = False` and applies them from the parent in
    `_admit`, which spares the slower fork that a `preexec_fn` forces.
    """

    _limits_in_child = True

    def __init__(
        self,
        selected: Selected,
        spec: SandboxSpec,
        *,
        apply_rlimits: bool,
        pids: PidsHierarchy | None,
    ) -> None:
        self._selected = selected
        self.spec = spec
        self._rlimits = rlimit_plan(spec.limits) if apply_rlimits else []
        self._pids = pids
        self._runs: dict[int, _Run] = {}
        self._lock = threading.Lock()

    @property
    def selected(self) -> Selected:
        """What confinement this launcher applies."""
        return self._selected

    def _environment(self) -> dict[str, str]:
        env = scrub_env(self.spec.env, self.spec.env_allow)
        ledger = current_ledger()
        if ledger is not None:
            env[TOKEN_VARIABLE] = ledger.token
        return env

    def _wrap(self, request: LaunchRequest, program: str, env: dict[str, str]) -> Launch:
        return Launch(argv=list(request.argv), executable=program, env=env)

    def popen(self, request: LaunchRequest) -> subprocess.Popen[bytes]:
        """Start one process in its own session under this launcher's confinement.

        Raises:
            ToolError: Empty argv, a missing working directory, or the program is not found.
            SandboxUnavailable: The confinement could not be set up.
        """
        if not request.argv:
            raise ToolError("empty command line")
        cwd = Path(request.cwd)
        if not cwd.is_dir():
            raise ToolError(f"working directory does not exist: {cwd}")
        env = self._environment()
        program = resolve_program(request.argv[0], env, cwd)
        cgroup = self._make_cgroup()
        try:
            launch = self._wrap(request, program, env)
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        in_child = self._limits_in_child and (self._rlimits or cgroup is not None)
        setup = _ChildSetup(self._rlimits, cgroup) if in_child else None
        before = spawn_clock()
        try:
            process = subprocess.Popen(
                launch.argv,
                executable=launch.executable,
                cwd=cwd,
                env=launch.env,
                stdin=request.stdin,
                stdout=request.stdout,
                stderr=request.stderr,
                start_new_session=True,
                close_fds=True,
                pass_fds=launch.pass_fds,
                preexec_fn=setup,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self._release(_Run(cgroup, launch.on_finish))
            _close_all(launch.handshake)
            raise _start_error(request.argv[0], self._selected, exc) from exc
        except BaseException:
            self._release(_Run(cgroup, launch.on_finish))
            _close_all(launch.handshake)
            raise
        finally:
            _close_all(launch.parent_fds)
        spawned = (before, spawn_clock())
        run = _Run(cgroup, launch.on_finish)
        with self._lock:
            self._runs[process.pid] = run
        ledger = current_ledger()
        if ledger is not None:
            ledger.add(process.pid, cgroup.path if cgroup is not None else None, spawned=spawned)
        try:
            self._admit(process, launch, cgroup)
        except BaseException:
            self.finish(process)
            raise
        finally:
            _close_all(launch.handshake)
        return process

    def _admit(
        self, process: subprocess.Popen[bytes], launch: Launch, cgroup: PidsCgroup | None
    ) -> None:
        """Apply what could not be applied in the child (see the class docstring)."""

    def _make_cgroup(self) -> PidsCgroup | None:
        if self._pids is None:
            return None
        try:
            return PidsCgroup.create(self._pids, self.spec.limits.max_processes)
        except OSError as exc:
            raise SandboxUnavailable(
                f"could not create a pids cgroup under {self._pids.base}: {exc.strerror or exc}"
            ) from exc

    def kill_tree(self, process: subprocess.Popen[bytes]) -> None:
        """Kill the process, its process group, its descendants and its cgroup; reap it."""
        with self._lock:
            run = self._runs.get(process.pid)
        kill_process_tree(process, run.cgroup if run else None)

    def finish(self, process: subprocess.Popen[bytes]) -> None:
        """Remove the command's cgroup and placeholders; kills what is left first."""
        if process.returncode is None:
            self.kill_tree(process)
        with self._lock:
            run = self._runs.pop(process.pid, None)
        if run is not None:
            self._release(run)
            ledger = current_ledger()
            if ledger is not None:
                ledger.remove(process.pid)

    @staticmethod
    def _release(run: _Run) -> None:
        if run.cgroup is not None:
            run.cgroup.remove()
        for clean_up in run.on_finish:
            clean_up()


def _close_all(fds: Iterable[int]) -> None:
    for fd in fds:
        with suppress(OSError):
            os.close(fd)


def _start_error(program: str, selected: Selected, exc: Exception) -> HarnessError:
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"program not found: {program}")
    if isinstance(exc, PermissionError):
        return ToolError(f"program is not executable: {program}")
    return SandboxUnavailable(
        f"could not start {program!r} under the {selected.backend.value} backend: {exc}"
    )
