"""The system scope's `[requirements]`: a table of requirement → loosening refused from
every lower place (project, local, `-c`, agent definition), tightening accepted.

Real files in `tmp_path`, loaded with `load` as the CLI does; the flags and the resume
are in tests/integration/cli/test_requirements_cli.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core import Config, RequirementError
from harness_core.config import Requirements, load
from harness_core.errors import ConfigError

PROVIDER = '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n'
PRICES = '[prices]\nas_of = 2026-01-01\n[prices.models.scripted]\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\n'

# requirement key, the system's [requirements] lines, a loosening file, a tightening file
ROWS = [
    ("max_tier", 'max_tier = "workspace-write"',
     '[policy]\ntier = "full"\n', '[policy]\ntier = "read-only"\n'),
    ("approval", 'approval = ["deny"]',
     '[policy]\napproval = "ask"\n', '[policy]\napproval = "deny"\n'),
    ("sandbox_backends", 'sandbox_backends = ["native", "floor"]',
     '[sandbox]\nbackend = "off"\n', '[sandbox]\nbackend = "floor"\n'),
    ("sandbox_fallback", "sandbox_fallback = false",
     '[sandbox]\nbackend = "auto"\n', '[sandbox]\nbackend = "native"\n'),
    ("max_steps", "max_steps = 20", "[budget]\nmax_steps = 500\n", "[budget]\nmax_steps = 5\n"),
    ("max_tokens", "max_tokens = 1000", "[budget]\nmax_tokens = false\n",
     "[budget]\nmax_tokens = 10\n"),
    ("max_cost_usd", "max_cost_usd = 5", "[budget]\nmax_cost_usd = 50.0\n",
     "[budget]\nmax_cost_usd = 0.5\n"),
    ("wall_seconds", "wall_seconds = 600", "[budget]\nwall_seconds = 3600\n",
     "[budget]\nwall_seconds = 60\n"),
    ("max_depth", "max_depth = 1", "[agents]\nmax_depth = 3\n", "[agents]\nmax_depth = 0\n"),
    ("max_children", "max_children = 2", "[agents]\nmax_children = 9\n",
     "[agents]\nmax_children = 1\n"),
    ("parallel", "parallel = 1", "[agents]\nparallel = 4\n", "[agents]\nparallel = 1\n"),
    ("providers", 'providers = ["scripted", "openai"]',
     '[provider]\nkind = "anthropic"\nmodel = "claude-x"\n',
     '[provider]\nkind = "openai"\nmodel = "gpt-x"\n'),
    ("models", 'models = ["claude-*", "scripted"]', '[provider]\nmodel = "gpt-5"\n',
     '[provider]\nmodel = "claude-haiku"\n'),
    ("base_url_hosts", 'base_url_hosts = ["127.0.0.1", "*.corp.example"]',
     '[provider]\nkind = "openai"\nmodel = "m"\nbase_url = "https://evil.example/v1"\n',
     '[provider]\nkind = "openai"\nmodel = "m"\nbase_url = "https://llm.corp.example/v1"\n'),
    ("mcp", '[[requirements.mcp]]\nname = "docs"\ncommand = "/bin/true"',
     '[[mcp]]\nname = "docs"\ncommand = "/bin/sh"\n',
     '[[mcp]]\nname = "docs"\ncommand = "/bin/true"\n'),
    ("telemetry_endpoint", 'telemetry_endpoint = "http://127.0.0.1:4318"',
     '[telemetry]\notlp_endpoint = "http://collector.elsewhere:4318"\n',
     '[telemetry]\notlp_endpoint = "http://127.0.0.1:4318/v1/traces"\n'),
]
IDS = [row[0] for row in ROWS]


def _requirements(lines: str) -> str:
    """`lines` under [requirements]; an array of tables after the table's own keys."""
    return lines + "\n" if lines.startswith("[[") else f"[requirements]\n{lines}\n"


