"""Sandbox data types and the process-launch seam.

The sandbox confines; it never decides. It receives a `SandboxSpec` (data the run
derives from the policy) and never sees a rule. Every command the harness starts goes
through a `ProcessLauncher`, so one code path carries the confinement.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from enum import Enum
from pathlib import Path
from typing import IO, Any, Protocol

from harness_core._record import record

__all__ = [
    "Backend",
    "BackendChoice",
    "LaunchRequest",
    "ProcessLauncher",
    "SandboxConfig",
    "SandboxLimits",
    "SandboxSpec",
    "Selected",
]


class Backend(Enum):
    """The backend that actually runs commands. May grow."""

    LINUX = "linux"
    """bubblewrap namespaces, seccomp, rlimits and a pids cgroup."""
    MACOS = "macos"
    """sandbox-exec profile (not exercised on this project's CI)."""
    WINDOWS = "windows"
    """Job Object resource containment (not exercised on this project's CI)."""
    FLOOR = "floor"
    """Portable: rlimits, timeout, process-group kill, scrubbed environment."""
    OFF = "off"
    """No confinement at all (operator's explicit choice)."""


class BackendChoice(Enum):
    """What the operator asked for in `[sandbox] backend`."""

    AUTO = "auto"
    """The platform's native backend, degrading to the floor (reported) when unavailable."""
    NATIVE = "native"
    """The native backend or a clear error; never degrades."""
    FLOOR = "floor"
    """The portable floor."""
    OFF = "off"
    """No sandbox."""


@record
class SandboxLimits:
    """Resource ceilings for one sandboxed command. None means unlimited."""

    memory_mb: int | None = 2048
    cpu_seconds: int | None = 300
    wall_seconds: float | None = 600
    max_processes: int | None = 256
    open_files: int | None = 1024


@record
class SandboxConfig:
    """The `[sandbox]` table, typed.

    Attributes:
        backend: Which backend to select.
        limits: Resource ceilings.
        network: Let sandboxed commands reach the network.
        commands: Run `exec`, `shell` and handles in the sandbox (gates always are).
        env_allow: Extra environment variable names passed through the scrub.
        read_paths: Host paths kept readable inside the sandbox although they lie in
            the hidden home directory (``~`` is expanded by the run).
    """

    backend: BackendChoice = BackendChoice.AUTO
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    network: bool = False
    commands: bool = True
    env_allow: tuple[str, ...] = ()
    read_paths: tuple[str, ...] = ()


@record
class Selected:
    """The backend that will actually run, reported honestly.

    Attributes:
        backend: What runs.
        requested: What the operator asked for.
        enforced: Names of limits and confinements that really hold
            (e.g. ``memory``, ``cpu``, ``wall``, ``max_processes``, ``fs``, ``net``,
            ``seccomp``).
        degraded: Why the native backend was not used, when it was not.
        mechanisms: Which mechanism enforces what (e.g. ``{"max_processes": "cgroup-v1 pids"}``).
    """

    backend: Backend
    requested: BackendChoice
    enforced: tuple[str, ...] = ()
    degraded: str | None = None
    mechanisms: Mapping[str, str] = field(default_factory=lambda: {})

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend.value,
            "requested": self.requested.value,
            "enforced": list(self.enforced),
            "degraded": self.degraded,
            "mechanisms": dict(self.mechanisms),
        }


@record
class SandboxSpec:
    """What one sandboxed command may touch, derived by the run from the policy.

    Attributes:
        workdir: The writable root (the workspace).
        read_only: Paths inside `workdir` that stay read-only (protected files); a
            missing one must not be creatable.
        network: Whether the network is reachable.
        limits: Resource ceilings.
        env: The environment to pass, before the backend's own scrub.
        env_allow: Names of variables allowed through the scrub beyond the default set.
        read_paths: Host paths kept readable although they lie in the hidden home.
        hidden: Host paths masked in every command (the io store and its siblings).
        masked: Called before each command: the paths the policy refuses to read,
            already expanded; each is masked before the command runs (a sandbox built
            with other masks is not reused for it).
        egress: Where the run's egress proxy listens (a unix socket), when commands
            may reach the network through it; None means no proxy.
    """

    workdir: Path
    read_only: tuple[Path, ...] = ()
    network: bool = False
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    env: Mapping[str, str] = field(default_factory=lambda: {})
    env_allow: tuple[str, ...] = ()
    read_paths: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    masked: Callable[[], Iterable[Path]] | None = None
    egress: Path | None = None


@record
class LaunchRequest:
    """One process to start.

    Attributes:
        argv: Program and arguments; the program is resolved on PATH by the launcher.
        cwd: Working directory (inside the workspace).
        stdin: A file object, `subprocess.DEVNULL` or `subprocess.PIPE`.
        stdout: Likewise.
        stderr: Likewise, or `subprocess.STDOUT`.
    """

    argv: Sequence[str]
    cwd: Path
    stdin: IO[bytes] | int | None = subprocess.DEVNULL
    stdout: IO[bytes] | int | None = subprocess.PIPE
    stderr: IO[bytes] | int | None = subprocess.PIPE


class ProcessLauncher(Protocol):
    """Starts processes under one confinement. Each process leads its own process group.

    The caller owns the returned `Popen` and ends it with `kill_tree`.
    """

    @property
    def selected(self) -> Selected:
        """What confinement this launcher applies."""
        ...

    def popen(self, request: LaunchRequest) -> subprocess.Popen[bytes]:
        """Start one process (its own session and process group).

        Raises:
            SandboxUnavailable: The confinement could not be set up.
            ToolError: The program was not found on PATH.
        """
        ...

    def kill_tree(self, process: subprocess.Popen[bytes]) -> None:
        """Kill the process, its process group and every descendant; reap it."""
        ...

    def finish(self, process: subprocess.Popen[bytes]) -> None:
        """Release per-process resources (cgroups, temp files) after it was reaped."""
        ...
