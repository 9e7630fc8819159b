"""`[telemetry]` and the `OTEL_*` variables: which wins, what turns export off, what is a
secret, and which settings are refused. A table of environment → endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core import ConfigError
from harness_core.config import load


def _load(tmp_path: Path, toml: str = "", **env: str):  # type: ignore[no-untyped-def]
    (tmp_path / "io.toml").write_text(toml, encoding="utf-8")
    base = {"IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path / "home")}
    return load(tmp_path, env={**base, **env})


TABLE = '[telemetry]\notlp_endpoint = "http://collector:4318"\n'


@pytest.mark.parametrize("toml,env,endpoint", [
    ("", {}, None),
    (TABLE, {}, "http://collector:4318/v1/traces"),
    ('[telemetry]\notlp_endpoint = "https://c.example/v1/traces"\n', {},
     "https://c.example/v1/traces"),
    ("", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318/"}, "http://env:4318/v1/traces"),
    ("", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318",
          "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:9/custom"}, "http://traces:9/custom"),
    (TABLE, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"}, "http://collector:4318/v1/traces"),
    (TABLE, {"OTEL_SDK_DISABLED": "true"}, None),
    ("", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318", "OTEL_TRACES_EXPORTER": "none"},
     None),
    ('[telemetry]\ninclude_content = true\n', {}, None),
])
def test_which_setting_decides_the_endpoint(tmp_path: Path, toml: str, env: dict[str, str],
                                            endpoint: str | None) -> None:
    config = _load(tmp_path, toml, **env)
    assert (config.telemetry.endpoint if config.telemetry else None) == endpoint


def test_header_values_are_secrets_from_the_table_and_the_variables(tmp_path: Path) -> None:
    config = _load(tmp_path, TABLE + 'headers = { authorization = "Bearer tbl-secret" }\n',
                   OTEL_EXPORTER_OTLP_HEADERS="x-key=env%2Csecret,other=two")
    assert config.telemetry is not None
    assert dict(config.telemetry.headers) == {"authorization": "Bearer tbl-secret",
                                              "x-key": "env,secret", "other": "two"}
    assert config.redact("a Bearer tbl-secret and env,secret") == "a *** and ***"
    assert "tbl-secret" not in repr(config) and "tbl-secret" not in repr(config.telemetry)
    shown = {v.key: v.value for v in config.show()}
    assert "tbl-secret" not in str(shown)


@pytest.mark.parametrize("toml,env,message", [
    ('[telemetry]\notlp_endpoint = "collector:4318"\n', {}, "must be an http(s) URL"),
    ("", {"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://x"}, "OTEL_EXPORTER_OTLP_ENDPOINT must be"),
    (TABLE, {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "'grpc' is not supported"),
    (TABLE, {"OTEL_EXPORTER_OTLP_HEADERS": "no-equals-sign"}, "key=value"),
    ('[telemetry]\notlp_endpont = "http://x"\n', {}, "telemetry.otlp_endpont"),
])
def test_bad_telemetry_settings_are_configuration_errors(
        tmp_path: Path, toml: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, toml, **env)
    assert message in info.value.message
