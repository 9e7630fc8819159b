"""Shared pieces for the MCP tests: a real gate, real servers, process accounting."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness_core.clock import SystemClock
from harness_core.events import Event
from harness_core.mcp import McpServerConfig, McpSession
from harness_core.policy import Approver, Policy, Tier
from harness_core.run import Gate
from harness_core.sandbox import Backend, BackendChoice, SandboxSpec, Selected, launcher
from harness_core.tools import ToolContext
from harness_core.workspace import Workspace

HERE = Path(__file__).resolve().parent
FIXTURE_SERVER = HERE / "fixture_server.py"
BIN_DIR = Path(sys.executable).parent
ENV = {
    "PATH": os.pathsep.join([str(BIN_DIR), os.environ.get("PATH", os.defpath)]),
    "HOME": os.environ.get("HOME", "/"),
    "LANG": "C.UTF-8",
}


def time_server(*, optional: bool = False) -> McpServerConfig:
    """`mcp-server-time` by its console script name when this interpreter has one."""
    if (BIN_DIR / "mcp-server-time").exists():
        return McpServerConfig("time", "mcp-server-time", optional=optional)
    return McpServerConfig("time", sys.executable, ("-m", "mcp_server_time"),
                           optional=optional)


def fixture_server(name: str = "fx", **env: str) -> McpServerConfig:
    return McpServerConfig(name, sys.executable, (str(FIXTURE_SERVER),), env=env)


def make_gate(policy: Policy | None = None, *, approver: Approver | None = None,
              events: list[Event] | None = None) -> Gate:
    sink = events if events is not None else []
    return Gate(policy or Policy.from_lists(tier=Tier.FULL), store=None, run_id="",
                approver=approver, emit=sink.append)


def start(configs: list[McpServerConfig], root: Path, **kwargs: Any) -> McpSession:
    gate = kwargs.pop("gate", None) or make_gate()
    return McpSession.start(configs, gate=gate, env=kwargs.pop("env", ENV),
                            workspace=Workspace(root), **kwargs)


def tool_context(root: Path, *, exec_timeout: float = 30.0, output_cap: int = 32_000
                 ) -> ToolContext:
    spec = SandboxSpec(workdir=root, env={"PATH": ENV["PATH"]})
    return ToolContext(
        workspace=Workspace(root), gate=make_gate(),
        launcher=launcher(Selected(Backend.OFF, BackendChoice.OFF), spec),
        clock=SystemClock(), exec_timeout=exec_timeout, output_cap=output_cap,
    )


def live_descendants() -> set[int]:
    """Pids of this process's descendants that are still running (zombies excluded)."""
    alive: set[int] = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.add(proc.pid)
        except psutil.Error:
            continue
    return alive


def is_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_for(predicate: Callable[[], bool], timeout: float = 15.0) -> bool:
    """Poll `predicate` until it holds or the deadline passes (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    return predicate()


def loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "io-mcp"]


@pytest.fixture(scope="module")
def time_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    """One started `mcp-server-time`, shared by the read-only tests of a module."""
    session = start([time_server()], tmp_path_factory.mktemp("ws"))
    try:
        yield session
    finally:
        session.close()


@pytest.fixture(scope="module")
def fixture_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    """One started fixture server (with one variable of its own), shared by a module."""
    session = start([fixture_server(SERVER_ONLY="from-the-mcp-table")],
                    tmp_path_factory.mktemp("ws"),
                    env={**ENV, "ANTHROPIC_API_KEY": "sk-canary-must-not-leak"})
    try:
        yield session
    finally:
        session.close()
