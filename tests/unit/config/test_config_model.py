"""The pydantic models are the one declaration: defaults come from the typed objects,
every key is documented, and pydantic stays out of imports that load no config."""

from __future__ import annotations

import subprocess
import sys
import typing
from dataclasses import fields

from harness_core.config import RunSettings
from harness_core.config._fields import Kind, schema_keys, specs
from harness_core.config._model import IoToml, ProviderKind
from harness_core.providers import PROVIDER_KINDS
from harness_core.run import RunSpec
from harness_core.tools import DEFAULT_OUTPUT_CAP


def test_run_defaults_are_declared_once() -> None:
    spec = {f.name: f.default for f in fields(RunSpec)}
    settings = RunSettings()
    run = IoToml().run
    assert settings.output_cap_bytes == spec["output_cap"] == run.output_cap_bytes
    assert settings.stall_window == spec["stall_window"] == run.stall_window
    assert settings.exec_timeout_seconds == spec["exec_timeout"] == run.exec_timeout_seconds
    assert spec["output_cap"] == DEFAULT_OUTPUT_CAP == 16_384
    assert spec["stall_window"] == 4


def test_provider_kinds_of_the_schema_are_the_registry() -> None:
    assert set(typing.get_args(ProviderKind)) == set(PROVIDER_KINDS)


def test_every_key_has_a_description() -> None:
    def walk(model: type, prefix: str) -> list[str]:
        missing: list[str] = []
        for name, spec in specs(model).items():
            if not spec.description.strip():
                missing.append(prefix + name)
            if spec.model is not None:
                missing += walk(spec.model, f"{prefix}{name}.")
        return missing

    assert walk(IoToml, "") == []
    assert all(s.kind in Kind for s in specs(IoToml).values())
    assert "provider.fallback.kind" in schema_keys()


def test_loading_no_config_imports_no_pydantic() -> None:
    code = (
        "import sys, harness_core.config, harness_core\n"
        "from harness_core import Config, Scope, RunAssembly\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
