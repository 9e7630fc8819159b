"""`TelemetrySink` from events alone: a tree of runs becomes parent/child spans (the child
under the parent's open `spawn_agent` call), unfinished spans are closed on `close()`, and
a missing SDK is a `ConfigError` naming the extra. The SDK's in-memory exporter stands in
for the wire (the OTLP path is tested against a loopback receiver in integration)."""

from __future__ import annotations

import builtins
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness_core import ConfigError, Event, EventKind, TelemetryConfig, TelemetrySink

CONFIG = TelemetryConfig(endpoint="http://127.0.0.1:9/v1/traces")


def _feed(sink: TelemetrySink, run: str, kind: EventKind, **data: Any) -> None:
    sink(Event(kind, run, data))


def test_a_child_run_is_a_child_span_of_the_parents_spawning_call() -> None:
    memory = InMemorySpanExporter()
    sink = TelemetrySink(CONFIG, exporter=memory)
    _feed(sink, "root", EventKind.RUN_STARTED, goal="g", resumed=False)
    _feed(sink, "root", EventKind.STEP_STARTED, step=0)
    # the order the loop emits: the child's run_started, then the parent's spawn event
    _feed(sink, "kid", EventKind.RUN_STARTED, goal="sub", resumed=False, parent_run_id="root")
    _feed(sink, "root", EventKind.SPAWN, child_run_id="kid", step=0, call_index=0)
    _feed(sink, "kid", EventKind.STEP_STARTED, step=0)
    _feed(sink, "kid", EventKind.COMPLETION, step=0, model="m-served", request_model="m",
          provider="anthropic", usage={"prompt_tokens": 5, "completion_tokens": 2},
          latency_ms=1.0)
    _feed(sink, "kid", EventKind.CHECKPOINT, step=0)
    _feed(sink, "kid", EventKind.RUN_FINISHED, status="finished", reason="done")
    _feed(sink, "root", EventKind.SPAWN, child_run_id="kid", step=0, call_index=0,
          status="finished", steps=1)
    _feed(sink, "root", EventKind.TOOL_RESULT, step=0, call_id="c1", name="spawn_agent",
          output="ok", is_error=False)
    _feed(sink, "root", EventKind.CHECKPOINT, step=0)
    _feed(sink, "root", EventKind.RUN_FINISHED, status="finished", reason="done")
    sink.close()
    spans = {(s.name, s.attributes.get("io.run.id")): s for s in memory.get_finished_spans()}
    root = spans[("invoke_agent io", "root")]
    kid = spans[("invoke_agent io", "kid")]
    spawn = spans[("execute_tool spawn_agent", None)]
    chat = spans[("chat m", None)]
    assert spawn.parent is not None and kid.parent is not None
    assert kid.parent.span_id == spawn.context.span_id
    assert kid.context.trace_id == root.context.trace_id
    assert chat.attributes["gen_ai.response.model"] == "m-served"
    assert chat.attributes["gen_ai.system"] == "anthropic"
    assert kid.attributes["io.run.parent_id"] == "root"
    [root_step] = [s for s in memory.get_finished_spans() if s.name == "io.step"
                   and s.parent is not None and s.parent.span_id == root.context.span_id]
    assert spawn.parent.span_id == root_step.context.span_id
    assert spawn.attributes["io.child_run.status"] == "finished"


def test_close_ends_what_is_still_open_as_cut_short() -> None:
    memory = InMemorySpanExporter()
    sink = TelemetrySink(CONFIG, exporter=memory)
    _feed(sink, "r", EventKind.RUN_STARTED, goal="g", resumed=False)
    _feed(sink, "r", EventKind.STEP_STARTED, step=0)
    _feed(sink, "r", EventKind.TOOL_CALL, step=0, call_id="c", name="exec", arguments={})
    sink.close()
    sink.close()  # idempotent
    names = {s.name: s for s in memory.get_finished_spans()}
    assert set(names) == {"invoke_agent io", "io.step", "execute_tool exec"}
    assert names["invoke_agent io"].attributes["io.run.status"] == "interrupted"
    assert not names["execute_tool exec"].status.is_ok


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def no_otel(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("opentelemetry"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    # unittest-style patching is the only way to make an installed package look absent
    monkeypatch.setattr(builtins, "__import__", no_otel)
    with pytest.raises(ConfigError) as info:
        TelemetrySink(CONFIG)
    assert "io-harness[otel]" in (info.value.hint or "")


def test_a_run_without_telemetry_never_imports_the_sdk(tmp_path: Any) -> None:
    import subprocess
    import sys

    from tests.integration.cli.helpers import make_workspace, replay_line

    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    code = ("import sys\n"
            f"sys.argv = ['io', 'run', 'goal', '-w', {str(ws)!r}]\n"
            "from io_harness_cli.main import app\n"
            "try:\n    app(prog_name='io')\nexcept SystemExit:\n    pass\n"
            "sys.__stderr__.write('\\nOTEL=' + str(any(m.startswith('opentelemetry')"
            " for m in sys.modules)) + '\\n')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert "finished (exit 0)" in done.stderr, done.stderr
    assert "OTEL=False" in done.stderr
