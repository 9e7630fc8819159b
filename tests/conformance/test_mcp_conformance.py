"""The official MCP conformance suite (@modelcontextprotocol/conformance, pinned) against
io's MCP client (`tests/conformance/mcp_client.py`).

Every client scenario of the `core` suite must pass: the four protocol scenarios
(initialize, tools_call, elicitation defaults, SSE retry) and the `auth` suite's
fourteen OAuth scenarios of the 2025-11-25 specification. The auth suite runs in
parallel, beside the protocol scenarios one at a time; sse-retry, which measures the
client's reconnection delay (a machine loaded with a dozen parallel clients distorts
it), runs alone at the end.

The suite needs Node 22. When the `node` on PATH is older (or missing), the test
installs Node and the suite with npm into a cache folder (`IO_CONFORMANCE_CACHE`,
default ``~/.cache/io-conformance`` of the user running the tests, not the private HOME
each test gets) once, and reuses it. Without npm it is skipped, and on CI
(`IO_REQUIRE_SANDBOX=1`, set by `.ci/run`, which installs npm) it fails: the suite is
never silently left out of a CI run.
"""

from __future__ import annotations

import json
import os
import platform
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLIENT = HERE / "mcp_client.py"
SUITE = "@modelcontextprotocol/conformance@0.1.16"
PROTOCOL_SCENARIOS = ("initialize", "tools_call", "elicitation-sep1034-client-defaults",
                      "sse-retry")
"""The `core` suite's scenarios outside `auth/`, checked against `conformance list`."""
TIMEOUT_MS = "120000"
"""Per scenario: a client's Python start alone takes seconds on a loaded CI machine."""

_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
"""The timestamp the runner appends to each result folder."""

pytestmark = pytest.mark.timeout(900)  # above the 300 s default: the suite itself


def _node_major(node: str) -> int:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return 0
    return int(out.stdout.strip().lstrip("v").split(".")[0] or 0) if out.returncode == 0 else 0


def _node_package() -> str:
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system(), "linux")
    arch = {"x86_64": "x64", "AMD64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine(), "x64")
    return f"node-{system}-{arch}"


def _toolchain() -> tuple[str, str]:
    """(node, the suite's entry point), installing both into the cache when needed."""
    # The user's own home: every test runs with HOME pointed at a private temp folder.
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    cache = Path(os.environ.get("IO_CONFORMANCE_CACHE") or home / ".cache" / "io-conformance")
    entry = cache / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    local_node = cache / "node_modules" / _node_package() / "bin" / "node"
    node = shutil.which("node") or ""
    if _node_major(node) < 22:
        node = str(local_node)
    if not entry.exists() or _node_major(node) < 22:
        npm = shutil.which("npm")
        if npm is None:
            missing = "the MCP conformance suite needs Node 22 and npm to install it"
            if os.environ.get("IO_REQUIRE_SANDBOX") == "1":
                pytest.fail(f"{missing}; .ci/run installs npm", pytrace=False)
            pytest.skip(missing)
        cache.mkdir(parents=True, exist_ok=True)
        packages = [SUITE] + ([f"{_node_package()}@22"] if node == str(local_node) else [])
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(cache),
                        *packages], check=True, capture_output=True, timeout=600)
    return node, str(entry)


def _client(node: str, entry: str, out: Path, *selection: str) -> subprocess.Popen[str]:
    command = f"{sys.executable} {CLIENT}"
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "PATH": os.pathsep.join([str(Path(node).parent), os.environ.get("PATH", "")])}
    return subprocess.Popen([node, entry, "client", "--command", command, *selection,
                             "--timeout", TIMEOUT_MS, "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=ROOT)


def _finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    output, _ = process.communicate(timeout=800)
    return process.returncode, output


def _results(out: Path) -> dict[str, tuple[int, int]]:
    """Scenario → (checks passed, checks failed), from the runner's checks.json files."""
    found: dict[str, tuple[int, int]] = {}
    for checks in out.glob("**/checks.json"):
        # The runner names each folder `<scenario>-<ISO time with dashes>Z`; the time
        # itself may hold "-20" (07-20-56), so strip the whole stamp, anchored at the end.
        name = _STAMP.sub("", checks.parent.relative_to(out).as_posix())
        data = json.loads(checks.read_text())
        found[name] = (sum(c["status"] == "SUCCESS" for c in data),
                       sum(c["status"] == "FAILURE" for c in data))
    return found


def test_every_core_and_auth_scenario_passes(tmp_path: Path) -> None:
    node, entry = _toolchain()
    listed = subprocess.run([node, entry, "list"], capture_output=True, text=True,
                            timeout=120, check=True).stdout
    client_part = listed.split("Client scenarios", 1)[1]
    names = [line.strip()[2:].split(" [")[0] for line in client_part.splitlines()
             if line.strip().startswith("- ")]
    core = [n for n in names if not n.startswith("auth/") and "2025-11-25" in listed.split(
        f"- {n} [", 1)[1].split("]", 1)[0]]
    assert sorted(core) == sorted(PROTOCOL_SCENARIOS), "the pinned suite's core changed"

    # The auth suite (parallel) and the untimed protocol scenarios run side by side;
    # sse-retry, which times the client's reconnection, runs alone after them.
    auth = _client(node, entry, tmp_path / "auth", "--suite", "auth")
    try:
        for scenario in PROTOCOL_SCENARIOS:
            if scenario == "sse-retry":
                code, output = _finish(auth)
                results = _results(tmp_path / "auth")
                failed = {name: counts for name, counts in results.items() if counts[1]}
                assert code == 0 and not failed, f"{failed}\n{output[-4000:]}"
                assert len(results) >= 14
            code, output = _finish(_client(node, entry, tmp_path / "core", "--scenario",
                                           scenario))
            assert code == 0, f"{scenario} failed:\n{output[-4000:]}"
    finally:
        if auth.poll() is None:
            auth.kill()
            auth.communicate()
    passed = _results(tmp_path / "core")
    assert set(passed) == set(PROTOCOL_SCENARIOS)
    assert all(f == 0 and p > 0 for p, f in passed.values())
