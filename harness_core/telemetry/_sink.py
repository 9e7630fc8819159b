"""`TelemetrySink`: a run's events as OpenTelemetry spans, exported over OTLP/HTTP.

Driven only by events, so the loop knows nothing of telemetry. Spans:

- ``invoke_agent io`` per run; a spawned child's run span sits under an
  ``execute_tool spawn_agent`` span in its parent's step (children run in the same
  process, through the same event sink);
- ``io.step`` per step, ``chat MODEL`` per model call inside it (GenAI semantic
  conventions: ``gen_ai.system``, ``gen_ai.request.model``, ``gen_ai.response.model``,
  ``gen_ai.usage.input_tokens``/``output_tokens``), ``execute_tool NAME`` per tool call;
- ``io.gate`` per verification gate;
- refusals and approvals as span events on the tool call (or step, or run) they hit.

Times are taken when each event arrives (events are emitted as things happen). Unless
`TelemetryConfig.include_content` is set, no text a model, tool or file produced is
exported: only names, ids, counts, statuses, rules and layers. Content, when included,
is scrubbed of every configured secret by the `redact` function the caller passes.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import field
from typing import Any

from harness_core._record import record
from harness_core.errors import ConfigError
from harness_core.events import Event
from harness_core.otlp import TelemetryConfig

__all__ = ["TelemetrySink"]

_FAILED = ("failed", "errored")


@record(frozen=False)
class _RunSpans:
    span: Any
    step: Any = None
    step_index: int | None = None
    step_started: int = 0
    tools: dict[str, Any] = field(default_factory=lambda: {})
    mark: int = 0


class TelemetrySink:
    """An `EventSink` that exports spans; `close()` flushes them.

    Args:
        config: Where to send spans and whether content may go.
        redact: Removes configured secrets from a string (`Config.redact`).
        exporter: An OpenTelemetry `SpanExporter` to use instead of OTLP/HTTP (tests
            and embedders); None builds the OTLP/HTTP exporter from `config`.

    Raises:
        ConfigError: The `otel` extra is not installed.
    """

    def __init__(self, config: TelemetryConfig, *, redact: Callable[[str], str] | None = None,
                 exporter: Any = None) -> None:
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise ConfigError(
                "[telemetry] needs the OpenTelemetry SDK",
                hint="pip install 'io-harness[otel]'") from exc
        self.config = config
        self._redact = redact or (lambda text: text)
        if exporter is None:
            exporter = _otlp_exporter(config)
        self._provider = TracerProvider(resource=Resource.create(
            {"service.name": config.service_name}))
        self._provider.add_span_processor(BatchSpanProcessor(
            exporter, export_timeout_millis=int(config.timeout_seconds * 1000)))
        self._tracer = self._provider.get_tracer("io-harness")
        self._runs: dict[str, _RunSpans] = {}
        self._lock = threading.Lock()
        self._closed = False

    # ---- the sink -------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        handler = _HANDLERS.get(event.kind.value)
        if handler is None or self._closed:
            return
        with self._lock:
            handler(self, event, time.time_ns())

    def close(self) -> None:
        """End what is still open (marked as cut short) and flush every span."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            now = time.time_ns()
            for run_id in list(self._runs):
                self._end_run(run_id, "interrupted", None, now)
        self._provider.force_flush(int(self.config.timeout_seconds * 1000))
        self._provider.shutdown()

    # ---- helpers ---------------------------------------------------------------------

    def _content(self, value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                                default=str)
        return self._redact(text)[: self.config.content_limit]

    def _context(self, span: Any) -> Any:
        from opentelemetry import trace

        return trace.set_span_in_context(span)

    def _start(self, name: str, parent: Any, now: int, attributes: dict[str, Any]) -> Any:
        context = self._context(parent) if parent is not None else None
        clean = {k: v for k, v in attributes.items() if v is not None}
        return self._tracer.start_span(name, context=context, attributes=clean, start_time=now)

    def _run(self, event: Event, now: int) -> _RunSpans:
        run = self._runs.get(event.run_id)
        if run is None:  # events of a run whose start this sink did not see
            run = self._runs[event.run_id] = _RunSpans(self._start(
                "invoke_agent io", None, now, {"gen_ai.operation.name": "invoke_agent",
                                               "io.run.id": event.run_id}), mark=now)
        return run

    def _step(self, run: _RunSpans, step: int | None, now: int) -> Any:
        if step is None or run.step_index == step and run.step is not None:
            return run.step or run.span
        if run.step is not None:
            run.step.end(end_time=now)
        run.step_index, run.step_started = step, now
        run.step = self._start("io.step", run.span, now, {"io.step.index": step})
        return run.step

    def _innermost(self, run: _RunSpans) -> Any:
        if run.tools:
            return next(reversed(run.tools.values()))
        return run.step or run.span

    def _end_run(self, run_id: str, status: str, reason: str | None, now: int) -> None:
        from opentelemetry.trace import Status, StatusCode

        run = self._runs.pop(run_id, None)
        if run is None:
            return
        for span in run.tools.values():
            span.set_status(Status(StatusCode.ERROR, "the run ended while the call ran"))
            span.end(end_time=now)
        if run.step is not None:
            run.step.end(end_time=now)
        run.span.set_attribute("io.run.status", status)
        if reason and self.config.include_content:
            run.span.set_attribute("io.run.reason", self._content(reason))
        if status in _FAILED:
            run.span.set_status(Status(StatusCode.ERROR, status))
        run.span.end(end_time=now)


