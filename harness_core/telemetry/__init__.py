"""OpenTelemetry export of a run, opt-in: spans built from the run's events.

`TelemetryConfig` is the `[telemetry]` table (or the standard `OTEL_EXPORTER_OTLP_*`
variables, read by `harness_core.config`). `TelemetrySink` is an `EventSink`: it turns a
run's events into spans (run, step, model call, tool call, gate) and refusals into span
events, and exports them over OTLP/HTTP. The OpenTelemetry SDK is an extra
(`io-harness[otel]`) imported only when a sink is started, never by importing this package.
"""

from typing import TYPE_CHECKING, Any

from harness_core.otlp import TelemetryConfig

if TYPE_CHECKING:
    from harness_core.telemetry._sink import TelemetrySink

__all__ = ["TelemetryConfig", "TelemetrySink"]


def __getattr__(name: str) -> Any:
    # The sink (and the event and record types it imports) loads only for a run that
    # exports telemetry: naming `TelemetryConfig` costs none of it.
    if name == "TelemetrySink":
        from harness_core.telemetry._sink import TelemetrySink

        return TelemetrySink
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
