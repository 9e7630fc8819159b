"""`diagnose`: which sandbox backends can run on this machine, and for each that cannot,
the cause in words and the fix (what `io doctor` prints).

The Linux backend needs bubblewrap able to build its sandbox: unprivileged user
namespaces (which a kernel switch, a zero namespace limit, or AppArmor's restriction on
Ubuntu 23.10+ — GitHub's ubuntu-24.04 runners included — can take away) and seccomp.
A trial `bwrap` run is the verdict; the kernel's switches, read from `/proc`, name the
cause when the trial fails. A pids cgroup and a seccomp table for the machine are
reported too: without them the backend runs, but bounds less.

Every input comes through a `HostProbe` (the `/proc` root, the program lookup, the trial
run, the platform), so a test points it at a recorded `/proc` tree for each cause. The
only host effects are the trial run (bwrap against `true`), a probe of the pids cgroup,
and the egress proxy started and stopped once. Nothing here writes to the terminal.
"""

from __future__ import annotations

import os
import platform as _platform
import shutil
import socket
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import field
from enum import Enum
from pathlib import Path
from typing import Any

from harness_core._record import record
from harness_core.sandbox._base import Backend, BackendChoice, SandboxConfig

__all__ = ["BackendReport", "Diagnosis", "DoctorCheck", "Health", "HostProbe", "diagnose"]

Which = Callable[[str], "str | None"]
Trial = Callable[[str], "tuple[str | None, str | None]"]
"""bwrap's path -> (its version when the trial sandbox ran, else None; why not, else None)."""


class Health(Enum):
    """How one check came out. May grow."""

    OK = "ok"
    """It holds."""
    DEGRADED = "degraded"
    """The backend runs, but this part of the boundary does not hold."""
    FAILED = "failed"
    """The backend cannot run because of it."""


@record
class DoctorCheck:
    """One fact about the host.

    Attributes:
        name: What was checked (``bwrap``, ``user namespaces``, ``seccomp``, ``pids
            cgroup``, ``egress proxy``, ...).
        health: How it came out.
        detail: What was found, in words.
        fix: What to do about it (None when nothing is to be done).
    """

    name: str
    health: Health
    detail: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "health": self.health.value, "detail": self.detail,
                "fix": self.fix}


@record
class BackendReport:
    """Whether one backend can run here.

    Attributes:
        backend: The backend.
        works: Whether it can run commands here.
        cause: Why not, in words (None when it works).
        fix: What makes it work (None when it works).
        checks: The facts behind the verdict.
    """

    backend: Backend
    works: bool
    cause: str | None = None
    fix: str | None = None
    checks: tuple[DoctorCheck, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend.value, "works": self.works, "cause": self.cause,
                "fix": self.fix, "checks": [c.to_json() for c in self.checks]}


@record
class Diagnosis:
    """The sandbox as this machine can provide it.

    Attributes:
        platform: The `sys.platform` value diagnosed.
        configured: What `[sandbox] backend` asks for.
        backends: The native backend first, then the floor and off.
        auto: What `backend = "auto"` picks here (None: it refuses to start).
        auto_reason: Why.
        proxy: Whether the egress proxy starts and answers.
    """

    platform: str
    configured: BackendChoice
    backends: tuple[BackendReport, ...]
    auto: Backend | None
    auto_reason: str
    proxy: DoctorCheck

    @property
    def native(self) -> BackendReport:
        """The platform's native backend's report."""
        return self.backends[0]

    @property
    def configured_runs(self) -> bool:
        """Whether the configured backend can run here (`io doctor` exits 1 when not)."""
        if self.configured is BackendChoice.NATIVE:
            return self.native.works
        if self.configured is BackendChoice.AUTO:
            return self.auto is not None
        return True

    def to_json(self) -> dict[str, Any]:
        return {"platform": self.platform, "configured": self.configured.value,
                "configured_runs": self.configured_runs,
                "auto": self.auto.value if self.auto is not None else None,
                "auto_reason": self.auto_reason,
                "backends": [b.to_json() for b in self.backends],
                "egress_proxy": self.proxy.to_json()}


