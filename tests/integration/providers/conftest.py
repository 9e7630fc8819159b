"""Fixtures for driving the real `io` CLI against the loopback vendor fakes.

A workspace here is an io.toml pointing `[provider]` at a fake (`base_url`) with the key
substituted from ``CANARY_KEY``; commands run unsandboxed (`[sandbox] backend = "off"`)
and `exec` is allowed for ``echo`` and ``env`` only.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import io_cmd
from tests.fakes.vendor_server import (
    FakeCall,
    FakeVendorServer,
    RecordedRequest,
    Reply,
    Turn,
    Vendor,
    start_vendor_server,
    tool_results_in,
)

CANARY_KEY = "sk-canary-Wq4Xe7Ry1Tu3Io5Pa8Sd2Fg6Hj9Kl0Zx"
"""A key every fragment of which is distinctive, so a grep for it cannot hit by chance."""

SERVED = "served-model-7"
"""The model the fakes say served each call (never the one requested)."""

REQUESTED = "model-asked"


def usage_for(vendor: str, step: int) -> dict[str, Any]:
    """Vendor-shaped usage that differs per step, so a total can only match if summed."""
    if vendor == "anthropic":
        return {"input_tokens": 100 + step, "output_tokens": 7 + step,
                "cache_read_input_tokens": 20}
    prompt, completion = 100 + step, 7 + step
    if vendor == "openai-responses":
        return {"input_tokens": prompt, "output_tokens": completion,
                "total_tokens": prompt + completion,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0}}
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def echo_call(step: int) -> FakeCall:
    return FakeCall(f"call_{step}", "exec", json.dumps({"argv": ["echo", f"hi-{step}"]}))


def tool_conversation(vendor: str, steps: int) -> Callable[[RecordedRequest], Reply]:
    """`steps` steps of one `echo` call each (split over several deltas), then "done"."""

    def respond(request: RecordedRequest) -> Reply:
        step = tool_results_in(request)
        usage = usage_for(vendor, step)
        if step < steps:
            return Turn(text=f"step {step}", tool_calls=(echo_call(step),), model=SERVED,
                        usage=usage, pieces=4)
        return Turn(text="all done", model=SERVED, usage=usage, pieces=3)

    return respond


def provider_toml(vendor: str, fake: FakeVendorServer, *, table: str = "provider",
                  model: str = REQUESTED, max_retries: int = 2) -> str:
    return (f'[{table}]\nkind = "{vendor}"\nmodel = "{model}"\nbase_url = "{fake.base_url}"\n'
            f'api_key = "${{env:CANARY_KEY}}"\nmax_retries = {max_retries}\n'
            'timeout_seconds = 20\n')


def write_workspace(root: Path, provider: str, extra: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "io.toml").write_text(
        provider + '\n[policy]\nallow_exec = ["echo*", "env*"]\n\n'
        '[sandbox]\nbackend = "off"\n\n' + extra + "\n"
    )
    return root


@dataclass
class Cli:
    """Runs `io` with the canary key, a store and a TMPDIR inside the test's tmp dir."""

    store: Path
    tmpdir: Path
    outputs: list[str] = field(default_factory=lambda: [])
    extra_env: dict[str, str] = field(default_factory=lambda: {})

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(CANARY_KEY=CANARY_KEY, IO_STORE=str(self.store), TMPDIR=str(self.tmpdir),
                   NO_COLOR="1", **self.extra_env)
        return env

    def __call__(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([*io_cmd(), *args], env=self.env(), capture_output=True,
                                text=True, timeout=timeout)
        self.outputs += [result.stdout, result.stderr]
        return result

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*io_cmd(), *args], env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def json(self, *args: str) -> Any:
        result = self(*args, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    return Cli(store=tmp_path / "state" / "io.db", tmpdir=tmpdir)


@pytest.fixture
def fakes() -> Iterator[Callable[..., FakeVendorServer]]:
    """Starts fakes on demand and closes every one at the end of the test."""
    started: list[FakeVendorServer] = []

    def start(vendor: Vendor, **kwargs: Any) -> FakeVendorServer:
        fake = start_vendor_server(vendor, **kwargs)
        started.append(fake)
        return fake

    yield start
    for fake in started:
        fake.close()


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def finished(stdout: str) -> dict[str, Any]:
    found = [e for e in events(stdout) if e.get("kind") == "run_finished"]
    assert found, f"no run_finished event in {stdout!r}"
    return found[-1]
