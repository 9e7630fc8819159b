"""`diagnose` (what `io doctor` prints): on this machine with the real probe, and against
recorded `/proc` trees of hosts where the Linux backend cannot run, each with the
message bwrap printed there. Each cause is named in words with its fix (#23)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_core import (
    Backend,
    BackendChoice,
    HostProbe,
    SandboxConfig,
    SandboxUnavailable,
    diagnose,
    select_sandbox,
)

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "doctor"

_USERNS_DENIED = ("bwrap: No permissions to creating new namespace, likely because the kernel"
                  " does not allow non-privileged user namespaces.")


def _probe(case: str, *, trial: str | None, bwrap: str | None = "/usr/bin/bwrap",
           euid: int = 1001, machine: str = "x86_64") -> HostProbe:
    def which(name: str) -> str | None:
        return bwrap if name == "bwrap" else f"/usr/bin/{name}"

    return HostProbe(root=RECORDED / case, which=which, platform="linux", machine=machine,
                     euid=euid, check_proxy=False,
                     trial=lambda path: ("bubblewrap 0.9.0", None) if trial is None
                     else (None, trial))


@pytest.mark.parametrize("case,trial,cause,fix", [
    ("ubuntu-24.04-apparmor", "bwrap: setting up uid map: Permission denied",
     "AppArmor restricts unprivileged user namespaces", "apparmor_parser -r"),
    ("debian-userns-clone-off", _USERNS_DENIED,
     "kernel.unprivileged_userns_clone = 0", "sysctl -w kernel.unprivileged_userns_clone=1"),
    ("max-user-namespaces-zero", _USERNS_DENIED,
     "user.max_user_namespaces = 0", "sysctl -w user.max_user_namespaces="),
    ("no-seccomp", "bwrap: prctl(PR_SET_SECCOMP): Invalid argument",
     "seccomp is unavailable", "CONFIG_SECCOMP_FILTER"),
])
def test_each_recorded_cause_is_named_with_its_fix(case: str, trial: str, cause: str,
                                                   fix: str) -> None:
    found = diagnose(SandboxConfig(backend=BackendChoice.NATIVE),
                     probe=_probe(case, trial=trial))
    native = found.native
    assert native.backend is Backend.LINUX and not native.works
    assert native.cause is not None and cause in native.cause
    assert native.fix is not None and fix in native.fix
    assert not found.configured_runs
    assert found.auto is Backend.FLOOR and cause in found.auto_reason


def test_bwrap_missing_names_the_package_to_install() -> None:
    found = diagnose(SandboxConfig(), probe=_probe("works", trial=None, bwrap=None))
    assert not found.native.works and found.native.cause == "bwrap (bubblewrap) is not installed"
    assert found.native.fix is not None and "apt-get install bubblewrap" in found.native.fix
    assert found.configured_runs and found.auto is Backend.FLOOR  # auto degrades: it runs


def test_a_host_where_the_trial_works_reports_the_backend_and_what_it_lacks() -> None:
    found = diagnose(SandboxConfig(backend=BackendChoice.NATIVE),
                     probe=_probe("works", trial=None))
    assert found.native.works and found.configured_runs and found.auto is Backend.LINUX
    checks = {c.name: c for c in found.native.checks}
    assert checks["bwrap"].detail == "/usr/bin/bwrap (bubblewrap 0.9.0) built the sandbox"
    pids = checks["pids cgroup"]
    assert pids.health.value == "degraded" and "no cgroup delegation" in pids.detail
    assert pids.fix is not None and "Delegate=yes" in pids.fix


def test_root_is_not_blamed_on_the_unprivileged_switches() -> None:
    found = diagnose(SandboxConfig(), probe=_probe(
        "ubuntu-24.04-apparmor", trial="bwrap: something else broke", euid=0))
    assert found.native.cause == "bwrap cannot build the sandbox here (bwrap: something else broke)"
    apparmor = {c.name: c for c in found.native.checks}["AppArmor"]
    assert apparmor.health.value == "ok" and "runs as root" in apparmor.detail


def test_a_machine_without_a_syscall_table_runs_degraded() -> None:
    found = diagnose(SandboxConfig(), probe=_probe("works", trial=None, machine="s390x"))
    table = {c.name: c for c in found.native.checks}["syscall filter"]
    assert found.native.works and table.health.value == "degraded" and "s390x" in table.detail


def test_auto_refuses_when_the_floor_cannot_keep_a_held_key() -> None:
    found = diagnose(SandboxConfig(), probe=_probe("works", trial=None, bwrap=None, euid=0),
                     secrets=("sk-held-key-0001",))
    if os.geteuid() != 0:  # the floor's check reads this process (root: it cannot keep it)
        pytest.skip("the floor keeps keys from commands for a non-root io")
    assert found.auto is None and not found.configured_runs
    assert "refuses to start" in found.auto_reason


def test_on_this_machine_the_verdict_matches_what_select_picks() -> None:
    found = diagnose(SandboxConfig(), probe=HostProbe(env=dict(os.environ)))
    try:
        picked = select_sandbox(SandboxConfig(backend=BackendChoice.NATIVE),
                                env=dict(os.environ)).backend
    except SandboxUnavailable:
        picked = None
    assert found.native.works == (picked is not None)
    assert found.auto is (picked or Backend.FLOOR)
    assert found.proxy.health.value == "ok", found.proxy.detail
    if not found.native.works:
        assert found.native.cause and found.native.fix
