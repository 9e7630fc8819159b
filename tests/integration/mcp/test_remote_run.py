"""`io run` with a remote MCP server that asks for OAuth (client credentials, the secret
from the environment): the call goes through, the trace records it like a built-in,
and no token or secret reaches the store, the trace, the output or the workspace; the
tokens live only in io's state directory, in a file of mode 0600."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line
from tests.integration.mcp.http_fixture import HttpServer

SECRET = "ci-secret-7f3a9b2c41"


@pytest.fixture
def protected() -> Iterator[HttpServer]:
    server = HttpServer(oauth=True, client=("ci-client", SECRET))
    yield server
    server.close()


def _toml(server: HttpServer) -> str:
    return (f'[policy]\nallow_net = ["127.0.0.1:{server.port}"]\nallow_mcp = ["remote/*"]\n'
            f'[[mcp]]\nname = "remote"\nurl = "{server.url}"\n'
            '[mcp.oauth]\ngrant = "client_credentials"\nclient_id = "ci-client"\n'
            'client_secret = "${env:MCP_CI_SECRET}"\n')


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_a_token_never_reaches_the_store_the_trace_or_the_workspace(
        protected: HttpServer, tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("remote?", ("mcp__remote__echo", {"text": "hello"})),
        replay_line("done"),
    ])
    # The net rule needs a sandbox that confines commands' network (the native one).
    (ws / "io.toml").write_text('[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n'
                                '[sandbox]\nbackend = "native"\n' + _toml(protected))
    env = {"MCP_CI_SECRET": SECRET}
    result = run_io(["run", "goal", "-w", str(ws), "--json"], env=env)
    assert result.returncode == 0, result.stderr
    events = json_lines(result.stdout)
    (call,) = [e for e in events if e["kind"] == "tool_call"]
    (done,) = [e for e in events if e["kind"] == "tool_result"]
    assert call["name"] == "mcp__remote__echo" and done["output"] == "echo: hello"
    run_id = events[0]["run_id"]
    trace = run_io(["trace", run_id, "-w", str(ws)], env=env)
    assert trace.returncode == 0, trace.stderr
    assert "mcp__remote__echo" in trace.stdout

    auth = protected.auth
    assert auth is not None and auth.grants == ["client_credentials"]
    secrets = [SECRET, *auth.valid, *auth.refresh]
    state = Path(os.environ["HOME"]) / "state" / "io"
    (token_file,) = _files(state / "mcp-auth")
    kept = token_file.read_bytes()
    assert any(token.encode() in kept for token in auth.valid)  # the grep finds tokens
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    stores = [p for p in _files(state) if p.name.startswith("state.db")]
    assert stores
    for path in [*stores, *_files(ws)]:
        raw = path.read_bytes()
        assert not [s for s in secrets if s.encode() in raw], path
    for text in (result.stdout, result.stderr, trace.stdout, trace.stderr):
        assert not [s for s in secrets if s in text]


def test_a_host_refused_by_the_address_its_name_resolves_to_fails_the_run(
        tmp_path: Path) -> None:
    server = HttpServer()
    try:
        ws = make_workspace(tmp_path / "w", [replay_line("done")])
        (ws / "io.toml").write_text(
            '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n'
            '[sandbox]\nbackend = "native"\n'
            f'[policy]\nallow_net = ["localhost:{server.port}"]\ndeny_net = ["127.0.0.1"]\n'
            f'[[mcp]]\nname = "remote"\nurl = "http://localhost:{server.port}/mcp"\n')
        result = run_io(["run", "goal", "-w", str(ws), "--json"])
        assert result.returncode == 1, result.stderr
        assert "MCP server 'remote' not started" in result.stderr
        assert "resolves to" in result.stderr  # the egress check by address, as the proxy's
        assert server.seen == []
        refusals = [e for e in json_lines(result.stdout) if e["kind"] == "refusal"]
        assert refusals and refusals[0]["decided_by"] == "MCP client"
    finally:
        server.close()
