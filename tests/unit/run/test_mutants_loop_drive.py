"""The run loop's drive pinned to exact values (mutation testing's survivors in
`run/_loop.py`): what a drive hands its tools (the approver, the output cap, the command
timeout, process handles and their end with the run, the context ceiling, images read
again on resume) and how a drive ends on Ctrl-C or on an unexpected error. Real runs
over a real SQLite store; commands run for real (no sandbox backend)."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    CompletionRequest,
    CompletionResponse,
    Event,
    EventKind,
    Policy,
    Runner,
    RunStatus,
    StateError,
    Store,
    ToolCall,
    Usage,
)
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import Approves as _Approves
from tests.unit.run.loop_support import call as _call
from tests.unit.run.loop_support import line as _line
from tests.unit.run.loop_support import scripted as _scripted
from tests.unit.run.loop_support import workspace as _ws
from tests.unit.session.support import Events, spec_for


def test_the_runners_approver_decides_what_the_policy_asks(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("w", _call("write_file", path="a.txt", content="1")), _line("done")]
    approver = _Approves()
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=events, approver=approver).start(
            spec_for(ws, "go", policy=Policy.from_lists(tier="read-only")))
        assert (outcome.status, outcome.steps) == (RunStatus.FINISHED, 2)
        assert [(p.step_index, p.verdict, p.reason, p.decided_by)
                for p in store.policy_events(outcome.run_id)] == [
            (0, "allow", "approved by approver", "approver")]
    assert approver.asked == ["write a.txt"]
    assert (ws / "a.txt").read_text() == "1"
    (approval,) = [e for e in events.seen if e.kind is EventKind.APPROVAL]
    assert (approval.run_id, approval.data["decided_by"], approval.data["verdict"]) == (
        outcome.run_id, "approver", "allow")


def test_a_refusal_is_recorded_for_the_run_and_announced(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("w", _call("write_file", path="no.txt", content="1")), _line("done")]
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=events).start(
            spec_for(ws, "go", policy=Policy.from_lists(tier="full", deny_write=["no.txt"])))
        assert [(p.step_index, p.act, p.target, p.verdict, p.decided_by)
                for p in store.policy_events(outcome.run_id)] == [
            (0, "write", "write no.txt", "deny", "policy")]
    (refusal,) = [e for e in events.seen if e.kind is EventKind.REFUSAL]
    assert (refusal.run_id, refusal.data["target"]) == (outcome.run_id, "write no.txt")


def test_commands_get_the_specs_output_cap_timeout_and_handles(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("x", _call("exec", argv=["seq", "1", "200"]),
                   _call("exec", argv=["sleep", "5"]), _call("shell_start", line="sleep 30"),
                   _call("shell", line="echo hi")),
             _line("done")]
    spec = spec_for(ws, "go", policy=Policy.from_lists(tier="full"), output_cap=100,
                    exec_timeout=0.5)
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).start(spec)
        assert outcome.status is RunStatus.FINISHED
        cut, slow, started, said = (e.observation or "" for e in store.ledger(outcome.run_id))
        assert said.startswith("exit status 0") and "hi" in said
        assert cut.endswith("20\n[output truncated: 642 more bytes not shown]")
        assert slow == "timed out after 0.5s; the process tree was killed"
        assert started.startswith("started handle h1 (pids ")
        (handle,) = store.handles(outcome.run_id)
        # recorded for this run, on the run's clock, and ended with the run
        assert (handle.handle_id, handle.line, handle.started_at) == (
            "h1", "sleep 30", "2026-01-01T00:00:00.000000+00:00")
        assert handle.ended_at is not None and handle.end_reason != "orphaned"


class _Recording:
    """A provider that answers from `lines` by step and keeps each request."""

    name = "recording"

    def __init__(self, lines: list[tuple[str, list[ToolCall]]]) -> None:
        self.lines = lines
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        self.requests.append(request)
        text, calls = self.lines[step]
        return CompletionResponse(text=text, tool_calls=tuple(calls),
                                  usage=Usage(10, 2, 12), model="m")

    def close(self) -> None:
        return None


def test_a_drive_keeps_its_capture_directory_only_while_it_runs(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("w", _call("write_file", path="a.txt", content="1")), _line("done")]
    seen: list[list[str]] = []

    def look(event: Event) -> None:
        if event.kind is EventKind.STEP_STARTED:
            seen.append(sorted(p.name for p in Path(tempfile.gettempdir()).glob(
                f"io-{event.run_id}-*")))

    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         on_event=look).start(spec_for(ws, "go"))
    assert len(seen) == 2 and len(seen[0]) == 1 and seen[1] == seen[0]
    assert list(Path(tempfile.gettempdir()).glob(f"io-{outcome.run_id}-*")) == []


class _Closable:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_extras_named_like_the_drives_own_services_close_with_them(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    lines = [_line("x", _call("shell_start", line="sleep 30")), _line("done")]
    mine = {"handles": _Closable(), "mcp": _Closable()}
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock(),
                         extras=lambda run_id, ctx: dict(mine)).start(
            spec_for(ws, "go", policy=Policy.from_lists(tier="full")))
        (handle,) = store.handles(outcome.run_id)
        # the drive's own process handles end with it, and so do the caller's extras
        assert handle.ended_at is not None and handle.end_reason != "orphaned"
    assert [extra.closed for extra in mine.values()] == [True, True]


def test_commits_carry_the_specs_git_author(tmp_path: Path) -> None:
    import subprocess

    from harness_core.tools._git import GitSettings

    ws = _ws(tmp_path)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    lines = [_line("w", _call("write_file", path="a.txt", content="1"),
                   _call("git_commit", message="add a", paths=["a.txt"])), _line("done")]
    spec = spec_for(ws, "go", policy=Policy.from_lists(tier="full"),
                    git=GitSettings(author_name="Io Bot", author_email="bot@example.test"))
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _scripted(tmp_path, lines), clock=ManualClock()).start(spec)
        assert [e.is_error for e in store.ledger(outcome.run_id)] == [False, False]
    author = subprocess.run(["git", "-C", str(ws), "log", "-1", "--format=%an <%ae>"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert author == "Io Bot <bot@example.test>"


def test_the_context_ceiling_elides_what_the_model_is_sent(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    for i in range(6):
        (ws / f"big{i}.txt").write_text("word " * 2000)
    reads = [(f"r{i}", [ToolCall(f"r{i}", "read_file", {"path": f"big{i}.txt"})])
             for i in range(6)]
    provider = _Recording([*reads, ("done", [])])
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider, clock=ManualClock()).start(
            spec_for(ws, "go", context_max_tokens=3000))
        assert outcome.status is RunStatus.FINISHED
        # the store keeps every observation whole; only the view is cut
        assert all("word word" in (e.observation or "") for e in store.ledger(outcome.run_id))
    last = provider.requests[-1].messages
    tools = ["word word" in m.content for m in last if m.role.value == "tool"]
    assert tools[0] is False and tools[-1] is True and len(tools) == 6


def test_an_image_seen_before_a_resume_is_read_again_for_the_model(tmp_path: Path) -> None:
    from PIL import Image

    ws = _ws(tmp_path)
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 10, 10)).save(buffer, "PNG")
    (ws / "dot.png").write_bytes(buffer.getvalue())
    look = ToolCall("v", "view_image", {"path": "dot.png"})
    provider = _Recording([("look", [look]), ("more", [ToolCall("l", "list_dir", {})]),
                           ("done", [])])
    with Store(tmp_path / "state.db") as store:

        def interrupt(event: Event) -> None:
            if event.kind is EventKind.CHECKPOINT and event.data["step"] == 0:
                store.post_inbox(event.run_id, "interrupt", {})

        first = Runner(store, provider, clock=ManualClock(), on_event=interrupt).start(
            spec_for(ws, "go"))
        assert first.status is RunStatus.INTERRUPTED
        again = Runner(store, provider, clock=ManualClock()).resume(first.run_id,
                                                                     spec_for(ws, "go"))
        assert again.status is RunStatus.FINISHED
    (image,) = [m for m in provider.requests[1].messages if m.media]
    assert [(m.media_type, m.path, len(m.data) > 0) for m in image.media] == [
        ("image/png", "dot.png", True)]


class _Raises:
    """A provider whose second completion raises `error` (the first asks for a write)."""

    name = "raising"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        if step == 1:
            raise self.error
        return CompletionResponse(
            text="w", tool_calls=(ToolCall("c", "write_file", {"path": "a.txt",
                                                                "content": "1"}),),
            usage=Usage(10, 2, 12), model="m")

    def close(self) -> None:
        return None


def test_ctrl_c_ends_the_drive_as_interrupted(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _Raises(KeyboardInterrupt()), clock=ManualClock(),
                         on_event=events).start(spec_for(ws, "go"))
        assert (outcome.status, outcome.reason, outcome.steps) == (
            RunStatus.INTERRUPTED, "interrupted (Ctrl-C)", 1)
        run = store.run(outcome.run_id)
        assert (run.status, run.reason, run.owner_pid) == (
            RunStatus.INTERRUPTED, "interrupted (Ctrl-C)", None)
    assert events.seen[-1].data == {"status": "interrupted", "reason": "interrupted (Ctrl-C)",
                                    "steps": 1}


@pytest.mark.parametrize(("error", "reason"), [
    (RuntimeError("boom"), "RuntimeError: boom"),
    (StateError("the disk went away"), "the disk went away"),
])
def test_an_unexpected_error_ends_the_run_as_errored_and_is_raised(
        tmp_path: Path, error: BaseException, reason: str) -> None:
    ws = _ws(tmp_path)
    events = Events()
    with Store(tmp_path / "state.db") as store:
        with pytest.raises(type(error)) as info:
            Runner(store, _Raises(error), clock=ManualClock(), on_event=events).start(
                spec_for(ws, "go"))
        assert info.value is error
        (run,) = store.list_runs()
        assert (run.status, run.reason, run.steps_used, run.owner_pid) == (
            RunStatus.ERRORED, reason, 1, None)
    assert events.seen[-1].data == {"status": "errored", "reason": reason, "steps": 1}
