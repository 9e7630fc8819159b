"""`[sandbox] network = true`: the egress proxy is the only way out, and the policy decides.

Two loopback HTTP servers on 127.0.0.2 and 127.0.0.3 (loopback only, never the
internet): the policy allows the first and not the second. Inside the native sandbox
the allowed one answers through the proxy, the other gets 403 (recorded with its rule
and layer when a run drives it), and a direct socket to either fails. Under
`backend = "off"` (the negative control) the direct socket connects.
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_core import Store
from harness_core.sandbox import Selected
from harness_core.sandbox._proxy import parse_request
from tests.conftest import run_io
from tests.integration.cli.helpers import replay_line

PROBE = """
import json, os, socket, sys, urllib.request
out = {"proxy": os.environ.get("HTTPS_PROXY", "")}
for name, url in (("allowed", sys.argv[1]), ("refused", sys.argv[2])):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            out[name] = [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        out[name] = [e.code, e.read().decode()]
    except OSError as e:
        out[name] = ["error", str(e)]
host, port = sys.argv[3].rsplit(":", 1)
try:
    socket.create_connection((host, int(port)), timeout=5).close()
    out["direct"] = "connected"
except OSError as e:
    out["direct"] = "failed"
if len(sys.argv) > 4 and os.environ.get("HTTPS_PROXY"):
    proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
    s = socket.create_connection((proxy[0].split("//")[1], int(proxy[1])), timeout=5)
    s.sendall(("CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n" % (sys.argv[4], sys.argv[4])).encode())
    reply = s.recv(4096)
    s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
    body = b""
    while chunk := s.recv(4096):
        body += chunk
    out["connect"] = [reply.split(b"\\r\\n")[0].decode(), b"hello-from" in body]
print(json.dumps(out))
"""


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = f"hello-from-{self.server.server_address[0]}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[dict[str, str]]:
    started: dict[str, str] = {}
    running = []
    for name, address in (("allowed", "127.0.0.2"), ("refused", "127.0.0.3")):
        server = http.server.ThreadingHTTPServer((address, 0), _Hello)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        running.append(server)
        started[name] = f"{address}:{server.server_address[1]}"
    try:
        yield started
    finally:
        for server in running:
            server.shutdown()
            server.server_close()


def write(ws: Path, backend: str) -> None:
    ws.mkdir(exist_ok=True)
    (ws / "probe.py").write_text(PROBE)
    (ws / "io.toml").write_text(
        '[policy]\ntier = "workspace-write"\napproval = "deny"\nallow_exec = ["*"]\n'
        'allow_net = ["127.0.0.2"]\n\n'
        f'[sandbox]\nbackend = "{backend}"\nnetwork = true\n'
    )


def probe_argv(servers: dict[str, str]) -> list[str]:
    return ["python3", "probe.py", f"http://{servers['allowed']}/",
            f"http://{servers['refused']}/", servers["allowed"], servers["allowed"]]


def run_probe(ws: Path, servers: dict[str, str]) -> dict[str, Any]:
    result = run_io(["tool", "exec", "--json", "--args",
                     json.dumps({"argv": probe_argv(servers)})],
                    cwd=ws, env={"IO_STORE": str(ws.parent / "state.db")})
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)["data"]
    probe: dict[str, Any] = json.loads(data["stdout"])
    probe["sandbox"] = data["sandbox"]
    return probe


def test_only_allowed_hosts_through_the_proxy(
    tmp_path: Path, native: Selected, servers: dict[str, str]
) -> None:
    ws = tmp_path / "ws"
    write(ws, "native")
    inside = run_probe(ws, servers)
    assert inside["proxy"].startswith("http://127.0.0.1:")
    assert inside["allowed"] == [200, "hello-from-127.0.0.2"]
    assert inside["refused"][0] == 403
    assert "refused" in inside["refused"][1]
    assert inside["direct"] == "failed"
    assert inside["connect"] == ["HTTP/1.1 200 Connection established", True]
    assert "net" in inside["sandbox"]["enforced"]

    write(ws, "off")
    control = run_probe(ws, servers)
    assert control["direct"] == "connected"


def test_a_run_records_the_refusal_with_rule_and_layer(
    tmp_path: Path, native: Selected, servers: dict[str, str]
) -> None:
    ws = tmp_path / "ws"
    write(ws, "native")
    # The deny names the refused server's port: every local address is one host (#22),
    # so a port-less deny of 127.0.0.3 would also cover 127.0.0.2.
    denied = servers["refused"]
    (ws / "io.toml").write_text((ws / "io.toml").read_text().replace(
        'allow_net = ["127.0.0.2"]', f'allow_net = ["127.0.0.2"]\ndeny_net = ["{denied}"]'
    ) + '\n[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n')
    (ws / "replay.jsonl").write_text("\n".join([
        replay_line("probe", ("exec", {"argv": probe_argv(servers)})),
        replay_line("done"),
    ]) + "\n")
    store = tmp_path / "state.db"
    result = run_io(["run", "probe the network", "--json"], cwd=ws,
                    env={"IO_STORE": str(store)})
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = json.loads(result.stdout.splitlines()[0])["run_id"]
    with Store(store) as opened:
        events = opened.policy_events(run_id)
    refusals = [e for e in events if e.act == "net"]
    assert [(e.target, e.verdict, e.rule, e.layer, e.decided_by) for e in refusals] == [
        (f"net {servers['refused']}", "deny", denied, "project", "egress proxy")
    ]


def test_the_floor_refuses_a_policy_with_net_rules(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "floor")
    result = run_io(["tool", "exec", "--args", '{"argv": ["true"]}'], cwd=ws,
                    env={"IO_STORE": str(tmp_path / "state.db")})
    assert result.returncode != 0
    assert "floor sandbox cannot confine the network" in result.stderr
    assert "Traceback" not in result.stderr


def test_parse_request_rewrites_plain_http_to_one_host() -> None:
    host, port, first = parse_request(
        b"GET http://Example.org:8080/a?b=1 HTTP/1.1\r\nHost: example.org\r\n"
        b"Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\n\r\n")
    assert (host, port) == ("example.org", 8080)
    assert first == (b"GET /a?b=1 HTTP/1.1\r\nHost: example.org\r\nConnection: close\r\n\r\n")
    assert parse_request(b"CONNECT pypi.org:443 HTTP/1.1\r\n\r\n") == ("pypi.org", 443, b"")
    for bad in (b"GET /relative HTTP/1.1\r\n\r\n", b"CONNECT pypi.org HTTP/1.1\r\n\r\n",
                b"nonsense\r\n\r\n"):
        with pytest.raises(ValueError):
            parse_request(bad)


def test_without_the_proxy_a_sandbox_with_network_has_no_route(
    tmp_path: Path, native: Selected
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        from .conftest import Sandbox

        box = Sandbox(tmp_path)
        code = ("import socket,sys\ntry:\n    socket.create_connection(('127.0.0.1', "
                f"{port}), timeout=3)\n    print('connected')\nexcept OSError:\n"
                "    print('failed')\n")
        assert box.run(native, code, network=True).stdout == b"failed\n"
