"""`TelemetryConfig`: where spans go and what they may carry. Data only, no I/O.

Config loading builds one whenever telemetry is configured, so it lives outside
`harness_core.telemetry` (the sink, which re-exports it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from harness_core._record import record

__all__ = ["TelemetryConfig"]


@record
class TelemetryConfig:
    """OTLP/HTTP export settings.

    Attributes:
        endpoint: The full URL spans are POSTed to (an OTLP/HTTP traces endpoint, e.g.
            ``http://localhost:4318/v1/traces``).
        include_content: Also export what the model and tools said: the goal, model
            text, tool arguments and outputs, refusal targets and reasons (each cut to
            `content_limit` and scrubbed of every configured secret). Off by default:
            a span then carries names, ids, counts, statuses, rules and layers only,
            never file contents.
        headers: HTTP headers sent with each export (an auth token: a secret, never
            recorded anywhere else).
        service_name: The `service.name` resource attribute.
        timeout_seconds: How long one export may take; at the end of a run, how long
            the last spans may take to leave.
        content_limit: Characters of one content attribute.
    """

    endpoint: str
    include_content: bool = False
    headers: Mapping[str, str] = field(default_factory=lambda: {}, repr=False)
    service_name: str = "io"
    timeout_seconds: float = 10.0
    content_limit: int = 4096
