"""The `mcp` SDK (a core dependency) is loaded only when a server is about to start,
and its absence (a broken install) is a clear `McpUnavailable`, never a traceback."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PRELUDE = textwrap.dedent("""
    import sys
    from harness_core.mcp import McpServerConfig, McpSession
    from harness_core.policy import Policy, Tier
    from harness_core.run import Gate
    from harness_core.workspace import Workspace
    gate = Gate(Policy.from_lists(tier=Tier.FULL, deny_exec=["refused*"]), store=None,
                run_id="", approver=None, emit=lambda e: None)
    ws = Workspace(".")
""")


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_importing_the_package_and_an_empty_or_refused_start_load_no_sdk() -> None:
    out = _run("""
        McpSession.start([], gate=gate, env={}, workspace=ws).close()
        s = McpSession.start([McpServerConfig("r", "refused-server", optional=True)], gate=gate, env={},
                             workspace=ws)
        s.close()
        print(len(s.refusals), "mcp" in sys.modules, "pydantic" in sys.modules)
    """)
    assert out == "1 False False"


def test_a_missing_sdk_is_a_clear_error_naming_the_fix() -> None:
    out = _run("""
        sys.modules["mcp"] = None  # makes `import mcp` fail as if it were not installed
        from harness_core.errors import McpUnavailable
        try:
            McpSession.start([McpServerConfig("t", sys.executable, ("-c", "pass"))],
                             gate=gate, env={}, workspace=ws)
        except McpUnavailable as exc:
            print("McpUnavailable:", exc, exc.hint)
    """)
    assert out.startswith("McpUnavailable:")
    assert "pip install --force-reinstall io-harness" in out
