"""Derive the sandbox for a run from its policy and `[sandbox]` table.

`policy` decides and `sandbox` confines; this module is where the run joins them: it
turns the protected paths into read-only binds and picks the launcher for commands and
the one for verification gates.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from harness_core.policy import PROTECTED_WRITE_PATTERNS
from harness_core.run._spec import RunSpec
from harness_core.sandbox import (
    BackendChoice,
    ProcessLauncher,
    SandboxConfig,
    SandboxSpec,
    Selected,
    launcher,
    select,
)

__all__ = ["Launchers", "build_launchers"]


@dataclass(frozen=True)
class Launchers:
    """The launchers of one run.

    Attributes:
        selected: The sandbox selected for gates (and commands, when `commands` holds).
        commands: Runs `exec`, `shell` and handles.
        gates: Runs verification gates (always sandboxed as selected).
        commands_sandboxed: Whether commands go through the sandbox.
    """

    selected: Selected
    commands: ProcessLauncher
    gates: ProcessLauncher
    commands_sandboxed: bool


def _read_only_paths(spec: RunSpec) -> tuple[Path, ...]:
    root = spec.workspace.root
    paths: list[Path] = []
    for pattern in PROTECTED_WRITE_PATTERNS:
        literal = pattern.removesuffix("/**")
        paths.append(root / literal)
    for extra in spec.protected_paths:
        path = Path(extra)
        paths.append(path if path.is_absolute() else root / path)
    return tuple(paths)


def build_launchers(spec: RunSpec) -> Launchers:
    """Select the sandbox and build the launchers for `spec`.

    Raises:
        SandboxUnavailable: `backend = "native"` and the native backend cannot run here.
    """
    config = spec.sandbox
    selected = select(config, env=spec.env)
    sandbox_spec = SandboxSpec(
        workdir=spec.workspace.root,
        read_only=_read_only_paths(spec),
        network=config.network,
        limits=config.limits,
        env=spec.env,
        env_allow=config.env_allow,
    )
    gates = launcher(selected, sandbox_spec)
    if config.commands:
        commands = gates
        if spec.command_read_only:  # the gates' inputs: read-only for the agent, not the gate
            extra = tuple(spec.workspace.root / p for p in spec.command_read_only)
            commands = launcher(selected, replace(
                sandbox_spec, read_only=sandbox_spec.read_only + extra))
        return Launchers(selected, commands, gates, True)
    off = select(SandboxConfig(backend=BackendChoice.OFF), env=spec.env)
    return Launchers(selected, launcher(off, sandbox_spec), gates, False)