def _setup(tmp_path: Path, requirement_lines: str) -> tuple[Path, dict[str, str]]:
    system = tmp_path / "etc" / "io.toml"
    system.parent.mkdir(parents=True)
    system.write_text(_requirements(requirement_lines) + PRICES)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(PROVIDER)
    (ws / "replay.jsonl").write_text("")
    env = {"IO_SYSTEM_CONFIG": str(system), "HOME": str(tmp_path / "home"),
           "IO_STORE": str(tmp_path / "state.db")}
    return ws, env


def _as_project(text: str) -> str:
    """`text` as a whole project file: with the scripted provider unless it sets one."""
    if not text.startswith("[provider]"):
        return PROVIDER + text
    kind = "" if "kind" in text else 'kind = "scripted"\n'
    return text.replace("[provider]\n", "[provider]\n" + kind) + 'script = "replay.jsonl"\n'


def _refused(exc: pytest.ExceptionInfo[RequirementError], key: str, place: str,
             system: str) -> None:
    message = str(exc.value)
    assert f"requirements.{key}" in message and system in message and place in message, message
    assert exc.value.requirement == f"requirements.{key}"
    assert place in exc.value.tried_by


PLACES = ["user", "project", "local", "-c"]


def _place(tmp_path: Path, ws: Path, place: str, loose: str) -> tuple[Path | None, str]:
    """Write `loose` where `place` reads it: (the `-c` file or None, the place's name)."""
    if place == "-c":
        other = tmp_path / "other.toml"
        other.write_text(_as_project(loose))
        return other, f"the -c file ({other})"
    if place == "project":
        (ws / "io.toml").write_text(_as_project(loose))
        return None, f"project scope ({ws / 'io.toml'})"
    path = ws / "io.local.toml" if place == "local" else \
        tmp_path / "home" / ".config" / "io" / "io.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(loose)
    return None, f"{place} scope ({path})"


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(("key", "lines", "loose", "tight"), ROWS, ids=IDS)
def test_a_loosening_from_any_lower_place_is_refused_naming_it(
        tmp_path: Path, key: str, lines: str, loose: str, tight: str, place: str) -> None:
    ws, env = _setup(tmp_path, lines)
    config_file, named = _place(tmp_path, ws, place, loose)
    with pytest.raises(RequirementError) as exc:
        load(ws, config_file=config_file, env=env)
    _refused(exc, key, named, env["IO_SYSTEM_CONFIG"])


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(("key", "lines", "loose", "tight"), ROWS, ids=IDS)
def test_a_tightening_from_any_lower_place_is_accepted_and_held(
        tmp_path: Path, key: str, lines: str, loose: str, tight: str, place: str) -> None:
    ws, env = _setup(tmp_path, lines)
    config_file, _ = _place(tmp_path, ws, place, tight)
    config = load(ws, config_file=config_file, env=env)
    assert not config.requirements.is_empty
    held = {v.key: v.held for v in config.show() if v.held}
    assert f"requirements.{key}" in held.values(), held


def test_an_agent_definition_may_not_name_a_model_the_floor_excludes(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, 'models = ["claude-*", "scripted"]')
    (ws / "io.local.toml").write_text('[agents.reviewer]\nmodel = "gpt-5"\n')
    with pytest.raises(RequirementError) as exc:
        load(ws, env=env)
    _refused(exc, "models", "agent definition 'reviewer' in local scope", env["IO_SYSTEM_CONFIG"])
    (ws / "io.local.toml").write_text('[agents.reviewer]\nmodel = "claude-haiku"\n')
    assert load(ws, env=env).agents["reviewer"].model == "claude-haiku"


@pytest.mark.parametrize("scope", ["project", "local", "user"])
def test_requirements_in_any_scope_but_the_system_are_refused(tmp_path: Path, scope: str) -> None:
    ws, env = _setup(tmp_path, "max_steps = 20")
    target = {"project": ws / "io.toml", "local": ws / "io.local.toml",
              "user": tmp_path / "home" / ".config" / "io" / "io.toml"}[scope]
    target.parent.mkdir(parents=True, exist_ok=True)
    text = target.read_text() if target.exists() else ""
    target.write_text(text + "[requirements]\nmax_steps = 1000\n")
    with pytest.raises(RequirementError) as exc:
        load(ws, env=env)
    assert f"{scope} scope" in str(exc.value) and "only the system scope" in str(exc.value)


