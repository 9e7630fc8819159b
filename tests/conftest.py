"""Shared fixtures: an isolated environment for every test (no real user config, no real
store), and helpers to run the real `io` command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                 ) -> Iterator[Path]:
    """Point every scope and the store at a private temp dir for this test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("IO_SYSTEM_CONFIG", str(home / "system" / "io.toml"))
    monkeypatch.setenv("IO_STORE", str(home / "state" / "io" / "state.db"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        monkeypatch.delenv(name)  # the operator's telemetry settings must not export test runs
    yield home


def io_cmd() -> list[str]:
    """The `io` console script of this interpreter (falls back to `python -m`)."""
    return [sys.executable, "-m", "io_harness_cli"]


def run_io(args: Sequence[str], *, cwd: Path | None = None, input: str | None = None,
           env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `io ARGS` to completion and capture its output."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([*io_cmd(), *args], cwd=cwd, input=input, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
