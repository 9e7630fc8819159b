"""A Ctrl-C that arrives while `io run` decides a host its remote MCP server's client
is about to dial ends the run as interrupted (exit 130), as a Ctrl-C anywhere else does;
it is not taken for a refusal of that host (#41 item 6).

The SIGINT is a real signal to the real `io run` process. Only its moment is arranged:
the test cannot see from outside when the run's thread is inside the decision, so a
small bootstrap wraps the run's dial decider to send the signal to its own process
just as the authorization server's host is decided (the one place `unittest.mock`-like
wrapping is used here, because the timing cannot be arranged otherwise)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line
from tests.integration.mcp.http_fixture import HttpServer

SECRET = "ci-secret-41"

_BOOT = """
import os, signal, sys
from harness_core.run import _mcp_net

real = _mcp_net.mcp_net_decider

def interrupting(gate):
    decide = real(gate)

    def net(host, port):
        if host == os.environ["INTERRUPT_AT"]:  # the authorization server: Ctrl-C now
            os.kill(os.getpid(), signal.SIGINT)
        return decide(host, port)

    return net

_mcp_net.mcp_net_decider = interrupting
sys.argv[0] = "io"
from io_harness_cli.main import console
console()
"""


@pytest.fixture
def protected() -> Iterator[HttpServer]:
    server = HttpServer(oauth=True, client=("ci-client", SECRET), auth_host="localhost")
    yield server
    server.close()


def _workspace(server: HttpServer, root: Path) -> Path:
    ws = make_workspace(root, [
        replay_line("remote?", ("mcp__remote__echo", {"text": "hello"})),
        replay_line("done"),
    ])
    (ws / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n'
        '[sandbox]\nbackend = "native"\n'
        f'[policy]\nallow_net = ["127.0.0.1:{server.port}", "localhost:{server.port}"]\n'
        'allow_mcp = ["remote/*"]\n'
        f'[[mcp]]\nname = "remote"\nurl = "{server.url}"\n'
        '[mcp.oauth]\ngrant = "client_credentials"\nclient_id = "ci-client"\n'
        'client_secret = "${env:MCP_CI_SECRET}"\n')
    return ws


def test_ctrl_c_while_a_dial_is_decided_exits_130_and_resume_continues(
        protected: HttpServer, tmp_path: Path) -> None:
    ws = _workspace(protected, tmp_path / "w")
    env = {"MCP_CI_SECRET": SECRET}
    proc = subprocess.run(
        [sys.executable, "-c", _BOOT, "run", "goal", "-w", str(ws), "--json"],
        env={**os.environ, **env, "INTERRUPT_AT": "localhost"}, capture_output=True,
        text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr
    events = json_lines(proc.stdout)
    assert events[-1]["status"] == "interrupted" and events[-1]["exit_code"] == 130
    assert not [e for e in events if e["kind"] == "refusal"]  # no refusal was recorded
    assert protected.auth is not None and protected.auth.grants == []

    resumed = run_io(["resume", str(events[-1]["run_id"]), "-w", str(ws), "--json"], env=env)
    assert resumed.returncode == 0, resumed.stderr
    results = [e for e in json_lines(resumed.stdout) if e["kind"] == "tool_result"]
    assert results and results[0]["output"] == "echo: hello"
    assert protected.auth.grants == ["client_credentials"]
