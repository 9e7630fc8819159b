"""A run of `kind = "openai-responses"` killed with kill -9 and resumed sends the very
requests an uninterrupted run sends: the reasoning items (with their
``encrypted_content``) go back with the calls they led to, and with
`previous_response_id` on the chain goes on from the last recorded response.

Two runs of the same script through the real CLI, each against its own loopback
Responses fake: one uninterrupted, one killed while the fake holds the third request and
then resumed with `io resume` (a new process: nothing of the first one's memory is left).
The golden comparison is `request_differences` between the uninterrupted run's requests
and the resumed run's. Neither the reasoning summaries nor the encrypted blobs may show
in `io trace` (text, JSON or HTML).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.responses_wire import encrypted, request_differences
from tests.fakes.vendor_server import FakeCall, FakeVendorServer, Hang, Reply, Turn
from tests.integration.providers.conftest import Cli, events, provider_toml, write_workspace

StartFake = Callable[..., FakeVendorServer]

STEPS = 4
"""Three steps that call `echo` after reasoning, then a reasoned answer."""
HELD = 2
"""The request the killed run is held (and killed) in: the third step's."""


def _reasoning(step: int) -> str:
    return f"ponder-step-{step}-quietly"


def _turns() -> list[Turn]:
    turns = [Turn(text=f"step {step}", reasoning=_reasoning(step), pieces=3,
                  tool_calls=(FakeCall(f"call_{step}", "exec",
                                       json.dumps({"argv": ["echo", f"hi-{step}"]})),))
             for step in range(STEPS - 1)]
    return [*turns, Turn(text="all done", reasoning=_reasoning(STEPS - 1), pieces=2)]


def _wait_for(condition: Callable[[], bool], what: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)


def _workspace(root: Path, fake: FakeVendorServer, chained: bool) -> Path:
    provider = provider_toml("openai-responses", fake)
    if chained:
        provider += "previous_response_id = true\n"
    return write_workspace(root, provider)


@pytest.mark.parametrize("chained", [False, True], ids=["stateless", "previous_response_id"])
def test_a_resumed_run_sends_what_an_uninterrupted_run_sends(
    cli: Cli, fakes: StartFake, tmp_path: Path, isolated_env: Path, chained: bool
) -> None:
    # The uninterrupted run: the golden requests.
    golden = fakes("openai-responses")
    golden.push(*_turns())
    ws = _workspace(tmp_path / "ws", golden, chained)
    whole = cli("run", "think it through", "-w", str(ws), "--json")
    assert whole.returncode == 0, whole.stderr
    assert len(golden.requests) == STEPS and golden.violations == []

    # The same script, killed with -9 while the fake holds the third step's request.
    fake = fakes("openai-responses")
    turns: list[Reply] = list(_turns())
    hang = Hang()
    fake.push(*turns[:HELD], hang, *turns[HELD:])
    ws = _workspace(tmp_path / "ws", fake, chained)  # the same workspace, a new base_url
    proc = cli.popen("run", "think it through", "-w", str(ws), "--json")
    try:
        _wait_for(lambda: len(fake.requests) > HELD, "the held request")
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    hang.release.set()
    assert proc.returncode == -signal.SIGKILL
    run_id = events(out)[0]["run_id"]
    with sqlite3.connect(cli.store) as db:  # the held step was never recorded
        assert db.execute("SELECT COUNT(*) FROM steps WHERE run_id = ?",
                          (run_id,)).fetchone() == (HELD,)

    resumed = cli("resume", run_id, "-w", str(ws), "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert fake.violations == []

    sent = [r.body for r in fake.requests]
    assert len(sent) == STEPS + 1  # the held request, sent again after the resume
    # The cache key is the run's own: the same across the resume, another run's differs.
    assert {body.pop("prompt_cache_key") for body in sent} == {run_id}
    golden_bodies = [dict(r.body) for r in golden.requests]
    assert {body.pop("prompt_cache_key") for body in golden_bodies} != {run_id}
    for step in range(STEPS):
        after_resume = sent[step + 1] if step >= HELD else sent[step]
        assert request_differences(golden_bodies[step], after_resume) == [], step
    resumed_request = sent[HELD + 1]
    kinds = [item.get("type") for item in resumed_request["input"]]
    if chained:
        assert resumed_request["previous_response_id"] == f"resp_{HELD:04d}"
        assert kinds == ["function_call_output"]
    else:
        assert resumed_request["store"] is False
        assert resumed_request["include"] == ["reasoning.encrypted_content"]
        carried = [i for i in resumed_request["input"] if i.get("type") == "reasoning"]
        assert [i["encrypted_content"] for i in carried] == [
            encrypted(_reasoning(step)) for step in range(HELD)]

    # Opaque: neither the summaries nor the blobs show in any trace format.
    html = tmp_path / "trace.html"
    shown = [cli("trace", run_id, "-w", str(ws)), cli("trace", run_id, "-w", str(ws), "--json"),
             cli("trace", run_id, "-w", str(ws), "--html", "-o", str(html))]
    assert all(r.returncode == 0 for r in shown), [r.stderr for r in shown]
    texts = [r.stdout + r.stderr for r in shown] + [html.read_text()]
    for step in range(STEPS):
        for secret in (_reasoning(step), encrypted(_reasoning(step))):
            assert not any(secret in text for text in texts), secret
