"""Real parts for the shell tests: the real OffLauncher (or the native one), a gate over a
real `Policy` that records what it was asked, a tiny sqlite store carrying
`HandleQueries`, and a `ToolContext` factory."""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness_core.clock import SystemClock
from harness_core.errors import StateError
from harness_core.policy import Act, Decision, Policy, Tier, Verdict
from harness_core.sandbox import (
    Backend,
    BackendChoice,
    ProcessLauncher,
    SandboxConfig,
    SandboxSpec,
    Selected,
    launcher,
    select,
)
from harness_core.store._handles import HANDLE_SCHEMA_SQL, HandleQueries
from harness_core.tools import RunServices, ToolContext
from harness_core.workspace import Workspace

PY = sys.executable
ENV = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "LANG": "C"}


def off_launcher(root: Path) -> ProcessLauncher:
    """The no-sandbox launcher (own session per process, descendant-tracking kill)."""
    return launcher(Selected(Backend.OFF, BackendChoice.OFF),
                    SandboxSpec(workdir=root, env=ENV, env_allow=("LC_ALL",)))


def native_launcher(root: Path) -> ProcessLauncher | None:
    """The native backend when this host has one (PID namespace), else None."""
    selected = select(SandboxConfig(backend=BackendChoice.AUTO), env=ENV)
    if selected.backend is not Backend.LINUX:
        return None
    return launcher(selected, SandboxSpec(workdir=root, env=ENV, env_allow=("LC_ALL",)))


class RecordingGate:
    """The gate over a real policy; an `ask` is a deny here (there is no approver)."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy.from_lists(tier=Tier.FULL)
        self.checked: list[Act] = []
        self.refused: list[tuple[Act, Decision]] = []

    def check(self, act: Act) -> Decision:
        self.checked.append(act)
        decision = self.policy.check(act)
        if decision.verdict is Verdict.ASK:
            decision = Decision(Verdict.DENY, decision.reason + " (no approver)", decision.rule,
                                decision.layer)
        if not decision.is_allowed:
            self.refused.append((act, decision))
        return decision

    def refuse(self, act: Act, reason: str, *, rule: str = "workspace-boundary") -> Decision:
        decision = Decision(Verdict.DENY, reason, rule, "builtin")
        self.refused.append((act, decision))
        return decision


class HandleTestStore(HandleQueries):
    """A real sqlite file with just the handle tables (the lead's Store inherits the same)."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        with self._tx() as conn:
            for statement in HANDLE_SCHEMA_SQL.split(";"):
                if statement.strip():
                    conn.execute(statement)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            yield self._conn
        except sqlite3.Error as exc:
            self._conn.execute("ROLLBACK")
            raise StateError(str(exc)) from exc
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()


def context(root: Path, gate: RecordingGate | None = None, *, launch: ProcessLauncher | None = None,
            handles: Any = None, output_cap: int = 32_000,
            exec_timeout: float = 30.0) -> ToolContext:
    return ToolContext(
        workspace=Workspace(root),
        gate=gate or RecordingGate(),
        launcher=launch or off_launcher(root),
        clock=SystemClock(),
        run_id="run-test",
        output_cap=output_cap,
        exec_timeout=exec_timeout,
        services=RunServices(handles=handles),
    )


def wait_for(predicate: Any, timeout: float = 10.0) -> bool:
    """Poll `predicate` until true or the deadline passes (no fixed sleeps)."""
    import time

    deadline = time.monotonic() + timeout
    delay = 0.002
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return bool(predicate())


def pid_alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
