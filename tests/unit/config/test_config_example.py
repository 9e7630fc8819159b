"""io.toml.example documents every key io accepts, and loads cleanly."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from harness_core.config import load, schema_keys
from harness_core.config._fields import keys_in

EXAMPLE = Path(__file__).resolve().parents[3] / "io.toml.example"
ENV_IT_NEEDS = {"ANTHROPIC_API_KEY": "sk-ant-example", "OPENROUTER_API_KEY": "sk-or-example",
                "OTLP_TOKEN": "otlp-example", "TRACKER_CLIENT_SECRET": "tracker-secret",
                "TRACKER_PRIVATE_KEY": "tracker-pem"}


def test_example_loads_cleanly_as_the_project_scope(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / "io.toml")
    env = {
        "IO_SYSTEM_CONFIG": str(tmp_path / "none"),
        "HOME": str(tmp_path / "home"),
        # outside the workspace (tmp_path), where the MCP servers' OAuth tokens go
        "XDG_STATE_HOME": str(tmp_path.parent / f"{tmp_path.name}-state"),
        **ENV_IT_NEEDS,
    }
    config = load(tmp_path, env=env)
    assert config.provider is not None
    assert config.provider_for_run().api_key == "sk-ant-example"
    assert config.prices is not None


def test_example_sets_exactly_the_keys_of_the_schema() -> None:
    document = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    in_example = keys_in(document)
    assert sorted(schema_keys() - in_example) == [], "keys missing from io.toml.example"
    assert sorted(in_example - schema_keys()) == [], "keys in io.toml.example unknown to the schema"


def test_every_table_of_the_example_is_explained() -> None:
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    headers = [i for i, line in enumerate(lines) if line.startswith("[")]
    for index in headers:
        around = lines[max(0, index - 1) : index + 2]
        assert any(line.lstrip().startswith("#") for line in around), lines[index]


def test_example_validates_against_the_json_schema() -> None:
    import jsonschema

    from harness_core.config import json_schema

    document = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    # TOML dates are not JSON: the schema reads them as "YYYY-MM-DD" strings, as editors do.
    document["prices"]["as_of"] = document["prices"]["as_of"].isoformat()
    jsonschema.Draft202012Validator(json_schema()).validate(document)


def test_json_schema_rejects_an_unknown_key_and_a_wrong_type() -> None:
    import jsonschema

    from harness_core.config import json_schema

    validator = jsonschema.Draft202012Validator(json_schema())
    assert not validator.is_valid({"policy": {"alow_exec": ["x"]}})
    assert not validator.is_valid({"budget": {"max_steps": "ten"}})
    assert not validator.is_valid({"budget": {"max_steps": True}})
    assert validator.is_valid({"budget": {"max_steps": False}})


def test_configuration_guide_lists_every_key() -> None:
    guide = (EXAMPLE.parent / "docs" / "guide" / "configuration.md").read_text(encoding="utf-8")
    missing = [k for k in schema_keys() if f"`{k.replace('*', '<name>')}`" not in guide]
    assert sorted(missing) == []
