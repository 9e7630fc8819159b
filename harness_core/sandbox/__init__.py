"""Confinement: select a backend at run time and launch processes through it.

The data types load with the package; `select`, `launcher` and `run_command` (and the
backends behind them) load on first use, so reading a config stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

_LAZY = {
    "Admission": "harness_core.sandbox._proxy",
    "BackendReport": "harness_core.sandbox._doctor",
    "Diagnosis": "harness_core.sandbox._doctor",
    "DoctorCheck": "harness_core.sandbox._doctor",
    "Health": "harness_core.sandbox._doctor",
    "HostProbe": "harness_core.sandbox._doctor",
    "diagnose": "harness_core.sandbox._doctor",
    "EgressProxy": "harness_core.sandbox._proxy",
    "Swept": "harness_core.sandbox._sweep",
    "activate_ledger": "harness_core.sandbox._ledger",
    "exit_fd": "harness_core.sandbox._remote",
    "peek_status": "harness_core.sandbox._remote",
    "sweep": "harness_core.sandbox._sweep",
    "CommandResult": "harness_core.sandbox._run",
    "run_command": "harness_core.sandbox._run",
    "launcher": "harness_core.sandbox._select",
    "select": "harness_core.sandbox._select",
}

__all__ = [
    "Admission",
    "Backend",
    "BackendChoice",
    "BackendReport",
    "CommandResult",
    "Diagnosis",
    "DoctorCheck",
    "EgressProxy",
    "Health",
    "HostProbe",
    "LaunchRequest",
    "ProcessLauncher",
    "SandboxConfig",
    "SandboxLimits",
    "SandboxSpec",
    "Selected",
    "Swept",
    "activate_ledger",
    "diagnose",
    "exit_fd",
    "launcher",
    "peek_status",
    "run_command",
    "select",
    "sweep",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness_core.sandbox' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:
    from harness_core.sandbox._doctor import (
        BackendReport,
        Diagnosis,
        DoctorCheck,
        Health,
        HostProbe,
        diagnose,
    )
    from harness_core.sandbox._ledger import activate_ledger
    from harness_core.sandbox._proxy import Admission, EgressProxy
    from harness_core.sandbox._remote import exit_fd, peek_status
    from harness_core.sandbox._run import CommandResult, run_command
    from harness_core.sandbox._select import launcher, select
    from harness_core.sandbox._sweep import Swept, sweep