def test_defaults_beyond_the_floor_take_the_floor_and_show_as_held(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, 'max_steps = 20\nmax_tokens = 1000\nsandbox_backends = ["native"]'
                               '\napproval = ["deny"]\nmax_tier = "read-only"\nparallel = 1')
    config = load(ws, env=env)
    assert config.budget.max_steps == 20 and config.budget.max_tokens == 1000
    assert config.sandbox.backend.value == "native"
    assert config.policy.approval.value == "deny" and config.policy.tier.value == "read-only"
    assert config.agent_limits.parallel == 1
    shown = {v.key: v for v in config.show()}
    assert shown["budget.max_steps"].held == "requirements.max_steps"
    assert shown["budget.max_steps"].scope.value == "system"
    assert shown["provider.kind"].held is None


def test_a_value_within_the_floor_is_kept_as_set(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, "max_steps = 20")
    (ws / "io.local.toml").write_text("[budget]\nmax_steps = 7\n")
    assert load(ws, env=env).budget.max_steps == 7


def test_a_required_hook_that_no_scope_defines_is_refused(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, 'hooks = ["audit"]')
    with pytest.raises(RequirementError) as exc:
        load(ws, env=env)
    assert "requirements.hooks" in str(exc.value) and "'audit'" in str(exc.value)
    (ws / "io.local.toml").write_text('[[hooks]]\nname = "audit"\nevent = "stop"'
                                      '\ncommand = ["/bin/true"]\n')
    with pytest.raises(RequirementError, match="only the local scope"):
        load(ws, env=env)  # a lower scope's hook cannot stand in for the floor's
    system = Path(env["IO_SYSTEM_CONFIG"])
    system.write_text(system.read_text() + '[[hooks]]\nname = "audit"\nevent = "run_start"'
                      '\ncommand = ["/bin/true"]\n')
    (ws / "io.local.toml").write_text('[[hooks]]\nname = "lint"\nevent = "stop"'
                                      '\ncommand = ["/bin/true"]\n')
    config = load(ws, env=env)
    assert [h.name for h in config.hooks] == ["audit", "lint"]
    held = {v.key: v.held for v in config.show() if v.key.startswith("hooks")}
    assert held["hooks[0].name"] == "requirements.hooks" and held["hooks[1].name"] is None


