"""A provider key held by `io` never reaches a command, except with `backend = "off"`.

The payload looks everywhere a command could find it: its own environment and the
environment of every process it can see (`/proc/*/environ`, which covers `io` and
every ancestor).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness_core.errors import SandboxUnavailable
from harness_core.sandbox import Backend, BackendChoice, SandboxConfig, Selected, select
from tests.conftest import run_io

from .conftest import HOST_PATH

CANARY = "sk-canary-0d5e9c1b7a"
HUNT = (
    "import glob, os\n"
    f"needle = {CANARY!r}.encode()\n"
    "found = [k for k, v in os.environ.items() if needle.decode() in v]\n"
    "for path in glob.glob('/proc/[0-9]*/environ'):\n"
    "    try:\n"
    "        if needle in open(path, 'rb').read():\n"
    "            found.append(path)\n"
    "    except OSError:\n"
    "        pass\n"
    "print('FOUND' if found else 'CLEAN', found)\n"
)


def hunt(ws: Path, backend: str) -> dict[str, object]:
    (ws / "io.toml").write_text(f'[policy]\ntier = "full"\n[sandbox]\nbackend = "{backend}"\n')
    result = run_io(
        ["tool", "exec", "--json", "--args", json.dumps({"argv": ["python3", "-c", HUNT]})],
        cwd=ws, env={"ANTHROPIC_API_KEY": CANARY, "IO_STORE": str(ws / "state.db")},
    )
    assert result.returncode == 0, result.stderr
    out: dict[str, object] = json.loads(result.stdout)
    return out


def test_native_keeps_the_key_from_commands(tmp_path: Path, native: Selected) -> None:
    inside = hunt(tmp_path, "native")
    assert "CLEAN" in str(inside["output"])
    control = hunt(tmp_path, "off")
    assert "FOUND" in str(control["output"])
    assert "/environ" in str(control["output"])


def test_the_floor_keeps_the_key_or_says_it_cannot(tmp_path: Path) -> None:
    result = hunt(tmp_path, "floor")
    sandbox = result["data"]["sandbox"]  # type: ignore[index]
    if os.geteuid() == 0:
        assert "secrets" not in sandbox["enforced"]
        assert sandbox["mechanisms"]["secrets"].startswith("none: running as root")
        assert "FOUND" in str(result["output"])  # what the report admits
    else:
        assert "secrets" in sandbox["enforced"]
        assert "CLEAN" in str(result["output"])


def test_auto_never_falls_to_a_floor_that_leaks_the_key() -> None:
    env = {"PATH": HOST_PATH, "ANTHROPIC_API_KEY": CANARY}
    config = SandboxConfig(backend=BackendChoice.AUTO)
    no_bwrap = lambda name: None  # noqa: E731 - the host without bubblewrap
    quiet = select(config, env=env, which=no_bwrap, platform="linux")
    assert quiet.backend is Backend.FLOOR and quiet.degraded
    if os.geteuid() == 0:
        with pytest.raises(SandboxUnavailable) as caught:
            select(config, env=env, which=no_bwrap, platform="linux", secrets=(CANARY,))
        assert "bubblewrap" in (caught.value.hint or "")
        assert 'backend = "floor"' in (caught.value.hint or "")
        assert CANARY not in str(caught.value)
        explicit = select(SandboxConfig(backend=BackendChoice.FLOOR), env=env,
                          secrets=(CANARY,))
        assert "secrets" not in explicit.enforced
    else:
        chosen = select(config, env=env, which=no_bwrap, platform="linux", secrets=(CANARY,))
        assert "secrets" in chosen.enforced


def test_the_trace_shows_whether_the_floor_kept_the_key(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "replay.jsonl").write_text(json.dumps(
        {"text": "done", "tool_calls": [], "usage": {"prompt_tokens": 1,
                                                     "completion_tokens": 1}}) + "\n")
    (ws / "io.toml").write_text('[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n'
                                '[sandbox]\nbackend = "floor"\n')
    env = {"ANTHROPIC_API_KEY": CANARY, "IO_STORE": str(tmp_path / "state.db")}
    started = run_io(["run", "g", "--json"], cwd=ws, env=env)
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout.splitlines()[0])["run_id"]
    trace = run_io(["trace", run_id], cwd=ws, env=env).stdout
    assert CANARY not in trace
    if os.geteuid() == 0:
        assert "not enforced: secrets: running as root" in trace
    else:
        assert "not enforced: secrets" not in trace
