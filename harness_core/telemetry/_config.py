"""`TelemetryConfig`, defined in `harness_core.otlp` (config loading needs it
without this package) and named here too."""

from __future__ import annotations

from harness_core.otlp import TelemetryConfig

__all__ = ["TelemetryConfig"]