def test_required_telemetry_fills_the_endpoint_and_refuses_the_environment_switch(
        tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, 'telemetry_endpoint = "http://127.0.0.1:4318"')
    config = load(ws, env=env)
    assert config.telemetry is not None
    assert config.telemetry.endpoint == "http://127.0.0.1:4318/v1/traces"
    with pytest.raises(RequirementError) as exc:
        load(ws, env={**env, "OTEL_SDK_DISABLED": "true"})
    assert "the environment" in str(exc.value)
    with pytest.raises(RequirementError) as exc:
        load(ws, env={**env, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://elsewhere:4318"})
    assert "requirements.telemetry_endpoint" in str(exc.value)


def test_telemetry_required_without_any_endpoint_is_refused(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, "telemetry = true")
    with pytest.raises(RequirementError, match="otlp_endpoint"):
        load(ws, env=env)


def test_an_io_version_outside_the_range_is_refused(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, 'io_version = ">=99"')
    with pytest.raises(RequirementError) as exc:
        load(ws, env=env)
    assert "requirements.io_version" in str(exc.value) and "the io program" in str(exc.value)
    ws2, env2 = _setup(tmp_path / "ok", 'io_version = ">=0.1,<99"')
    assert load(ws2, env=env2).requirements.io_version == ">=0.1,<99"


def test_a_cost_ceiling_without_prices_fails_closed(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, "max_cost_usd = 5")
    system = Path(env["IO_SYSTEM_CONFIG"])
    system.write_text("[requirements]\nmax_cost_usd = 5\n")
    with pytest.raises(RequirementError, match=r"\[prices\]"):
        load(ws, env=env)


def test_the_vendor_host_counts_when_no_base_url_is_set(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, 'base_url_hosts = ["127.0.0.1"]')
    (ws / "io.toml").write_text('[provider]\nkind = "anthropic"\nmodel = "claude-x"\n')
    with pytest.raises(RequirementError, match="the vendor's own host api.anthropic.com"):
        load(ws, env=env)


def test_the_system_scope_itself_is_held_to_its_requirements(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, "max_steps = 20")
    system = Path(env["IO_SYSTEM_CONFIG"])
    system.write_text(system.read_text() + "[budget]\nmax_steps = 40\n")
    with pytest.raises(RequirementError, match="system scope"):
        load(ws, env=env)


@pytest.mark.parametrize(("lines", "fragment"), [
    ("max_stepz = 3", "unknown key 'requirements.max_stepz'"),
    ('max_tier = "root"', "unknown policy tier"),
    ('max_steps = "ten"', "must be a number"),
    ('sandbox_backends = ["chroot"]', "requirements.sandbox_backends"),
    ('io_version = "soon"', "not a version range"),
    ('[[requirements.mcp]]\nname = "x"', "exactly one of command and url"),
])
def test_a_malformed_requirement_is_a_config_error_naming_the_key(
        tmp_path: Path, lines: str, fragment: str) -> None:
    ws, env = _setup(tmp_path, lines)
    with pytest.raises(ConfigError, match=fragment):
        load(ws, env=env)


def test_no_requirements_is_an_empty_floor(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, "")
    config: Config = load(ws, env=env)
    assert config.requirements == Requirements(source=Path(env["IO_SYSTEM_CONFIG"]))
    assert config.requirements.is_empty
    assert all(v.held is None for v in config.show())


def test_pydantic_validation_refuses_the_same_loosening(tmp_path: Path) -> None:
    ws, env = _setup(tmp_path, "max_steps = 20")
    (ws / "io.local.toml").write_text("[budget]\nmax_steps = 500\n")
    with pytest.raises(RequirementError, match="requirements.max_steps"):
        load(ws, env=env, validator="pydantic")
    (ws / "io.local.toml").write_text("[budget]\nmax_steps = 5\n")
    assert load(ws, env=env, validator="pydantic").budget.max_steps == 5



def test_the_vendor_hosts_are_the_providers_own_default_urls() -> None:
    import importlib
    from urllib.parse import urlsplit

    from harness_core.config._requirements import _DEFAULT_HOSTS
    from harness_core.providers import PROVIDER_KINDS

    for kind, target in PROVIDER_KINDS.items():
        module, _, name = target.partition(":")
        provider = getattr(importlib.import_module(module), name)
        url = getattr(provider, "default_base_url", None)
        expected = None if url is None else urlsplit(url).hostname
        assert _DEFAULT_HOSTS.get(kind) == expected, kind


def test_the_environment_cannot_swap_out_a_system_file_that_holds_a_floor(
        tmp_path: Path) -> None:
    from harness_core.config._load import guard_system_scope

    default = tmp_path / "etc-io.toml"  # stands in for /etc/io/io.toml
    other = tmp_path / "mine.toml"
    other.write_text("")
    env = {"IO_SYSTEM_CONFIG": str(other)}
    guard_system_scope(env, default)  # no file there: nothing to keep
    default.write_text("[budget]\nmax_steps = 9\n")
    guard_system_scope(env, default)  # a system file without a floor may be replaced
    default.write_text("[requirements]\nmax_steps = 9\n")
    with pytest.raises(RequirementError) as exc:
        guard_system_scope(env, default)
    assert "IO_SYSTEM_CONFIG" in exc.value.tried_by and str(default) in str(exc.value)
    guard_system_scope({"IO_SYSTEM_CONFIG": str(default)}, default)  # naming it is fine
    guard_system_scope({}, default)