@record
class HostProbe:
    """Where `diagnose` reads the host from (defaults: this machine).

    Attributes:
        root: The directory holding `proc/` (``/``; a test passes a recorded tree).
        which: Program lookup (default: `shutil.which` over `env`'s PATH).
        trial: Runs bwrap once to build the sandbox around `true` (default: the real
            probe the Linux backend runs before a run).
        platform: A `sys.platform` value (default: this one).
        machine: A `platform.machine()` value (default: this one).
        euid: The effective uid (default: this process's); root is not subject to the
            unprivileged user-namespace switches.
        check_proxy: Start the egress proxy and send it one request.
        env: The environment: its PATH for the default lookup, and where the floor's
            check looks for the provider keys.
    """

    root: Path = Path("/")
    which: Which | None = None
    trial: Trial | None = None
    platform: str | None = None
    machine: str | None = None
    euid: int | None = None
    check_proxy: bool = True
    env: Mapping[str, str] = field(default_factory=lambda: {})

    def read(self, relative: str) -> str | None:
        """A `/proc` file's text, stripped; None when it does not exist or cannot be read."""
        try:
            return (self.root / relative).read_text().strip()
        except OSError:
            return None


_BWRAP_INSTALL = ("install bubblewrap: `sudo apt-get install bubblewrap` (Debian, Ubuntu),"
                  " `sudo dnf install bubblewrap` (Fedora), `sudo apk add bubblewrap` (Alpine)")
_APPARMOR_FIX = (
    "give bwrap an AppArmor profile that allows user namespaces: write"
    " /etc/apparmor.d/bwrap holding `abi <abi/4.0>, include <tunables/global>"
    " profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }` and run"
    " `sudo apparmor_parser -r /etc/apparmor.d/bwrap`; or, on a throwaway CI machine,"
    " `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`")


def diagnose(
    config: SandboxConfig,
    *,
    probe: HostProbe | None = None,
    secrets: Collection[str] = (),
) -> Diagnosis:
    """Say which sandbox backends can run here, why not, and what `auto` would pick.

    Args:
        config: The `[sandbox]` table (its `backend` is what must run).
        probe: Where the host is read from; None reads this machine.
        secrets: The provider keys this process holds: with any, `auto` refuses to
            degrade to a floor that cannot keep them from commands.

    Returns:
        The diagnosis; it never raises for a host that cannot sandbox (that is its answer).
    """
    probe = probe or HostProbe()
    platform = probe.platform or sys.platform
    which = probe.which or _which_over(probe.env)
    if platform.startswith("linux"):
        native = _linux(probe, which)
    else:
        native = _other_native(platform, which)
    floor = _floor(platform)
    off = BackendReport(Backend.OFF, True, checks=(DoctorCheck(
        "confinement", Health.DEGRADED, "none: commands run as io does",
        'only for a machine that is itself the boundary; prefer "native" or "floor"'),))
    auto, why = _auto(native, platform, secrets, probe.env)
    proxy = _proxy_check() if probe.check_proxy else DoctorCheck(
        "egress proxy", Health.OK, "not checked")
    return Diagnosis(platform, config.backend, (native, floor, off), auto, why, proxy)


def _which_over(env: Mapping[str, str]) -> Which:
    path = env.get("PATH", os.defpath)
    return lambda name: shutil.which(name, path=path)


def _auto(native: BackendReport, platform: str, secrets: Collection[str],
          env: Mapping[str, str]) -> tuple[Backend | None, str]:
    if native.works:
        return native.backend, f"the native {native.backend.value} backend runs here"
    if secrets:
        from harness_core.sandbox._select import _secrets_entry

        _, keeps, how = _secrets_entry(platform, secrets, env)
        if not keeps:
            return None, (f"the native backend cannot run ({native.cause}) and the floor"
                          f" cannot keep the provider key from commands ({how}): `auto`"
                          ' refuses to start; fix the native backend or set backend = "floor"')
    return Backend.FLOOR, f"the native backend cannot run ({native.cause}): `auto` degrades"


