"""Choose the backend at run time, say truthfully what it enforces, and build its launcher.

`select` looks at the platform and what is actually available now (bwrap on PATH
and able to make namespaces, a writable pids cgroup, sandbox-exec, pywin32). For
`auto` it never raises: an unavailable native backend degrades to the floor and
`Selected.degraded` says why. For `native` the same situation is a
`SandboxUnavailable`. `floor` and `off` are returned as asked.

`Selected.enforced` lists only what really holds, and `Selected.mechanisms` names
the mechanism behind every entry, or says ``none: <why>`` for what does not hold,
so the record of a run answers "what boundary was in force" without guessing.

`launcher` turns a `Selected` (fresh, or read back from the store) into the
`ProcessLauncher` that applies exactly that; if the host can no longer provide
what the record claims, it raises rather than quietly doing less.

Selection may run a probe (`bwrap` against `true`, once per process); it never runs
a caller's command and never reads `os.environ` (the PATH comes from `env`).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING

from harness_core.errors import SandboxUnavailable
from harness_core.sandbox._base import (
    Backend,
    BackendChoice,
    ProcessLauncher,
    SandboxConfig,
    SandboxLimits,
    SandboxSpec,
    Selected,
)
from harness_core.sandbox._off import OffLauncher
from harness_core.sandbox._process import DEFAULT_ENV_NAMES

if TYPE_CHECKING:  # the backends load when selected: a run with `off` loads none of them
    from harness_core.sandbox._cgroup import PidsHierarchy
    from harness_core.sandbox._linux import BwrapInfo
    from harness_core.sandbox._seccomp import SeccompArch

__all__ = ["launcher", "select"]

Which = Callable[[str], "str | None"]
_Entry = tuple[str, bool, str]
"""One line of the report: name, whether it holds, the mechanism or why not."""

_NATIVE_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) and make sure user "
    'namespaces are allowed, or set [sandbox] backend = "auto" to fall back to the floor'
)


def select(
    config: SandboxConfig,
    *,
    env: Mapping[str, str],
    which: Which | None = None,
    platform: str | None = None,
    secrets: Collection[str] = (),
) -> Selected:
    """Choose the backend that will run commands, and report it honestly.

    Args:
        config: The `[sandbox]` table.
        env: The runner's environment; its PATH is where `bwrap` / `sandbox-exec` are looked up.
        which: Program lookup (defaults to `shutil.which` over `env`'s PATH); pass one
            that returns None to see what happens without bwrap.
        platform: A `sys.platform` value (defaults to this one).
        secrets: The provider keys this process holds (values; never stored). With
            any, `auto` does not degrade to a floor that cannot keep them from commands.

    Returns:
        What runs, what it enforces and by which mechanism, and why it degraded if it did.

    Raises:
        SandboxUnavailable: `backend = "native"` and the native backend cannot run here,
            or `auto` would degrade to a floor that cannot keep a provider key from
            commands.
    """
    platform = platform or sys.platform
    lookup = which or _which_over(env)
    keys = _secrets_entry(platform, secrets, env)
    if config.backend is BackendChoice.OFF:
        return _report(Backend.OFF, config, _off_entries(config), None, {})
    if config.backend is BackendChoice.FLOOR:
        return _floor(config, platform, None, keys)
    native = _native(config, platform, lookup)
    if isinstance(native, Selected):
        return native
    if config.backend is BackendChoice.NATIVE:
        raise SandboxUnavailable(
            f'[sandbox] backend = "native" cannot run here: {native}', hint=_NATIVE_HINT
        )
    if not keys[1]:
        raise SandboxUnavailable(
            f"the native sandbox cannot run here ({native}) and the floor it would fall "
            f"back to cannot keep the provider key from commands ({keys[2]})",
            hint=_KEY_HINT,
        )
    return _floor(config, platform, native, keys)


_KEY_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) so the native sandbox "
    'runs, or set [sandbox] backend = "floor" explicitly to accept that commands may read it'
)


def _secrets_entry(platform: str, secrets: Collection[str], env: Mapping[str, str]) -> _Entry:
    """Whether the floor keeps the provider keys from commands on this host."""
    if not secrets:
        return ("secrets", True, "no provider key is held by this process")
    if not platform.startswith("linux"):
        return ("secrets", False, f"none: the floor cannot hide io's environment on {platform}")
    if os.geteuid() == 0:
        return (
            "secrets",
            False,
            "none: running as root, a command can read any process's environment and "
            "memory (/proc/PID/environ, /proc/PID/mem)",
        )
    values = set(env.values())
    if any(key not in values for key in secrets):
        return (
            "secrets",
            False,
            "none: a provider key is not taken from io's environment (it comes from a "
            "file, which the floor leaves readable to commands)",
        )
    from harness_core.sandbox._secrets import ancestor_holding

    holder = ancestor_holding(secrets)
    if holder is not None:
        return (
            "secrets",
            False,
            f"none: ancestor process {holder} holds a provider key in its environment, "
            "readable by a command of the same user",
        )
    return (
        "secrets",
        True,
        "io is non-dumpable (PR_SET_DUMPABLE 0), so commands of the same user cannot read "
        "its /proc environ or memory; no ancestor's environment holds a key; commands get "
        "the scrubbed environment",
    )


def launcher(selected: Selected, spec: SandboxSpec) -> ProcessLauncher:
    """Build the launcher that applies `selected` to commands confined by `spec`.

    Args:
        selected: The result of `select` (or one read back from the store).
        spec: What the commands may touch, derived by the run from its policy.

    Returns:
        A launcher for `selected.backend`.

    Raises:
        SandboxUnavailable: The host can no longer provide what `selected` claims.
    """
    windows = sys.platform == "win32"
    if selected.backend is Backend.LINUX:
        from harness_core.sandbox._linux_launcher import LinuxLauncher
        from harness_core.sandbox._seccomp import build_filter, native_arch

        info = _bwrap_info(selected, spec.env)
        arch = native_arch() if "seccomp" in selected.enforced else None
        seccomp = build_filter(arch, allow_inet=spec.network) if arch else None
        pids = _pids_for(selected)
        return LinuxLauncher(selected, spec, bwrap=info, pids=pids, seccomp=seccomp)
    if selected.backend is Backend.MACOS:
        from harness_core.sandbox._macos import MacosLauncher

        return MacosLauncher(selected, spec, sandbox_exec=selected.mechanisms["sandbox-exec"])
    if selected.backend is Backend.WINDOWS or (
            windows and selected.backend in (Backend.FLOOR, Backend.OFF)):
        from harness_core.sandbox._windows import WindowsLauncher

        contained = selected.backend is Backend.WINDOWS
        return WindowsLauncher(selected, spec, use_job=contained, contain=contained)
    if selected.backend is Backend.FLOOR:
        from harness_core.sandbox._floor import FloorLauncher
        from harness_core.sandbox._secrets import make_undumpable

        if sys.platform.startswith("linux"):
            make_undumpable()
        return FloorLauncher(selected, spec, pids=_pids_for(selected))
    return OffLauncher(selected, spec)


def _which_over(env: Mapping[str, str]) -> Which:
    path = env.get("PATH", os.defpath)
    return lambda name: shutil.which(name, path=path)


def _true_command(which: Which) -> list[str]:
    found = which("true")
    return [os.path.abspath(found)] if found else [sys.executable, "-c", "pass"]


def _bwrap_info(selected: Selected, env: Mapping[str, str]) -> BwrapInfo:
    path = selected.mechanisms.get("bwrap")
    if not path:
        raise SandboxUnavailable("the selected Linux backend names no bwrap binary")
    seccomp = _probe_filter()
    from harness_core.sandbox._linux import probe_bwrap

    found = probe_bwrap(path, command=_true_command(_which_over(env)), seccomp=seccomp)
    if isinstance(found, str):
        raise SandboxUnavailable(f"the Linux backend cannot start: {found}", hint=_NATIVE_HINT)
    return found


def _pids_for(selected: Selected) -> PidsHierarchy | None:
    if "cgroup" not in selected.mechanisms:
        return None
    from harness_core.sandbox._cgroup import find_pids_hierarchy

    found = find_pids_hierarchy()
    if isinstance(found, str):
        raise SandboxUnavailable(
            f"the run was selected with {selected.mechanisms['cgroup']}, but now: {found}"
        )
    return found


def _probe_filter() -> bytes | None:
    from harness_core.sandbox._seccomp import build_filter, native_arch

    arch = native_arch()
    return build_filter(arch, allow_inet=False) if arch else None


def _native(config: SandboxConfig, platform: str, which: Which) -> Selected | str:
    if platform.startswith("linux"):
        from harness_core.sandbox._cgroup import find_pids_hierarchy
        from harness_core.sandbox._linux import probe_bwrap
        from harness_core.sandbox._seccomp import native_arch

        bwrap = which("bwrap")
        if bwrap is None:
            return "bwrap (bubblewrap) is not on PATH"
        found = probe_bwrap(
            os.path.abspath(bwrap), command=_true_command(which), seccomp=_probe_filter()
        )
        if isinstance(found, str):
            return found
        pids = find_pids_hierarchy()
        return _report(Backend.LINUX, config, *_linux_entries(config, found, pids, native_arch()))
    if platform == "darwin":
        sandbox_exec = which("sandbox-exec")
        if sandbox_exec is None:
            return "sandbox-exec is not on PATH"
        entries = _macos_entries(config)
        return _report(Backend.MACOS, config, entries, None, {"sandbox-exec": sandbox_exec})
    if platform == "win32":
        if importlib.util.find_spec("win32job") is None:
            return "pywin32 is not installed (pip install pywin32)"
        return _report(Backend.WINDOWS, config, _windows_entries(config), None, {})
    return f"no native sandbox for platform {platform!r}"


def _report(
    backend: Backend,
    config: SandboxConfig,
    entries: list[_Entry],
    degraded: str | None,
    extra: Mapping[str, str],
) -> Selected:
    mechanisms = {name: text for name, _, text in entries}
    mechanisms.update(extra)
    mechanisms["commands"] = (
        "exec, shell and process handles run in this backend"
        if config.commands
        else "only verification gates run in this backend; exec, shell and process handles "
        "run unconfined ([sandbox] commands = false)"
    )
    return Selected(
        backend=backend,
        requested=config.backend,
        enforced=tuple(name for name, held, _ in entries if held),
        degraded=degraded,
        mechanisms=mechanisms,
    )


def _env_entry(config: SandboxConfig) -> _Entry:
    names = ", ".join((*DEFAULT_ENV_NAMES, *config.env_allow))
    return ("env", True, f"environment cut to an allowlist: {names}")


def _rlimit_entries(limits: SandboxLimits) -> list[_Entry]:
    return [
        _limit("memory", limits.memory_mb, "memory_mb", "RLIMIT_AS {} MiB (address space)"),
        _limit("cpu", limits.cpu_seconds, "cpu_seconds", "RLIMIT_CPU {} s per process"),
        _limit("open_files", limits.open_files, "open_files", "RLIMIT_NOFILE {}"),
    ]


def _limit(name: str, value: float | None, key: str, template: str) -> _Entry:
    if value is None:
        return (name, False, f"none: [sandbox] {key} is unset")
    return (name, True, template.format(value))


def _max_processes_entry(limits: SandboxLimits, pids: PidsHierarchy | str) -> _Entry:
    if limits.max_processes is None:
        return ("max_processes", False, "none: [sandbox] max_processes is unset")
    if isinstance(pids, str):
        return ("max_processes", False, f"none: {pids}")
    return ("max_processes", True, f"{pids.describe()}, pids.max = {limits.max_processes}")


def _wall_entry(limits: SandboxLimits, how: str) -> _Entry:
    if limits.wall_seconds is None:
        return ("wall", False, "none: [sandbox] wall_seconds is unset")
    return ("wall", True, f"{limits.wall_seconds:g} s, then SIGKILL to {how}")


def _linux_entries(
    config: SandboxConfig, info: BwrapInfo, pids: PidsHierarchy | str, arch: SeccompArch | None
) -> tuple[list[_Entry], None, dict[str, str]]:
    from harness_core.sandbox._seccomp import DENIED_SYSCALLS

    limits = config.limits
    if arch is None:
        seccomp: _Entry = ("seccomp", False, "none: no syscall table for this machine")
    else:
        allowed = "AF_UNIX, AF_INET, AF_INET6, AF_NETLINK" if config.network else "AF_UNIX"
        seccomp = (
            "seccomp",
            True,
            f"BPF filter ({arch.name}) loaded by bwrap: {', '.join(DENIED_SYSCALLS)} and "
            f"sockets other than {allowed} refused with EPERM",
        )
    if config.network:
        net: _Entry = (
            "net",
            True,
            "network namespace with only its own loopback; the one way out is io's egress "
            "proxy (HTTP_PROXY/HTTPS_PROXY: CONNECT and plain HTTP), which admits a host "
            "only when the policy's net check allows it",
        )
    else:
        net = ("net", True, "network namespace with only its own loopback")
    tree = "the process group, its descendants and the pid namespace"
    entries = [
        (
            "fs",
            True,
            f"{info.version}: / read-only, workdir and a private /tmp writable, /run empty",
        ),
        (
            "protected_paths",
            True,
            "read-only binds; a missing one is covered by an empty read-only placeholder; "
            "directories leading to them cannot be renamed",
        ),
        net,
        seccomp,
        ("pid", True, "pid namespace: host processes and their environments are invisible"),
        (
            "secrets",
            True,
            "scrubbed environment; pid namespace (no other process's /proc environ); the home "
            "directory, the secret stores, the io store and the host /tmp hidden",
        ),
        (
            "reads",
            True,
            "home directory hidden but for toolchains and read_paths; secret stores, the io "
            "store and every path the policy refuses to read masked before the command runs",
        ),
        ("session", True, "new session: no controlling terminal"),
        _env_entry(config),
        *_rlimit_entries(limits),
        _max_processes_entry(limits, pids),
        _wall_entry(limits, tree + ("" if isinstance(pids, str) else " and the cgroup's members")),
    ]
    from harness_core.sandbox._cgroup import PidsHierarchy

    extra = {"bwrap": info.path}
    if isinstance(pids, PidsHierarchy):
        extra["cgroup"] = pids.describe()
    return entries, None, extra


def _floor(
    config: SandboxConfig, platform: str, degraded: str | None, keys: _Entry
) -> Selected:
    from harness_core.sandbox._cgroup import PidsHierarchy, find_pids_hierarchy

    limits = config.limits
    pids: PidsHierarchy | str = (
        find_pids_hierarchy() if platform.startswith("linux") else "no pids cgroup on this platform"
    )
    if platform == "win32":
        resources = [
            (name, False, "none: the Windows floor has no resource limits")
            for name in ("memory", "cpu", "open_files", "max_processes")
        ]
        tree = "the process and its descendants (an orphaned grandchild can survive)"
    else:
        resources = [*_rlimit_entries(limits), _max_processes_entry(limits, pids)]
        tree = "the process group and its descendants" + (
            " (a grandchild that left its session and lost its parent can survive)"
            if isinstance(pids, str)
            else " and the cgroup's members"
        )
    entries: list[_Entry] = [
        ("fs", False, "none: the floor does not confine the filesystem"),
        ("protected_paths", False, "none: the floor does not confine the filesystem"),
        ("reads", False, "none: the floor does not confine reads (deny_read holds for file "
         "tools only)"),
        ("net", False, "none: the floor does not confine the network (a policy with net "
         "rules is refused)"),
        ("seccomp", False, "none: the floor installs no syscall filter"),
        keys,
        ("session", True, "new session: no controlling terminal"),
        _env_entry(config),
        *resources,
        _wall_entry(limits, tree),
    ]
    extra = {"cgroup": pids.describe()} if isinstance(pids, PidsHierarchy) else {}
    return _report(Backend.FLOOR, config, entries, degraded, extra)


def _off_entries(config: SandboxConfig) -> list[_Entry]:
    off = [
        (name, False, 'none: [sandbox] backend = "off"')
        for name in (
            "fs",
            "protected_paths",
            "reads",
            "secrets",
            "net",
            "seccomp",
            "memory",
            "cpu",
            "open_files",
            "max_processes",
        )
    ]
    return [
        *off,
        ("session", True, "new session: no controlling terminal"),
        _env_entry(config),
        _wall_entry(config.limits, "the process group and its descendants"),
    ]


def _macos_entries(config: SandboxConfig) -> list[_Entry]:
    net: _Entry = (
        ("net", False, "none: [sandbox] network = true")
        if config.network
        else ("net", True, "sandbox-exec profile: (deny network*)")
    )
    return [
        ("fs", True, "sandbox-exec profile: writes only under the workdir"),
        ("reads", False, "none: the macOS profile does not confine reads"),
        ("secrets", False, "none: the macOS profile does not hide other processes"),
        ("protected_paths", True, "sandbox-exec profile: writes denied under each protected path"),
        net,
        ("seccomp", False, "none: no syscall filter on macOS"),
        ("session", True, "new session: no controlling terminal"),
        _env_entry(config),
        *_rlimit_entries(config.limits),
        ("max_processes", False, "none: not enforced on macOS"),
        _wall_entry(config.limits, "the process group and its descendants"),
    ]


def _windows_entries(config: SandboxConfig) -> list[_Entry]:
    limits = config.limits
    return [
        ("fs", False, "none: a Job Object does not confine the filesystem"),
        ("protected_paths", False, "none: a Job Object does not confine the filesystem"),
        ("reads", False, "none: a Job Object does not confine reads"),
        ("secrets", False, "none: a Job Object does not hide other processes"),
        ("net", False, "none: a Job Object does not confine the network"),
        ("seccomp", False, "none: no syscall filter on Windows"),
        _env_entry(config),
        _limit("memory", limits.memory_mb, "memory_mb", "Job Object per-process memory {} MiB"),
        _limit("cpu", limits.cpu_seconds, "cpu_seconds", "Job Object user-mode time {} s"),
        ("open_files", False, "none: no open-file limit on Windows"),
        _limit(
            "max_processes", limits.max_processes, "max_processes", "Job Object active processes {}"
        ),
        _wall_entry(limits, "every process in the Job Object"),
    ]
