"""What the system scope's `[requirements]` adds to loading io.toml (issue 39).

In this process, `load` of one workspace (a project io.toml with a provider, a budget, a
policy, two MCP servers and an agent definition) is timed with no system scope, with a
system scope of one key and no requirements (what reading a system file costs), and with
a system scope holding every requirement (the MCP allowlist and the version range
included: `packaging` is imported by the first load, before timing). The two alternate
call by call so both see the same load; each figure is the median and the best of N
calls. The plain validator path is timed (what `io run` uses), and nothing is
written.

Target: the requirements add at most 0.5 ms to a load with a system file.

Run: python bench/config_floor.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

PROJECT = """
[provider]
kind = "anthropic"
model = "claude-sonnet"
base_url = "https://llm.corp.example/v1"
[policy]
tier = "workspace-write"
approval = "ask"
allow_exec = ["pytest*"]
[sandbox]
backend = "native"
[budget]
max_steps = 30
max_tokens = 500000
[[mcp]]
name = "tracker"
command = "/usr/bin/true"
optional = true
[[mcp]]
name = "docs"
url = "https://mcp.corp.example/docs"
optional = true
[agents.reviewer]
model = "claude-haiku"
"""

FLOOR = """
[requirements]
io_version = ">=0.1,<1"
max_tier = "workspace-write"
approval = ["ask", "deny"]
sandbox_backends = ["native"]
sandbox_fallback = false
max_steps = 50
max_tokens = 1000000
wall_seconds = 3600
max_depth = 2
max_children = 8
parallel = 2
providers = ["anthropic"]
models = ["claude-*"]
base_url_hosts = ["*.corp.example"]
[[requirements.mcp]]
name = "tracker"
command = "/usr/bin/true"
[[requirements.mcp]]
name = "docs"
url = "https://mcp.corp.example/docs"
"""


def main() -> None:
    """Print the median and best load time without and with the floor."""
    from harness_core import load_config

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        (ws / "io.toml").write_text(PROJECT)
        (root / "floor.toml").write_text(FLOOR)
        (root / "plain.toml").write_text("[budget]\nmax_steps = 50\n")
        base = {"HOME": str(root / "home"), "IO_STORE": str(root / "state.db")}
        envs = {"no system file": {**base, "IO_SYSTEM_CONFIG": str(root / "none.toml")},
                "system, no floor": {**base, "IO_SYSTEM_CONFIG": str(root / "plain.toml")},
                "every requirement": {**base, "IO_SYSTEM_CONFIG": str(root / "floor.toml")}}
        times: dict[str, list[float]] = {name: [] for name in envs}
        for env in envs.values():
            load_config(ws, env=env)  # imports, `packaging` included
        for _ in range(args.repeat):
            for name, env in envs.items():
                start = time.perf_counter()
                load_config(ws, env=env)
                times[name].append(time.perf_counter() - start)
    for name, found in times.items():
        print(f"load, {name:<18} median {statistics.median(found) * 1e3:6.3f} ms"
              f"   best {min(found) * 1e3:6.3f} ms   ({args.repeat} calls)")
    added = (statistics.median(times["every requirement"])
             - statistics.median(times["system, no floor"]))
    print(f"the requirements add {added * 1e3:.3f} ms to a load with a system file"
          " (median; target <= 0.5 ms)")


if __name__ == "__main__":
    main()
