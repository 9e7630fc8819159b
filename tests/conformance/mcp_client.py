"""io's MCP client under the official conformance suite (@modelcontextprotocol/conformance).

The runner starts this program once per scenario, names the scenario in
`MCP_CONFORMANCE_SCENARIO` (and, for some auth scenarios, passes credentials as JSON in
`MCP_CONFORMANCE_CONTEXT`), and gives the scenario server's URL as the last argument.
Everything MCP goes through io's own client: an `McpServerConfig` for a remote server,
`McpSession.start` (the policy check of the host, streamable HTTP, OAuth) and
`McpSession.call_tool`. The only stand-in is the person: where io shows the URL to
authorize at, a thread plays the browser, fetches it, and follows the authorization
server's redirect to io's own listener on 127.0.0.1.

Exit 0 when the scenario's steps ran; 1 with one line on stderr when io failed.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from harness_core.events import Event  # noqa: E402
from harness_core.mcp import McpServerConfig, McpSession  # noqa: E402
from harness_core.mcp._config import McpElicitation, McpGrant, McpOAuth  # noqa: E402
from harness_core.policy import Policy, Tier  # noqa: E402
from harness_core.run import Gate  # noqa: E402
from harness_core.workspace import Workspace  # noqa: E402

CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client metadata document URL the suite's CIMD scenario expects as client id."""

CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


def browse(url: str) -> None:
    """Play the person's browser: open `url`, follow the redirect back to io."""
    with httpx.Client(timeout=20) as client:
        answer = client.get(url, follow_redirects=False)
        location = answer.headers.get("location")
        if answer.status_code not in (301, 302, 303, 307, 308) or not location:
            raise RuntimeError(f"the authorization server answered {answer.status_code}")
        client.get(location)


def notice(text: str) -> None:
    """io's notice names the URL to authorize at; open it as a browser would."""
    url = next(word for word in text.split() if word.startswith("http"))
    threading.Thread(target=browse, args=(url,), daemon=True).start()


def oauth_for(scenario: str, context: dict[str, Any]) -> McpOAuth | None:
    if not scenario.startswith("auth/"):
        return None
    client_id, secret = context.get("client_id"), context.get("client_secret")
    if scenario.startswith("auth/client-credentials"):
        return McpOAuth(grant=McpGrant.CLIENT_CREDENTIALS, client_id=client_id,
                        client_secret=secret, private_key=context.get("private_key_pem"),
                        signing_algorithm=context.get("signing_algorithm", "ES256"))
    return McpOAuth(client_id=client_id, client_secret=secret, client_metadata_url=CIMD_URL,
                    authorize_timeout=20)


def run(scenario: str, url: str) -> None:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    config = McpServerConfig("conformance", url=url, oauth=oauth_for(scenario, context),
                             elicitation=McpElicitation.DEFAULTS)
    events: list[Event] = []
    gate = Gate(Policy.from_lists(tier=Tier.FULL), store=None, run_id="", approver=None,
                emit=events.append)
    with McpSession.start([config], gate=gate, env={}, workspace=Workspace(ROOT),
                          timeout=20, notice=notice) as session:
        tool, arguments = CALLS.get(scenario, ("", {}))
        if not tool and scenario.startswith("auth/"):
            listed = session.listed_tools("conformance")
            tool = listed[0].name if listed else ""
        if tool:
            result = session.call_tool("conformance", tool, arguments, timeout=20)
            print(f"{tool}: {result.text}", file=sys.stderr)


def main() -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    try:
        run(scenario, sys.argv[-1])
    except Exception as exc:  # the one place a failure becomes an exit status
        print(f"io MCP client: {scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
