"""The Windows backend: a Job Object per command (resources only, no access confinement).

Not exercised on this project's CI (it has no Windows runner): the limits requested
from the job are unit-tested as data (`job_limits`, `merge_job_limits`), and
pywin32 is imported only when a job is actually made, so this module imports on
every platform.

A job bounds per-process memory (an allocation over it fails rather than killing
the process), per-process user-mode CPU time (kernel time is not counted, unlike
RLIMIT_CPU), and the number of active processes (the `CreateProcess` that would
cross it fails). `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` makes closing the job kill
every process in it, which is how the tree kill works: no walk of the process
table, so nothing escapes by losing its parent. The child is created suspended,
put in the job, then resumed, so it cannot start anything before it is contained.
A job confines neither the filesystem nor the network; `Selected` says so, and
this module must not import pywin32 at module level.
"""

from __future__ import annotations

import importlib
import subprocess
import threading
from collections.abc import Mapping, MutableMapping
from contextlib import suppress
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from harness_core.errors import SandboxUnavailable, ToolError
from harness_core.sandbox._base import LaunchRequest, SandboxLimits, SandboxSpec, Selected
from harness_core.sandbox._process import DEFAULT_ENV_NAMES, resolve_program

if TYPE_CHECKING:
    import psutil
else:
    from harness_core._lazy import psutil  # imported on its first use

__all__ = [
    "WINDOWS_ENV_NAMES",
    "WindowsLauncher",
    "job_limits",
    "merge_job_limits",
    "scrub_windows_env",
]

JOB_OBJECT_LIMIT_PROCESS_TIME = 0x00000002
JOB_OBJECT_LIMIT_ACTIVE_PROCESS = 0x00000008
JOB_OBJECT_LIMIT_PROCESS_MEMORY = 0x00000100
JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION = 0x00000400
JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x00002000
_CREATE_SUSPENDED = 0x00000004
_CREATE_NEW_PROCESS_GROUP = 0x00000200
_TICKS_PER_SECOND = 10_000_000  # job times are in 100 ns units
_KILLED_EXIT_CODE = 137

WINDOWS_ENV_NAMES: tuple[str, ...] = (
    *DEFAULT_ENV_NAMES,
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
    "USERPROFILE",
)
"""Windows cannot start most programs without SYSTEMROOT and friends."""


def job_limits(limits: SandboxLimits, *, contain: bool = True) -> dict[str, int]:
    """The job limits requested for `limits`, in the Win32 field names.

    Args:
        limits: The sandbox limits.
        contain: Request the resource limits; with False only the tree kill
            (kill-on-close) is requested.

    Returns:
        ``LimitFlags`` plus ``ProcessMemoryLimit`` (bytes),
        ``PerProcessUserTimeLimit`` (100 ns ticks) and ``ActiveProcessLimit`` for the
        limits that are set.
    """
    flags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION
    wanted: dict[str, int] = {}
    if contain and limits.memory_mb is not None:
        flags |= JOB_OBJECT_LIMIT_PROCESS_MEMORY
        wanted["ProcessMemoryLimit"] = limits.memory_mb * 1024 * 1024
    if contain and limits.cpu_seconds is not None:
        flags |= JOB_OBJECT_LIMIT_PROCESS_TIME
        wanted["PerProcessUserTimeLimit"] = limits.cpu_seconds * _TICKS_PER_SECOND
    if contain and limits.max_processes is not None:
        flags |= JOB_OBJECT_LIMIT_ACTIVE_PROCESS
        wanted["ActiveProcessLimit"] = limits.max_processes
    return {"LimitFlags": flags, **wanted}


def merge_job_limits(
    info: MutableMapping[str, object], wanted: Mapping[str, int]
) -> MutableMapping[str, object]:
    """Write `wanted` into pywin32's JOBOBJECT_EXTENDED_LIMIT_INFORMATION dict, in place.

    Args:
        info: What `QueryInformationJobObject(job, JobObjectExtendedLimitInformation)` returned.
        wanted: The output of `job_limits`.

    Returns:
        `info`, ready for `SetInformationJobObject`.
    """
    basic = info.get("BasicLimitInformation")
    if not isinstance(basic, MutableMapping):
        raise SandboxUnavailable("unexpected job information layout from pywin32")
    for key in ("LimitFlags", "PerProcessUserTimeLimit", "ActiveProcessLimit"):
        if key in wanted:
            basic[key] = wanted[key]
    if "ProcessMemoryLimit" in wanted:
        info["ProcessMemoryLimit"] = wanted["ProcessMemoryLimit"]
    return info