def _otlp_exporter(config: TelemetryConfig) -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ConfigError("[telemetry] needs the OTLP/HTTP exporter",
                          hint="pip install 'io-harness[otel]'") from exc
    return OTLPSpanExporter(endpoint=config.endpoint, headers=dict(config.headers),
                            timeout=config.timeout_seconds)


# ---- one handler per event kind ------------------------------------------------------


def _run_started(sink: TelemetrySink, event: Event, now: int) -> None:
    d = event.data
    if event.run_id in sink._runs:
        return
    parent_id = d.get("parent_run_id")
    parent = sink._runs.get(parent_id) if isinstance(parent_id, str) else None
    sandbox = d.get("sandbox") or {}
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "io",
        "io.run.id": event.run_id, "io.run.resumed": bool(d.get("resumed")),
        "io.run.parent_id": parent_id if isinstance(parent_id, str) else None,
        "io.sandbox.backend": sandbox.get("backend") if isinstance(sandbox, dict) else None,
    }
    if sink.config.include_content:
        attrs["io.run.goal"] = sink._content(d.get("goal", ""))
    parent_span = None
    if parent is not None:  # a spawned child: under a span for the parent's spawn_agent call
        parent_span = sink._start("execute_tool spawn_agent", parent.step or parent.span, now, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "spawn_agent",
            "io.step.index": parent.step_index, "io.child_run.id": event.run_id})
        parent.tools[f"spawn:{event.run_id}"] = parent_span
    sink._runs[event.run_id] = _RunSpans(
        sink._start("invoke_agent io", parent_span, now, attrs), mark=now)


def _spawn(sink: TelemetrySink, event: Event, now: int) -> None:
    d = event.data
    if "status" not in d:  # the start: the child's own run_started opened the span
        return
    parent = sink._runs.get(event.run_id)
    span = parent.tools.pop(f"spawn:{d.get('child_run_id')}", None) if parent else None
    if span is None:
        return
    span.set_attribute("io.child_run.status", str(d.get("status")))
    if d.get("status") in _FAILED:
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR, "the child run failed"))
    span.end(end_time=now)


def _step_started(sink: TelemetrySink, event: Event, now: int) -> None:
    run = sink._run(event, now)
    step = event.data.get("step")
    sink._step(run, step if isinstance(step, int) else None, now)


def _completion(sink: TelemetrySink, event: Event, now: int) -> None:
    d = event.data
    run = sink._run(event, now)
    step = d.get("step")
    parent = sink._step(run, step if isinstance(step, int) else None, now)
    usage = d.get("usage") or {}
    requested = d.get("request_model") or d.get("model")
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "gen_ai.system": d.get("provider"),
        "gen_ai.request.model": requested, "gen_ai.response.model": d.get("model"),
        "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
        "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
        "io.latency_ms": d.get("latency_ms"), "io.ttft_ms": d.get("ttft_ms"),
        "io.tool_calls": d.get("tool_calls"),
    }
    if sink.config.include_content and d.get("text"):
        attrs["io.completion.text"] = sink._content(d.get("text"))
    latency = d.get("latency_ms")
    began = now - int(latency * 1e6) if isinstance(latency, (int, float)) else run.step_started
    span = sink._start(f"chat {requested}", parent, max(began, run.step_started), attrs)
    span.end(end_time=now)


def _tool_call(sink: TelemetrySink, event: Event, now: int) -> None:
    d = event.data
    run = sink._run(event, now)
    step = d.get("step")
    parent = sink._step(run, step if isinstance(step, int) else None, now)
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": d.get("name"),
        "gen_ai.tool.call.id": d.get("call_id"), "io.step.index": step,
    }
    if sink.config.include_content:
        attrs["gen_ai.tool.call.arguments"] = sink._content(d.get("arguments", {}))
    run.tools[str(d.get("call_id"))] = sink._start(f"execute_tool {d.get('name')}", parent, now,
                                                   attrs)


