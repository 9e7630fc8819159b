"""A small stdio MCP server for the tests, built on the installed `mcp` SDK.

Its tools exercise what `mcp-server-time` cannot: an error result, a non-text block,
a dotted tool name, one holding '/' (only with FIXTURE_SLASH_TOOLS=1), the environment
it was given, a crash, a slow answer and a grandchild that outlives its parent's
process group. Run as a script.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar


def _sdk() -> tuple[Any, Any, Any]:
    """The high-level server class, `Image` and `ToolError` (mcp 2.x names, then 1.x)."""
    for base, cls in (("mcp.server.mcpserver", "MCPServer"), ("mcp.server.fastmcp", "FastMCP")):
        try:
            module = importlib.import_module(base)
            errors = importlib.import_module(f"{base}.exceptions")
        except ImportError:
            continue
        return getattr(module, cls), module.Image, errors.ToolError
    raise SystemExit("no high-level MCP server class in the installed SDK")


Server, Image, ToolError = _sdk()
server = Server("fixture")
_F = TypeVar("_F", bound=Callable[..., object])


def tool(**options: Any) -> Callable[[_F], _F]:
    """`server.tool(...)`, typed."""
    register: Callable[[_F], _F] = server.tool(**options)
    return register


# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)


@tool(description="The value of an environment variable, or <unset>.")
def env_value(name: str) -> str:
    return os.environ.get(name, "<unset>")


@tool(description="Always fails.")
def fail() -> str:
    raise ToolError("this tool always fails")


@tool(description="A caption and a picture.", structured_output=False)
def picture() -> list[object]:
    return ["a caption", Image(data=PNG, format="png")]


@tool(name="dotted.name", description="A tool whose name has a dot.")
def dotted() -> str:
    return "dotted ok"


@tool(description="Start a detached grandchild that sleeps; return its pid.")
def spawn_sleeper() -> str:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return str(child.pid)


@tool(description="Exit the server at once.")
def crash() -> str:
    sys.stderr.write("fixture server crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@tool(description="Answer after `seconds`.")
def slow(seconds: float) -> str:
    time.sleep(seconds)
    return "slow done"


if os.environ.get("FIXTURE_SLASH_TOOLS") == "1":
    @tool(name="a/delete_x", description="A tool whose name holds a slash.")
    def slashed() -> str:
        return "slashed ran"


if __name__ == "__main__":
    server.run()
