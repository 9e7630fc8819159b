"""Confinement: select a backend at run time and launch processes through it."""

from harness_core.sandbox._base import (
    Backend,
    BackendChoice,
    LaunchRequest,
    ProcessLauncher,
    SandboxConfig,
    SandboxLimits,
    SandboxSpec,
    Selected,
)
from harness_core.sandbox._run import CommandResult, run_command
from harness_core.sandbox._select import launcher, select

__all__ = [
    "Backend",
    "BackendChoice",
    "CommandResult",
    "LaunchRequest",
    "ProcessLauncher",
    "SandboxConfig",
    "SandboxLimits",
    "SandboxSpec",
    "Selected",
    "launcher",
    "run_command",
    "select",
]
