"""What `select` reports for each request and host, and what `launcher` builds from it."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from harness_core.errors import SandboxUnavailable
from harness_core.sandbox import (
    Backend,
    BackendChoice,
    SandboxConfig,
    SandboxLimits,
    SandboxSpec,
    launcher,
    select,
)
from harness_core.sandbox._cgroup import PidsHierarchy, find_pids_hierarchy
from harness_core.sandbox._floor import FloorLauncher
from harness_core.sandbox._off import OffLauncher

ENV = {"PATH": "/usr/bin:/bin"}


def no_program(_: str) -> None:
    return None


def test_off_is_returned_as_asked_and_enforces_no_confinement() -> None:
    selected = select(SandboxConfig(backend=BackendChoice.OFF), env=ENV)
    assert selected.backend is Backend.OFF
    assert selected.requested is BackendChoice.OFF
    assert selected.degraded is None
    assert set(selected.enforced) == {"session", "env", "wall"}
    assert selected.mechanisms["fs"].startswith("none:")


def test_floor_is_returned_as_asked_without_a_degradation_reason() -> None:
    selected = select(SandboxConfig(backend=BackendChoice.FLOOR), env=ENV, platform="linux")
    assert selected.backend is Backend.FLOOR
    assert selected.degraded is None
    for name in ("memory", "cpu", "open_files", "wall", "env", "session"):
        assert name in selected.enforced
    for name in ("fs", "net", "seccomp", "protected_paths"):
        assert name not in selected.enforced
        assert selected.mechanisms[name].startswith("none:")


def test_floor_claims_max_processes_exactly_when_a_pids_cgroup_is_writable() -> None:
    selected = select(SandboxConfig(backend=BackendChoice.FLOOR), env=ENV, platform="linux")
    has_cgroup = isinstance(find_pids_hierarchy(), PidsHierarchy)
    assert ("max_processes" in selected.enforced) is has_cgroup
    assert ("cgroup" in selected.mechanisms) is has_cgroup
    if not has_cgroup:
        assert selected.mechanisms["max_processes"].startswith("none:")
        assert "can survive" in selected.mechanisms["wall"]


def test_auto_without_bwrap_degrades_to_the_floor_and_says_why() -> None:
    selected = select(SandboxConfig(), env=ENV, which=no_program, platform="linux")
    assert selected.backend is Backend.FLOOR
    assert selected.requested is BackendChoice.AUTO
    assert selected.degraded is not None and "bwrap" in selected.degraded


def test_native_without_bwrap_is_a_clear_error() -> None:
    with pytest.raises(SandboxUnavailable, match="native.*bwrap") as caught:
        select(
            SandboxConfig(backend=BackendChoice.NATIVE), env=ENV, which=no_program, platform="linux"
        )
    assert caught.value.hint is not None and "bubblewrap" in caught.value.hint


def test_a_path_without_bwrap_degrades_through_the_default_lookup(tmp_path: Path) -> None:
    selected = select(SandboxConfig(), env={"PATH": str(tmp_path)}, platform="linux")
    assert selected.backend is Backend.FLOOR
    assert selected.degraded == "bwrap (bubblewrap) is not on PATH"


def fake_bwrap(tmp_path: Path, message: str) -> Path:
    script = tmp_path / "bwrap"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in --version) echo "bubblewrap 0.8.0"; exit 0;; --help) exit 0;; esac\n'
        f'echo "{message}" >&2\nexit 1\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_bwrap_that_cannot_make_namespaces_degrades_auto_with_its_message(tmp_path: Path) -> None:
    bwrap = fake_bwrap(tmp_path, "bwrap: setting up uid map: Permission denied")
    selected = select(
        SandboxConfig(),
        env=ENV,
        platform="linux",
        which=lambda name: str(bwrap) if name == "bwrap" else None,
    )
    assert selected.backend is Backend.FLOOR
    assert (
        selected.degraded
        == "bwrap cannot create the sandbox here: bwrap: setting up uid map: Permission denied"
    )


def test_bwrap_that_cannot_make_namespaces_fails_native(tmp_path: Path) -> None:
    bwrap = fake_bwrap(tmp_path, "bwrap: No permissions to creating new namespace")
    with pytest.raises(SandboxUnavailable, match="No permissions to creating new namespace"):
        select(
            SandboxConfig(backend=BackendChoice.NATIVE),
            env=ENV,
            platform="linux",
            which=lambda name: str(bwrap) if name == "bwrap" else None,
        )


def test_macos_with_sandbox_exec_reports_its_confinement() -> None:
    selected = select(
        SandboxConfig(),
        env=ENV,
        platform="darwin",
        which=lambda name: "/usr/bin/sandbox-exec" if name == "sandbox-exec" else None,
    )
    assert selected.backend is Backend.MACOS
    assert {"fs", "protected_paths", "net", "memory", "cpu"} <= set(selected.enforced)
    assert "max_processes" not in selected.enforced
    assert selected.mechanisms["sandbox-exec"] == "/usr/bin/sandbox-exec"


def test_macos_with_network_allowed_does_not_claim_net() -> None:
    selected = select(
        SandboxConfig(network=True),
        env=ENV,
        platform="darwin",
        which=lambda name: "/usr/bin/sandbox-exec",
    )
    assert "net" not in selected.enforced
    assert selected.mechanisms["net"] == "none: [sandbox] network = true"


def test_windows_without_pywin32_degrades_to_a_floor_without_limits() -> None:
    selected = select(SandboxConfig(), env=ENV, platform="win32", which=no_program)
    assert selected.backend is Backend.FLOOR
    assert selected.degraded is not None and "pywin32" in selected.degraded
    assert "memory" not in selected.enforced
    assert "max_processes" not in selected.enforced


def test_unknown_platform_degrades_with_its_name() -> None:
    selected = select(SandboxConfig(), env=ENV, platform="sunos5", which=no_program)
    assert selected.backend is Backend.FLOOR
    assert selected.degraded == "no native sandbox for platform 'sunos5'"


def test_unset_limits_are_reported_as_not_enforced() -> None:
    limits = SandboxLimits(
        memory_mb=None, cpu_seconds=None, wall_seconds=None, max_processes=None, open_files=None
    )
    selected = select(SandboxConfig(backend=BackendChoice.FLOOR, limits=limits), env=ENV)
    for name in ("memory", "cpu", "wall", "max_processes", "open_files"):
        assert name not in selected.enforced
        assert "unset" in selected.mechanisms[name]


def test_commands_flag_is_recorded() -> None:
    gates_only = select(SandboxConfig(backend=BackendChoice.OFF, commands=False), env=ENV)
    assert "only verification gates" in gates_only.mechanisms["commands"]


def test_env_allow_names_appear_in_the_report() -> None:
    selected = select(SandboxConfig(backend=BackendChoice.OFF, env_allow=("NPM_TOKEN",)), env=ENV)
    assert "NPM_TOKEN" in selected.mechanisms["env"]


def test_selected_survives_a_json_round_trip() -> None:
    selected = select(SandboxConfig(backend=BackendChoice.FLOOR), env=ENV)
    data = json.loads(json.dumps(selected.to_json()))
    assert data["backend"] == "floor"
    assert data["enforced"] == list(selected.enforced)


def test_launcher_builds_the_backend_that_was_selected(tmp_path: Path) -> None:
    spec = SandboxSpec(workdir=tmp_path)
    floor = launcher(select(SandboxConfig(backend=BackendChoice.FLOOR), env=ENV), spec)
    off = launcher(select(SandboxConfig(backend=BackendChoice.OFF), env=ENV), spec)
    assert isinstance(floor, FloorLauncher)
    assert isinstance(off, OffLauncher)
    assert floor.selected.backend is Backend.FLOOR
