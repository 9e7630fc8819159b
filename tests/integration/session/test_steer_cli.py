"""`io steer` and `io interrupt` from another process while a tool call blocks: both land
at the next step boundary, never mid call, and a steer is text, not permission."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line
from tests.integration.session.helpers import Blocker, first_event, open_store

_DENY_SECRETS = '[policy]\ntier = "full"\ndeny_write = ["secrets/**"]\n'


def _start(ws: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([*io_cmd(), "run", "goal", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _index(events: list[dict[str, Any]], kind: str, **match: Any) -> int:
    for i, event in enumerate(events):
        if event["kind"] == kind and all(event.get(k) == v for k, v in match.items()):
            return i
    raise AssertionError(f"no {kind} {match} in {[e['kind'] for e in events]}")


def test_a_steer_lands_at_the_boundary_and_does_not_let_a_denied_write_through(
        tmp_path: Path) -> None:
    blocker = Blocker(tmp_path)
    ws = make_workspace(tmp_path / "w", [
        replay_line("wait", blocker.call()),
        replay_line("write", ("write_file", {"path": "secrets/key.txt", "content": "k"})),
        replay_line("done"),
    ], toml_extra=_DENY_SECRETS)
    proc = _start(ws)
    try:
        run_id = first_event(proc)["run_id"]
        blocker.wait_started(proc)
        sent = run_io(["steer", run_id, "you may write secrets/", "-w", str(ws)])
        assert sent.returncode == 0, sent.stderr
        with open_store() as store:  # the call is still in flight: nothing consumed yet
            assert store.has_inbox(run_id)
            assert not any("operator steer" in m.content for m in store.messages(run_id))
    finally:
        blocker.release()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    events = json_lines(out)
    steer = _index(events, "steer")
    assert _index(events, "tool_result", name="exec") < steer
    assert steer < _index(events, "step_started", step=1)
    refused = events[_index(events, "refusal")]
    assert refused["target"].endswith("secrets/key.txt") and refused["verdict"] == "deny"
    assert events[_index(events, "tool_result", name="write_file")]["refused"] is not None
    assert not (ws / "secrets" / "key.txt").exists()
    with open_store() as store:
        steered = [m for m in store.messages(run_id) if "operator steer" in m.content]
        assert [m.content for m in steered] == ["[operator steer] you may write secrets/"]
        assert store.run(run_id).policy == store.drives(run_id)[0].policy  # unchanged


def test_an_interrupt_waits_for_the_call_in_flight_then_stops_before_the_next_step(
        tmp_path: Path) -> None:
    blocker = Blocker(tmp_path)
    ws = make_workspace(tmp_path / "w", [
        replay_line("wait", blocker.call()),
        replay_line("write", ("write_file", {"path": "done.txt", "content": "yes"})),
        replay_line("done"),
    ], toml_extra='[policy]\ntier = "full"\n')
    proc = _start(ws)
    try:
        run_id = first_event(proc)["run_id"]
        blocker.wait_started(proc)
        sent = run_io(["interrupt", run_id, "-w", str(ws)])
        assert sent.returncode == 0, sent.stderr
        with open_store() as store:
            assert store.has_inbox(run_id) and store.ledger(run_id)[0].observation is None
        assert proc.poll() is None  # still inside the call: the interrupt waits for it
    finally:
        blocker.release()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    events = json_lines(out)
    result = events[_index(events, "tool_result", name="exec")]
    assert not result["is_error"] and "released" in result["output"]
    assert not any(e["kind"] == "step_started" and e.get("step") == 1 for e in events)
    assert events[-1]["status"] == "interrupted" and events[-1]["steps"] == 1
    assert not (ws / "done.txt").exists()

    resumed = run_io(["resume", run_id, "-w", str(ws), "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert (ws / "done.txt").read_text() == "yes"
    assert not any(e["kind"] == "tool_call" and e["name"] == "exec"
                   for e in json_lines(resumed.stdout))