def _real_trial(which: Which) -> Trial:
    def trial(path: str) -> tuple[str | None, str | None]:
        from harness_core.sandbox._linux import probe_bwrap
        from harness_core.sandbox._select import _probe_filter, _true_command

        found = probe_bwrap(path, command=_true_command(which), seccomp=_probe_filter())
        return (None, found) if isinstance(found, str) else (found.version, None)

    return trial


def _linux(probe: HostProbe, which: Which) -> BackendReport:
    checks = [_seccomp_table(probe), _pids(probe)]
    bwrap = which("bwrap")
    if bwrap is None:
        checks.insert(0, DoctorCheck("bwrap", Health.FAILED, "bwrap (bubblewrap) is not on PATH",
                                     _BWRAP_INSTALL))
        return BackendReport(Backend.LINUX, False, "bwrap (bubblewrap) is not installed",
                             _BWRAP_INSTALL, tuple(checks))
    version, failure = (probe.trial or _real_trial(which))(os.path.abspath(bwrap))
    userns = _userns(probe)
    seccomp = _seccomp_kernel(probe)
    if failure is None:
        checks[:0] = [DoctorCheck("bwrap", Health.OK, f"{bwrap} ({version}) built the sandbox"),
                      *userns, seccomp]
        return BackendReport(Backend.LINUX, True, checks=tuple(checks))
    blockers = [c for c in (*userns, seccomp) if c.health is Health.FAILED]
    checks[:0] = [DoctorCheck("bwrap", Health.FAILED, f"{bwrap}: {failure}"), *userns, seccomp]
    if blockers:
        first = blockers[0]
        return BackendReport(Backend.LINUX, False, first.detail, first.fix, tuple(checks))
    return BackendReport(
        Backend.LINUX, False, f"bwrap cannot build the sandbox here ({failure})",
        "run `bwrap --ro-bind / / --unshare-all true` to see why; in a container, allow user"
        " namespaces (for Docker: --security-opt seccomp=unconfined and"
        " --security-opt apparmor=unconfined, or --privileged)", tuple(checks))


def _userns(probe: HostProbe) -> list[DoctorCheck]:
    """The switches that allow or forbid unprivileged user namespaces."""
    root = (probe.euid if probe.euid is not None else os.geteuid()) == 0
    out: list[DoctorCheck] = []
    limit = probe.read("proc/sys/user/max_user_namespaces")
    if limit == "0":
        out.append(DoctorCheck(
            "user namespaces", Health.FAILED,
            "user namespaces are disabled (user.max_user_namespaces = 0)",
            "`sudo sysctl -w user.max_user_namespaces=15000`, and persist it in"
            " /etc/sysctl.d/99-userns.conf"))
    elif limit is not None:
        out.append(DoctorCheck("user namespaces", Health.OK,
                               f"allowed (user.max_user_namespaces = {limit})"))
    clone = probe.read("proc/sys/kernel/unprivileged_userns_clone")
    if clone == "0" and not root:
        out.append(DoctorCheck(
            "unprivileged user namespaces", Health.FAILED,
            "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)",
            "`sudo sysctl -w kernel.unprivileged_userns_clone=1`, and persist it in"
            " /etc/sysctl.d/99-userns.conf"))
    restrict = probe.read("proc/sys/kernel/apparmor_restrict_unprivileged_userns")
    if restrict == "1" and not root:
        out.append(DoctorCheck(
            "AppArmor", Health.FAILED,
            "AppArmor restricts unprivileged user namespaces"
            " (kernel.apparmor_restrict_unprivileged_userns = 1, the default on Ubuntu"
            " 23.10 and later, GitHub's ubuntu-24.04 runners included)", _APPARMOR_FIX))
    elif restrict is not None:
        state = "on, but io runs as root" if restrict == "1" else "off"
        out.append(DoctorCheck("AppArmor", Health.OK,
                               f"user-namespace restriction {state}"))
    return out


