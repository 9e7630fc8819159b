"""Net rules that name a port, held by the egress proxy under the native sandbox (#9).

Two loopback HTTP servers on 127.0.0.1, on two different ports (loopback only, never
the internet). A `127.0.0.1:<port>` rule admits the first through the proxy and the
other is refused with 403 (and recorded, with rule and layer, when a run drives it).
Negative controls: the same rule without a port admits both (so the port is what
refuses), and under `backend = "off"` the refused server answers (nothing confines).

The probe drops `NO_PROXY` before dialling: the forwarder lists the sandbox's own
loopback there, and these servers sit on the host's 127.0.0.1, reachable only through
the proxy.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_core import Store
from harness_core.sandbox import Selected
from tests.conftest import run_io
from tests.integration.cli.helpers import replay_line

PROBE = """
import json, os, sys, urllib.error, urllib.request
for name in ("NO_PROXY", "no_proxy"):
    os.environ.pop(name, None)
out = {"proxy": os.environ.get("HTTP_PROXY", "")}
for url in sys.argv[1:]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            out[url] = [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        out[url] = [e.code, e.read().decode()]
    except OSError as e:
        out[url] = ["error", str(e)]
print(json.dumps(out))
"""


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = f"hello-from-{self.server.server_address[1]}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def ports() -> Iterator[tuple[int, int]]:
    running = []
    for _ in range(2):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        running.append(server)
    try:
        yield running[0].server_address[1], running[1].server_address[1]
    finally:
        for server in running:
            server.shutdown()
            server.server_close()


def write(ws: Path, backend: str, rules: str) -> None:
    ws.mkdir(exist_ok=True)
    (ws / "probe.py").write_text(PROBE)
    (ws / "io.toml").write_text(
        '[policy]\ntier = "workspace-write"\napproval = "deny"\nallow_exec = ["*"]\n'
        f"{rules}\n\n[sandbox]\nbackend = \"{backend}\"\nnetwork = true\n"
    )


def urls(ports: tuple[int, int]) -> list[str]:
    return [f"http://127.0.0.1:{port}/" for port in ports]


def probe(ws: Path, ports: tuple[int, int]) -> tuple[list[Any], list[Any], dict[str, Any]]:
    argv = ["python3", "probe.py", *urls(ports)]
    result = run_io(["tool", "exec", "--json", "--args", json.dumps({"argv": argv})],
                    cwd=ws, env={"IO_STORE": str(ws.parent / "state.db")})
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)["data"]
    out = json.loads(data["stdout"])
    first, second = urls(ports)
    return out[first], out[second], out


def test_a_port_rule_admits_that_port_only(
    tmp_path: Path, native: Selected, ports: tuple[int, int]
) -> None:
    ws = tmp_path / "ws"
    allowed, other = ports
    write(ws, "native", f'allow_net = ["127.0.0.1:{allowed}"]')
    first, second, out = probe(ws, ports)
    assert out["proxy"].startswith("http://127.0.0.1:")
    assert first == [200, f"hello-from-{allowed}"]
    assert second[0] == 403
    assert f"127.0.0.1:{other} refused" in second[1]

    # Negative control 1: the same host without a port admits both ports.
    write(ws, "native", 'allow_net = ["127.0.0.1"]')
    first, second, _ = probe(ws, ports)
    assert (first[0], second) == (200, [200, f"hello-from-{other}"])

    # Negative control 2: with nothing confining, the refused server answers.
    write(ws, "off", f'allow_net = ["127.0.0.1:{allowed}"]')
    first, second, out = probe(ws, ports)
    assert out["proxy"] == ""
    assert second == [200, f"hello-from-{other}"]


def test_a_port_deny_beats_a_host_allow_and_is_recorded(
    tmp_path: Path, native: Selected, ports: tuple[int, int]
) -> None:
    ws = tmp_path / "ws"
    allowed, denied = ports
    write(ws, "native", f'allow_net = ["127.0.0.1"]\ndeny_net = ["127.0.0.1:{denied}"]')
    (ws / "io.toml").write_text((ws / "io.toml").read_text()
                                + '\n[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n')
    argv = ["python3", "probe.py", *urls(ports)]
    (ws / "replay.jsonl").write_text("\n".join([
        replay_line("probe", ("exec", {"argv": argv})),
        replay_line("done"),
    ]) + "\n")
    store = tmp_path / "state.db"
    result = run_io(["run", "probe two ports", "--json"], cwd=ws, env={"IO_STORE": str(store)})
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = json.loads(result.stdout.splitlines()[0])["run_id"]
    with Store(store) as opened:
        events = opened.policy_events(run_id)
        observations = "".join(e.observation or "" for e in opened.ledger(run_id))
    refusals = [(e.target, e.verdict, e.rule, e.layer, e.decided_by)
                for e in events if e.act == "net"]
    assert refusals == [
        (f"net 127.0.0.1:{denied}", "deny", f"127.0.0.1:{denied}", "project", "egress proxy")
    ]
    assert f"hello-from-{allowed}" in observations
    assert f"hello-from-{denied}" not in observations