def scrub_windows_env(env: Mapping[str, str], allow: tuple[str, ...]) -> dict[str, str]:
    """Keep the allowed variables, matching names case-insensitively as Windows does."""
    names = {name.upper() for name in (*WINDOWS_ENV_NAMES, *allow)}
    return {name: value for name, value in env.items() if name.upper() in names}


def _pywin32(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise SandboxUnavailable(
            "the Windows backend needs pywin32", hint="pip install pywin32"
        ) from exc


class WindowsLauncher:
    """Starts each command suspended, puts it in a fresh Job Object, then resumes it."""

    def __init__(
        self, selected: Selected, spec: SandboxSpec, *, use_job: bool, contain: bool
    ) -> None:
        """Build a launcher.

        Args:
            selected: What `select` reported.
            spec: The command's confinement.
            use_job: Put each command in a Job Object (needs pywin32); without one the
                kill walks the process tree and can miss an orphaned grandchild.
            contain: Request the resource limits from the job (not only kill-on-close).
        """
        self._selected = selected
        self.spec = spec
        self._use_job = use_job
        self._wanted = job_limits(spec.limits, contain=contain)
        self._jobs: dict[int, object] = {}
        self._lock = threading.Lock()

    @property
    def selected(self) -> Selected:
        """What confinement this launcher applies."""
        return self._selected

    def popen(self, request: LaunchRequest) -> subprocess.Popen[bytes]:
        """Start one process inside a new job (see module docstring).

        Raises:
            ToolError: Empty argv, a missing working directory, or the program is not found.
            SandboxUnavailable: pywin32 is missing or the job could not be made.
        """
        if not request.argv:
            raise ToolError("empty command line")
        cwd = Path(request.cwd)
        if not cwd.is_dir():
            raise ToolError(f"working directory does not exist: {cwd}")
        env = scrub_windows_env(self.spec.env, self.spec.env_allow)
        program = resolve_program(request.argv[0], env, cwd)
        job = self._new_job() if self._use_job else None
        flags = _CREATE_NEW_PROCESS_GROUP | (_CREATE_SUSPENDED if job is not None else 0)
        try:
            process = subprocess.Popen(
                [program, *request.argv[1:]],
                cwd=cwd,
                env=env,
                stdin=request.stdin,
                stdout=request.stdout,
                stderr=request.stderr,
                close_fds=True,
                creationflags=flags,
            )
        except OSError as exc:
            if job is not None:
                _pywin32("win32api").CloseHandle(job)
            raise ToolError(f"could not start {request.argv[0]!r}: {exc}") from exc
        if job is not None:
            handle = int(getattr(process, "_handle"))  # noqa: B009 - Popen keeps it private
            _pywin32("win32job").AssignProcessToJobObject(job, handle)
            import ctypes  # Windows only: not loaded on other systems

            getattr(ctypes, "windll").ntdll.NtResumeProcess(handle)  # noqa: B009 - Windows only
            with self._lock:
                self._jobs[process.pid] = job
        return process

    def _new_job(self) -> object:
        win32job = _pywin32("win32job")
        job = win32job.CreateJobObject(None, "")
        info = win32job.QueryInformationJobObject(job, win32job.JobObjectExtendedLimitInformation)
        win32job.SetInformationJobObject(
            job, win32job.JobObjectExtendedLimitInformation, merge_job_limits(info, self._wanted)
        )
        return job

    def kill_tree(self, process: subprocess.Popen[bytes]) -> None:
        """Terminate every process in the command's job; reap it."""
        with self._lock:
            job = self._jobs.get(process.pid)
        if job is not None:
            _pywin32("win32job").TerminateJobObject(job, _KILLED_EXIT_CODE)
        else:
            with suppress(psutil.Error):
                for child in psutil.Process(process.pid).children(recursive=True):
                    with suppress(psutil.Error):
                        child.kill()
            process.kill()
        process.wait()

    def finish(self, process: subprocess.Popen[bytes]) -> None:
        """Close the job handle (which kills anything still in it)."""
        with self._lock:
            job = self._jobs.pop(process.pid, None)
        if job is not None:
            _pywin32("win32api").CloseHandle(job)