def _tool_result(sink: TelemetrySink, event: Event, now: int) -> None:
    from opentelemetry.trace import Status, StatusCode

    d = event.data
    run = sink._run(event, now)
    span = run.tools.pop(str(d.get("call_id")), None)
    if span is None:
        return
    refused = d.get("refused")
    span.set_attribute("io.tool.is_error", bool(d.get("is_error")))
    if isinstance(refused, dict):
        span.set_attribute("io.tool.refused", True)
    if sink.config.include_content:
        span.set_attribute("gen_ai.tool.call.result", sink._content(d.get("output", "")))
    if d.get("is_error"):
        span.set_status(Status(StatusCode.ERROR, "refused" if refused else "tool error"))
    span.end(end_time=now)


def _policy(sink: TelemetrySink, event: Event, now: int) -> None:
    d = event.data
    if d.get("pending"):
        name = "io.approval.pending"
    else:
        name = {"refusal": "io.refusal", "hook": "io.hook"}.get(event.kind.value, "io.approval")
    attrs = {"io.policy.act": d.get("act"), "io.policy.verdict": d.get("verdict"),
             "io.policy.rule": d.get("rule"), "io.policy.layer": d.get("layer"),
             "io.policy.decided_by": d.get("decided_by")}
    if sink.config.include_content:
        attrs.update({"io.policy.target": sink._content(d.get("target", "")),
                      "io.policy.reason": sink._content(d.get("reason", ""))})
    run = sink._run(event, now)
    sink._innermost(run).add_event(name, {k: v for k, v in attrs.items() if v is not None},
                                   timestamp=now)


def _checkpoint(sink: TelemetrySink, event: Event, now: int) -> None:
    run = sink._run(event, now)
    if run.step is not None:
        run.step.end(end_time=now)
        run.step, run.step_index = None, None
    run.mark = now


def _verification(sink: TelemetrySink, event: Event, now: int) -> None:
    from opentelemetry.trace import Status, StatusCode

    d = event.data
    run = sink._run(event, now)
    attrs: dict[str, Any] = {
        "io.gate.command": sink._redact(str(d.get("command", ""))),
        "io.gate.passed": bool(d.get("passed")), "io.gate.exit_status": d.get("exit_status"),
        "io.sandbox.backend": d.get("sandbox"), "io.step.index": d.get("step"),
    }
    if sink.config.include_content:
        attrs["io.gate.output"] = sink._content(d.get("output", ""))
    span = sink._start("io.gate", run.span, run.mark or now, attrs)
    if not d.get("passed"):
        span.set_status(Status(StatusCode.ERROR, "gate failed"))
    span.end(end_time=now)
    run.mark = now


def _note(sink: TelemetrySink, event: Event, now: int) -> None:
    d = event.data
    attrs: dict[str, Any] = {"io.step.index": d.get("step")}
    if event.kind.value == "question":
        attrs["io.question.answered_by"] = d.get("answered_by")
        attrs["io.question.pending"] = bool(d.get("pending"))
    elif event.kind.value == "plan":
        items = d.get("items")
        attrs["io.plan.items"] = len(items) if isinstance(items, list) else None
        attrs["io.plan.revision"] = d.get("revision")
    if sink.config.include_content:
        attrs["io.content"] = sink._content({k: v for k, v in d.items() if k != "step"})
    run = sink._run(event, now)
    run.span.add_event(f"io.{event.kind.value}", {k: v for k, v in attrs.items()
                                                    if v is not None}, timestamp=now)


def _run_finished(sink: TelemetrySink, event: Event, now: int) -> None:
    reason = event.data.get("reason")
    sink._end_run(event.run_id, str(event.data.get("status", "")),
                  reason if isinstance(reason, str) else None, now)


_HANDLERS: dict[str, Callable[[TelemetrySink, Event, int], None]] = {
    "run_started": _run_started,
    "step_started": _step_started,
    "completion": _completion,
    "tool_call": _tool_call,
    "tool_result": _tool_result,
    "refusal": _policy,
    "approval": _policy,
    "hook": _policy,
    "checkpoint": _checkpoint,
    "verification": _verification,
    "question": _note,
    "plan": _note,
    "steer": _note,
    "stall": _note,
    "warning": _note,
    "run_finished": _run_finished,
    "spawn": _spawn,
}
