"""The run loop's completions pinned to exact values (mutation testing's survivors in
`run/_loop.py`): what a completion records (its provider, stop reason, latency measured
on the injected clock when the vendor gave none, attempts, citations, server tool
calls), what the next request carries of it, a paused turn's continuation (its step, its
streamed tokens, no empty prefix), failed attempts a provider kept itself, run ids, and
the caller's extras closed by `close_all` before `close`. A provider in the test plays
the vendor's part (fields the scripted replay has no line for); real SQLite store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness_core import (
    Citation,
    CompletionRequest,
    CompletionResponse,
    EventKind,
    ProviderAttempt,
    ProviderError,
    Runner,
    RunStatus,
    ServerToolCall,
    Store,
    ToolCall,
    ToolContext,
    Usage,
)
from tests.fakes.clock import ManualClock
from tests.unit.run.loop_support import workspace as _ws
from tests.unit.session.support import Events, spec_for


class _Vendor:
    """Step 0: a call, after 1.23456 ms on the clock, no latency of its own, with an
    attempt, a citation and a server tool call; step 1: done."""

    name = "pool"

    def __init__(self, clock: ManualClock, served_by: str) -> None:
        self.clock, self.served_by = clock, served_by
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        self.requests.append(request)
        self.clock.advance(0.00123456)
        if step == 1:
            return CompletionResponse(text="done", usage=Usage(1, 1, 2), latency_ms=5.0,
                                      provider=self.served_by, stop_reason="end_turn")
        return CompletionResponse(
            text="looking", tool_calls=(ToolCall("c0", "list_dir", {}),), usage=Usage(1, 1, 2),
            provider=self.served_by, stop_reason="tool_use",
            attempts=(ProviderAttempt("vendor-a", "m", False, "503", 503),
                      ProviderAttempt("vendor-b", "m", True)),
            citations=(Citation("https://example.test/a", "A", "quoted"),),
            server_tool_calls=(ServerToolCall("web_search", {"query": "q"}),))

    def close(self) -> None:
        return None


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_completion_records_what_the_vendor_said_and_how_long_it_took(
        tmp_path: Path) -> None:
    clock = ManualClock()
    clock.advance(100.0)  # a clock that does not start at zero
    provider = _Vendor(clock, "")
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider, clock=clock, on_event=events).start(
            spec_for(_ws(tmp_path), "go"))
        assert outcome.status is RunStatus.FINISHED
        assert len(outcome.run_id) == 12 and int(outcome.run_id, 16) >= 0
        steps = store.steps(outcome.run_id)
        assert [(s.provider, s.latency_ms) for s in steps] == [
            ("pool", pytest.approx(1.23456)), ("pool", 5.0)]
        assert [(a.step_index, a.attempt.provider, a.attempt.ok)
                for a in store.provider_attempts(outcome.run_id)] == [
            (0, "vendor-a", False), (0, "vendor-b", True)]
    db = tmp_path / "state.db"
    assert _rows(db, "SELECT step_index, stop_reason FROM completions ORDER BY step_index") \
        == [(0, "tool_use"), (1, "end_turn")]
    assert _rows(db, "SELECT step_index, url, title, cited_text FROM citations") == [
        (0, "https://example.test/a", "A", "quoted")]
    assert [(step, name, json.loads(data)) for step, name, data in _rows(
        db, "SELECT step_index, name, input FROM server_tool_calls")] == [
        (0, "web_search", {"query": "q"})]
    completions = [e.data for e in events.seen if e.kind is EventKind.COMPLETION]
    assert [(c["provider"], c["latency_ms"]) for c in completions] == [
        ("pool", 1.235), ("pool", 5.0)]
    # the next request carries the assistant's text and its calls
    assistant = provider.requests[1].messages[-2]
    assert (assistant.role.value, assistant.content, [c.id for c in assistant.tool_calls]) \
        == ("assistant", "looking", ["c0"])


def test_the_vendor_named_in_a_response_is_recorded_over_the_providers_name(
        tmp_path: Path) -> None:
    clock = ManualClock()
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _Vendor(clock, "vendor-b"), clock=clock,
                         on_event=events).start(spec_for(_ws(tmp_path), "go"))
        assert [s.provider for s in store.steps(outcome.run_id)] == ["vendor-b", "vendor-b"]
    assert [e.data["provider"] for e in events.seen if e.kind is EventKind.COMPLETION] == [
        "vendor-b", "vendor-b"]


class _PausesQuietly:
    """Step 0 pauses its turn once with nothing said yet (a server tool at work), then
    streams the rest; step 1 is done."""

    name = "pausing"

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []  # (step, messages sent)

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        self.calls.append((step, len(request.messages)))
        if step == 1:
            return CompletionResponse(text="done", usage=Usage(1, 1, 2))
        if len(self.calls) == 1:
            return CompletionResponse(text="  ", usage=Usage(1, 1, 2),
                                      stop_reason="pause_turn")
        if on_token is not None:
            on_token("found it")
        return CompletionResponse(text="found it", tool_calls=(ToolCall("c", "list_dir", {}),),
                                  usage=Usage(1, 1, 2))

    def close(self) -> None:
        return None


def test_a_paused_turn_continues_on_its_step_without_an_empty_prefix(tmp_path: Path) -> None:
    provider = _PausesQuietly()
    events = Events()
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider, clock=ManualClock(), on_event=events).start(
            spec_for(_ws(tmp_path), "go"))
        assert outcome.status is RunStatus.FINISHED
    first, again = provider.calls[:2]
    assert again == first == (0, first[1])  # the same step, no assistant prefix added
    assert [e.data for e in events.seen if e.kind is EventKind.TOKEN][:1] == [
        {"text": "found it", "step": 0}]


class _KeepsItsAttempts:
    """Fails with no attempts on the error; keeps them itself (`last_attempts`)."""

    name = "keeping"
    last_attempts = (ProviderAttempt("vendor-a", "m", False, "timeout", None),)

    def complete(self, request: CompletionRequest, *, step: int,
                 on_token: Any = None) -> CompletionResponse:
        raise ProviderError("gave up")

    def close(self) -> None:
        return None


def test_failed_attempts_a_provider_kept_itself_are_recorded(tmp_path: Path) -> None:
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, _KeepsItsAttempts(), clock=ManualClock()).start(
            spec_for(_ws(tmp_path), "go"))
        assert (outcome.status, outcome.reason) == (RunStatus.ERRORED, "provider: gave up")
        assert [(a.step_index, a.attempt.provider, a.attempt.error)
                for a in store.provider_attempts(outcome.run_id)] == [
            (0, "vendor-a", "timeout")]


class _Closes:
    def __init__(self, log: list[str], name: str, *, close_all: bool) -> None:
        self.log, self.name = log, name
        if close_all:
            self.close_all = lambda: log.append(f"{name}.close_all")

    def close(self) -> None:
        self.log.append(f"{self.name}.close")


def test_extras_are_closed_by_close_all_when_they_have_it(tmp_path: Path) -> None:
    log: list[str] = []

    def extras(run_id: str, ctx: ToolContext) -> dict[str, Any]:
        return {"pool": _Closes(log, "pool", close_all=True),
                "conn": _Closes(log, "conn", close_all=False), "plain": 42}

    clock = ManualClock()
    with Store(tmp_path / "state.db") as store:
        Runner(store, _Vendor(clock, ""), clock=clock, extras=extras).start(
            spec_for(_ws(tmp_path), "go"))
    assert sorted(log) == ["conn.close", "pool.close_all"]