def _seccomp_kernel(probe: HostProbe) -> DoctorCheck:
    status = probe.read("proc/self/status")
    if status is not None and "\nSeccomp:" not in "\n" + status:
        return DoctorCheck(
            "seccomp", Health.FAILED,
            "seccomp is unavailable: the kernel reports no Seccomp field in /proc/self/status",
            'use a kernel built with CONFIG_SECCOMP_FILTER, or set [sandbox] backend = "floor"')
    return DoctorCheck("seccomp", Health.OK, "the kernel supports seccomp filters")


def _seccomp_table(probe: HostProbe) -> DoctorCheck:
    from harness_core.sandbox._seccomp import native_arch

    machine = probe.machine or _platform.machine()
    arch = native_arch(machine)
    if arch is None:
        return DoctorCheck(
            "syscall filter", Health.DEGRADED,
            f"io has no syscall table for {machine}: commands run without the filter",
            "none in io.toml; the other layers still hold")
    return DoctorCheck("syscall filter", Health.OK, f"BPF filter for {arch.name}")


def _pids(probe: HostProbe) -> DoctorCheck:
    from harness_core.sandbox._cgroup import discover_pids_hierarchy

    found = discover_pids_hierarchy(probe.root / "proc")
    if isinstance(found, str):
        return DoctorCheck(
            "pids cgroup", Health.DEGRADED,
            f"no cgroup delegation: {found}; max_processes falls back to RLIMIT_NPROC",
            "run io in a cgroup v2 subtree delegated to its user with the pids controller"
            " enabled, e.g. `systemd-run --user --scope -p Delegate=yes io run …`")
    return DoctorCheck("pids cgroup", Health.OK, found.describe())


def _other_native(platform: str, which: Which) -> BackendReport:
    if platform == "darwin":
        if which("sandbox-exec") is None:
            return BackendReport(Backend.MACOS, False, "sandbox-exec is not on PATH",
                                 "sandbox-exec ships with macOS in /usr/bin; put it on PATH")
        return BackendReport(Backend.MACOS, True, checks=(
            DoctorCheck("sandbox-exec", Health.OK, "found"),))
    if platform == "win32":
        import importlib.util

        if importlib.util.find_spec("win32job") is None:
            return BackendReport(Backend.WINDOWS, False, "pywin32 is not installed",
                                 "pip install pywin32")
        return BackendReport(Backend.WINDOWS, True)
    return BackendReport(Backend.LINUX, False, f"no native sandbox for platform {platform!r}",
                         'set [sandbox] backend = "floor"')


def _floor(platform: str) -> BackendReport:
    checks = [DoctorCheck("limits", Health.OK,
                          "rlimits, timeout, process-group kill, scrubbed environment"),
              DoctorCheck("reads and network", Health.DEGRADED,
                          "not confined: deny_read holds for file tools only, and a policy"
                          " with net rules is refused", "use the native backend")]
    if not platform.startswith("linux"):
        checks.append(DoctorCheck("secrets", Health.DEGRADED,
                                  f"the floor cannot hide io's environment on {platform}"))
    return BackendReport(Backend.FLOOR, True, checks=tuple(checks))


def _proxy_check() -> DoctorCheck:
    """Start the egress proxy, ask it for a host it refuses, and stop it."""
    from harness_core.sandbox._proxy import Admission, EgressProxy

    try:
        proxy = EgressProxy(lambda host, port: Admission(False, "io doctor asks nothing"))
    except OSError as exc:
        return DoctorCheck("egress proxy", Health.FAILED,
                           f"cannot start: {exc.strerror or exc}",
                           "io needs a writable temporary directory for its unix socket")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(5)
            conn.connect(str(proxy.socket_path))
            conn.sendall(b"CONNECT doctor.invalid:443 HTTP/1.1\r\nHost: doctor.invalid\r\n\r\n")
            head = conn.recv(64).decode("latin-1")
    except OSError as exc:
        return DoctorCheck("egress proxy", Health.FAILED, f"does not answer: {exc}")
    finally:
        proxy.close()
    if not head.startswith("HTTP/1.1 403"):
        return DoctorCheck("egress proxy", Health.FAILED, f"answered {head[:30]!r}")
    return DoctorCheck("egress proxy", Health.OK, "starts, answers, and refuses what the"
                                                  " policy does not allow")
