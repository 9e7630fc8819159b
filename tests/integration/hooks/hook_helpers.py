"""Hooks as real programs: small Python scripts written by the test, run by a real run."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness_core import Policy, RunSpec
from harness_core.hooks import HookConfig, HookEvent
from tests.integration.agents.tree_helpers import spec as tree_spec

PRELUDE = """\
import json, os, sys, time
call = json.load(sys.stdin)
def count(path):
    with open(path, "a") as fh:
        fh.write(call["event"] + " " + str(call.get("tool")) + "\\n")
"""


def script(tmp: Path, name: str, body: str) -> Path:
    """A hook program: the prelude (stdin read into `call`, `count(path)`) and `body`."""
    path = tmp / f"{name}.py"
    path.write_text(PRELUDE + textwrap.dedent(body))
    return path


def hook(event: str, program: Path, *, name: str = "h", scope: str = "user",
         matcher: str = "*", timeout_s: float = 30.0) -> HookConfig:
    return HookConfig(event=HookEvent(event), command=(sys.executable, str(program)), name=name,
                      scope=scope, matcher=matcher, timeout_s=timeout_s)


def spec(ws: Path, *hooks: HookConfig, policy: Policy | None = None, **kw: Any) -> RunSpec:
    base = tree_spec(ws, policy=policy or Policy.from_lists(
        tier="workspace-write", allow_exec=["touch *", "sh *", "echo *"]))
    return replace(base, hooks=hooks, **kw)


def counted(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []
