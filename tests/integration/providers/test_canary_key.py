"""A canary API key never lands anywhere `io` writes.

One store, one TMPDIR, four kinds of run through the real CLI: a success (whose agent
also runs `env`), a 401 that echoes the key back, a crash (`kill -9` of `io run` while
the fake holds a response) resumed to the end, and a 500 retried. Then the raw bytes of
every file under the test's directories (the database and its -wal/-shm, snapshots of
them taken right after the crash, temp files) and every stdout/stderr (JSON events
included, and `io trace/runs/spend/config show`) are searched for the key, its first 12
characters and its base64 forms: there must be no hit.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.fakes.vendor_server import (
    EchoKey401,
    Fail,
    FakeCall,
    FakeVendorServer,
    Hang,
    RecordedRequest,
    Reply,
    Turn,
    openai_error,
    tool_results_in,
)
from tests.integration.providers.conftest import (
    CANARY_KEY,
    Cli,
    echo_call,
    events,
    finished,
    provider_toml,
    write_workspace,
)

StartFake = Callable[..., FakeVendorServer]


def _forms(key: str) -> dict[str, bytes]:
    raw = key.encode()
    forms = {"key": raw, "first 12": raw[:12]}
    for name, enc in (("base64", base64.b64encode(raw)),
                      ("urlsafe base64", base64.urlsafe_b64encode(raw))):
        forms[name] = enc
        forms[name + " unpadded"] = enc.rstrip(b"=")
    return forms


def _hits(blobs: dict[str, bytes]) -> list[str]:
    found = []
    for where, blob in blobs.items():
        for form, needle in _forms(CANARY_KEY).items():
            if needle in blob:
                found.append(f"{form} in {where}")
    return found


def _files_under(*roots: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*"))
            if p.is_file()}


class Script:
    """Stateless steps (read from the request), plus one-off failures by request number."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.once: dict[int, Reply] = {}
        self.count = 0
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        with self.lock:
            number = self.count
            self.count += 1
        if number in self.once:
            return self.once.pop(number)
        step = tool_results_in(request)
        if step == 0:
            call = FakeCall("call_env", "exec", json.dumps({"argv": ["env"]}))
            return Turn(text="looking at the env", tool_calls=(call,), pieces=3)
        if step < self.steps:
            return Turn(text=f"step {step}", tool_calls=(echo_call(step),), pieces=3)
        return Turn(text="done", pieces=2)


def _wait_for(condition: Callable[[], bool], what: str, deadline: float = 20.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_canary_key_reaches_no_file_event_or_output(
    cli: Cli, fakes: StartFake, tmp_path: Path, isolated_env: Path
) -> None:
    script = Script(steps=3)
    fake = fakes("openai", responder=script)
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake, max_retries=1))
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()

    # 1. Success; the agent's `env` must not show the key either (the env is scrubbed).
    ok = cli("run", "inspect things", "-w", str(ws), "--json")
    assert ok.returncode == 0, ok.stderr
    env_output = [e["output"] for e in events(ok.stdout) if e["kind"] == "tool_result"][0]
    assert "exit status 0" in env_output

    # 2. A 401 whose body echoes the key's head and its base64.
    script.once[script.count] = EchoKey401()
    denied = cli("run", "again", "-w", str(ws), "--json")
    assert denied.returncode == 1
    assert "401" in finished(denied.stdout)["reason"]

    # 3. A crash: kill -9 while the fake holds the second step's response, then resume.
    hang = Hang()
    script.once[script.count + 1] = hang
    before = len(fake.requests)
    proc = cli.popen("run", "crash me", "-w", str(ws), "--json")
    try:
        _wait_for(lambda: len(fake.requests) >= before + 2, "the held request")
        os.kill(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    hang.release.set()
    cli.outputs += [out, err]
    assert proc.returncode == -signal.SIGKILL
    for suffix in ("", "-wal", "-shm"):
        path = Path(str(cli.store) + suffix)
        if path.exists():
            shutil.copy(path, snapshots / ("crash" + (suffix or ".db")))
    assert (snapshots / "crash-wal").exists(), "no WAL left by the crash to inspect"
    crashed = b"".join(p.read_bytes() for p in snapshots.iterdir())
    assert b"crash me" in crashed and b"looking at the env" in crashed  # real content
    run_id = events(out)[0]["run_id"]
    resumed = cli("resume", run_id, "-w", str(ws), "--json")
    assert resumed.returncode == 0, resumed.stderr

    # 4. A 500 retried inside a run.
    script.once[script.count] = Fail(500, openai_error(f"boom for {CANARY_KEY[:20]}"),
                                     {"retry-after": "0"})
    retried = cli("run", "retry me", "-w", str(ws), "--json")
    assert retried.returncode == 0, retried.stderr

    # Everything the operator can ask for afterwards.
    for args in (["trace", run_id, "--json"], ["trace", run_id], ["runs", "--json"],
                 ["spend", "--json"], ["config", "show"], ["config", "show", "--json"]):
        shown = cli(*args, "-w", str(ws))
        assert shown.returncode == 0, (args, shown.stderr)
    assert fake.violations == []
    assert any(r.headers.get("authorization") == f"Bearer {CANARY_KEY}" for r in fake.requests)

    blobs = _files_under(tmp_path, isolated_env)
    assert any(name.endswith("io.db") for name in blobs)
    blobs.update({f"output #{i}": text.encode() for i, text in enumerate(cli.outputs)})
    assert _hits(blobs) == []
