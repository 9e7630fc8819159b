"""Fixtures for the sandbox integration tests: the native backend or an honest skip.

A test that needs the native Linux backend (bwrap with working user namespaces) or
a writable pids cgroup and cannot have it here is skipped with the reason, unless
IO_REQUIRE_SANDBOX=1 is set (CI sets it): then it fails, so CI never passes
without the sandbox having been exercised.

`Sandbox.run` writes a Python payload into the workdir and runs it with this
interpreter through `run_command`, under the backend a test asks for; the
negative controls run the same payload under `backend = "off"`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import pytest

from harness_core.errors import SandboxUnavailable
from harness_core.sandbox import (
    BackendChoice,
    CommandResult,
    LaunchRequest,
    SandboxConfig,
    SandboxLimits,
    SandboxSpec,
    Selected,
    launcher,
    run_command,
    select,
)

REQUIRE_SANDBOX = os.environ.get("IO_REQUIRE_SANDBOX") == "1"
HOST_PATH = os.environ.get("PATH", os.defpath)


def unavailable(reason: str) -> NoReturn:
    """Skip with `reason`, or fail when IO_REQUIRE_SANDBOX=1."""
    if REQUIRE_SANDBOX:
        pytest.fail(f"IO_REQUIRE_SANDBOX=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def native() -> Selected:
    """The native Linux backend, selected for real on this host."""
    if not sys.platform.startswith("linux"):
        unavailable(f"the native Linux backend cannot run on {sys.platform}")
    try:
        return select(SandboxConfig(backend=BackendChoice.NATIVE), env={"PATH": HOST_PATH})
    except SandboxUnavailable as exc:
        unavailable(f"native sandbox unavailable: {exc}")


@pytest.fixture(scope="session")
def native_with_pids(native: Selected) -> Selected:
    """The native backend, and it bounds max_processes with a pids cgroup."""
    if "max_processes" not in native.enforced:
        unavailable(f"max_processes is not enforced here: {native.mechanisms['max_processes']}")
    return native


@pytest.fixture(scope="session")
def floor_with_pids() -> Selected:
    """The floor backend on a host where it gets a pids cgroup."""
    selected = select(SandboxConfig(backend=BackendChoice.FLOOR), env={"PATH": HOST_PATH})
    if "max_processes" not in selected.enforced:
        unavailable(f"no pids cgroup for the floor: {selected.mechanisms['max_processes']}")
    return selected


@pytest.fixture(scope="session")
def off() -> Selected:
    """No confinement: the negative control."""
    return select(SandboxConfig(backend=BackendChoice.OFF), env={"PATH": HOST_PATH})


@pytest.fixture(scope="session", autouse=True)
def interpreter_is_visible_inside() -> None:
    if Path(sys.executable).resolve().is_relative_to("/tmp"):
        pytest.skip("this interpreter lives under /tmp, which the sandbox replaces")


@dataclass
class Sandbox:
    """A workdir plus a way to run Python payloads in it under a chosen backend."""

    workdir: Path
    env: dict[str, str] = field(default_factory=lambda: {"PATH": HOST_PATH})

    def run(
        self,
        selected: Selected,
        code: str,
        *,
        args: Sequence[str] = (),
        limits: SandboxLimits | None = None,
        network: bool = False,
        read_only: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        env_allow: Sequence[str] = (),
        timeout: float = 30,
        stdin: object = None,
    ) -> CommandResult:
        script = self.workdir / "payload.py"
        script.write_text(code)
        spec = SandboxSpec(
            workdir=self.workdir,
            read_only=tuple(read_only),
            network=network,
            limits=limits or SandboxLimits(),
            env={**self.env, **(env or {})},
            env_allow=tuple(env_allow),
        )
        request = LaunchRequest(argv=[sys.executable, str(script), *args], cwd=self.workdir)
        if stdin is not None:
            request = LaunchRequest(argv=request.argv, cwd=self.workdir, stdin=stdin)  # type: ignore[arg-type]
        return run_command(launcher(selected, spec), request, timeout=timeout)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    workdir = tmp_path / "ws"
    workdir.mkdir()
    return Sandbox(workdir)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A host directory outside the workdir and outside /tmp (which the sandbox replaces)."""
    path = Path(tempfile.mkdtemp(prefix="io-sandbox-outside-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
