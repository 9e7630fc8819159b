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
