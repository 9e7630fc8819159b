"""`[telemetry]` and the standard `OTEL_*` variables, projected onto a `TelemetryConfig`.

Export is opt-in: nothing is exported unless `[telemetry] otlp_endpoint` is set or one of
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` is. The io.toml key
wins over the variables; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turns
export off whatever else is set. Only OTLP over HTTP (protobuf) is spoken. Header values
are credentials: they join the config's secrets and are never shown or recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from harness_core.errors import ConfigError
from harness_core.otlp import TelemetryConfig

__all__ = ["disabled", "telemetry_config"]

_TRACES_PATH = "/v1/traces"


def _traces_url(base: str, where: str) -> str:
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where} must be an http(s) URL of an OTLP/HTTP collector",
                          hint="for example http://localhost:4318")
    if parts.path.rstrip("/").endswith(_TRACES_PATH):
        return base
    return base.rstrip("/") + _TRACES_PATH


def _headers(text: str) -> dict[str, str]:
    """`OTEL_EXPORTER_OTLP_HEADERS`: ``k1=v1,k2=v2``, each part URL-encoded."""
    out: dict[str, str] = {}
    for pair in text.split(","):
        if not pair.strip():
            continue
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError("OTEL_EXPORTER_OTLP_HEADERS must read key=value,key=value"
                              " (the values are not shown here)")
        out[unquote(key.strip())] = unquote(value.strip())
    return out


def disabled(env: Mapping[str, str]) -> bool:
    """Whether the standard variables switch span export off."""
    return (env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
            or env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none")


def telemetry_config(table: Mapping[str, Any], env: Mapping[str, str]
                     ) -> tuple[TelemetryConfig | None, frozenset[str]]:
    """The export settings (None when export is off) and the header values to redact.

    Args:
        table: The merged `[telemetry]` values (plain values, absent keys missing).
        env: The environment mapping the caller passed to `load`.

    Raises:
        ConfigError: An endpoint that is not an http(s) URL, malformed
            `OTEL_EXPORTER_OTLP_HEADERS`, or a protocol other than http/protobuf.
    """
    if disabled(env):
        return None, frozenset()
    endpoint = table.get("otlp_endpoint")
    if endpoint:
        url = _traces_url(str(endpoint), "[telemetry] otlp_endpoint")
    elif env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        url = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        _traces_url(url, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    elif env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        url = _traces_url(env["OTEL_EXPORTER_OTLP_ENDPOINT"], "OTEL_EXPORTER_OTLP_ENDPOINT")
    else:
        return None, frozenset()
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
    if protocol.strip() != "http/protobuf":
        raise ConfigError(f"OTLP protocol {protocol!r} is not supported",
                          hint="io exports over http/protobuf only; unset the protocol variable")
    headers = _headers(env.get("OTEL_EXPORTER_OTLP_HEADERS", ""))
    headers.update(_headers(env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "")))
    headers.update(table.get("headers") or {})
    service = table.get("service_name") or env.get("OTEL_SERVICE_NAME") or "io"
    config = TelemetryConfig(
        endpoint=url, include_content=bool(table.get("include_content", False)),
        headers=headers, service_name=str(service),
        timeout_seconds=float(table.get("timeout_seconds", 10.0)))
    return config, frozenset(v for v in headers.values() if v)
