"""The egress catalogue through the real proxy: 0 connections to a denied address (#22).

`deny_net = ["127.0.0.1:P", "localhost:P"]` under tier full. Each entry of the
catalogue (`egress_catalogue.py`: IPv4 in every inet_aton form, IPv6 forms, mapped and
embedded addresses, names from /etc/hosts, the host's own addresses, Host-header and
userinfo tricks) goes to the run's `EgressProxy` on its unix socket, decided by the
decider a run uses. The oracle counts accepts on port P at every local address: it must
stay at 0. The same spelling on an allowed port Q is counted (the negative control).
On main at 65e3665 nineteen of these spellings reached P.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_core.policy import Policy
from harness_core.run._egress import policy_decider
from harness_core.sandbox import Selected
from harness_core.sandbox._proxy import EgressProxy
from tests.conftest import run_io

from .egress_catalogue import MISMATCHES, Counter, Entry, catalogue


@pytest.fixture
def denied() -> Iterator[Counter]:
    counter = Counter()
    yield counter
    counter.close()


@pytest.fixture
def allowed() -> Iterator[Counter]:
    counter = Counter()
    yield counter
    counter.close()


@pytest.fixture
def proxy(denied: Counter) -> Iterator[EgressProxy]:
    policy = Policy.from_lists(
        tier="full", deny_net=[f"127.0.0.1:{denied.port}", f"localhost:{denied.port}"]
    )
    running = EgressProxy(policy_decider(policy))
    yield running
    running.close()


def ask(socket_path: Path, head: bytes) -> str:
    """Send one request head to the proxy; the first line of everything that came back."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(20)
        conn.connect(str(socket_path))
        conn.sendall(head)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    return reply.split(b"\r\n", 1)[0].decode("latin-1")


ENTRIES = catalogue()


def test_the_catalogue_has_at_least_forty_entries() -> None:
    assert len(ENTRIES) + len(MISMATCHES) >= 40


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_no_spelling_reaches_the_denied_port(
    entry: Entry, proxy: EgressProxy, denied: Counter, allowed: Counter
) -> None:
    status = ask(proxy.socket_path, entry.render(denied.port, allowed.port))
    assert status.startswith("HTTP/1.1 403"), status
    assert denied.count == 0

    control = ask(proxy.socket_path, entry.render(allowed.port, allowed.port))
    if entry.reaches:
        assert "200" in control, control
        assert allowed.count == 1
    assert denied.count == 0


@pytest.mark.parametrize("entry", MISMATCHES, ids=[e.name for e in MISMATCHES])
def test_the_request_line_alone_picks_the_target(
    entry: Entry, proxy: EgressProxy, denied: Counter, allowed: Counter
) -> None:
    ask(proxy.socket_path, entry.render(denied.port, allowed.port))
    assert denied.count == 0
    assert allowed.count == (1 if entry.reaches else 0)


def test_the_oracle_counts_a_connection_it_is_not_told_about(denied: Counter) -> None:
    for address in denied.addresses:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as conn:
            conn.connect((address, denied.port))
            assert conn.recv(64).startswith(b"HTTP/1.0 200")
    assert denied.count == len(denied.addresses)


PROBE = """
import json, os, socket, sys
proxy = os.environ["HTTP_PROXY"].rsplit("/", 1)[-1]
host, port = proxy.rsplit(":", 1)
out = []
for head in json.load(open(sys.argv[1])):
    conn = socket.create_connection((host, int(port)), timeout=20)
    conn.sendall(head.encode("latin-1"))
    reply = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        reply += chunk
    conn.close()
    out.append(reply.split(b"\\r\\n", 1)[0].decode("latin-1"))
print(json.dumps(out))
"""


def test_the_catalogue_from_inside_the_native_sandbox(
    tmp_path: Path, native: Selected, denied: Counter, allowed: Counter
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "probe.py").write_text(PROBE)
    heads = [e.render(denied.port, allowed.port).decode("latin-1") for e in ENTRIES]
    controls = [e.render(allowed.port, allowed.port).decode("latin-1")
                for e in ENTRIES if e.reaches]
    (ws / "heads.json").write_text(json.dumps(heads + controls))
    (ws / "io.toml").write_text(
        '[policy]\ntier = "full"\n'
        f'deny_net = ["127.0.0.1:{denied.port}", "localhost:{denied.port}"]\n\n'
        '[sandbox]\nbackend = "native"\nnetwork = true\n'
    )
    result = run_io(["tool", "exec", "--json", "--args",
                     json.dumps({"argv": ["python3", "probe.py", "heads.json"]})],
                    cwd=ws, env={"IO_STORE": str(tmp_path / "state.db")})
    assert result.returncode == 0, result.stdout + result.stderr
    statuses = json.loads(json.loads(result.stdout)["data"]["stdout"])
    assert denied.count == 0
    assert all(s.startswith("HTTP/1.1 403") for s in statuses[: len(heads)]), statuses
    # Negative control: the same spellings on the allowed port are real routes.
    assert allowed.count == len(controls)
