"""Every kind of config mistake is one ConfigError naming key, scope and file."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core.config import Config, load
from harness_core.errors import ConfigError

SECRET = "s3cr3t-value-that-must-not-leak"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "IO_SYSTEM_CONFIG": str(tmp_path / "no-system.toml"),
        "HOME": str(tmp_path / "home"),
        **extra,
    }


def _load_project(tmp_path: Path, text: str, **env: str) -> Config:
    (tmp_path / "io.toml").write_text(text, encoding="utf-8")
    return load(tmp_path, env=_env(tmp_path, **env))


def _error(tmp_path: Path, text: str, **env: str) -> str:
    with pytest.raises(ConfigError) as info:
        _load_project(tmp_path, text, **env)
    message = str(info.value)
    assert SECRET not in message
    return message


def test_unknown_key_names_key_scope_and_file(tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_text('[policy]\nalow_exec = ["pytest*"]\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(tmp_path, env=_env(tmp_path))
    assert str(info.value) == (
        f"unknown key 'policy.alow_exec' in project scope ({tmp_path / 'io.toml'})"
    )
    assert info.value.hint is not None and "did you mean 'policy.allow_exec'?" in info.value.hint


def test_unknown_table_is_an_error(tmp_path: Path) -> None:
    assert "unknown key 'polcy'" in _error(tmp_path, "[polcy]\ntier = 'full'\n")


def test_unknown_key_inside_mcp_entry_is_an_error(tmp_path: Path) -> None:
    text = '[[mcp]]\nname = "t"\ncommand = "x"\ncomand = "y"\n'
    assert "unknown key 'mcp[0].comand' in project scope" in _error(tmp_path, text)


def test_unknown_key_inside_agent_names_the_agent(tmp_path: Path) -> None:
    text = '[agents.reviewer]\nallow_write = ["**"]\n'
    assert "unknown key 'agents.reviewer.allow_write'" in _error(tmp_path, text)


@pytest.mark.parametrize(
    ("text", "key", "expected", "got"),
    [
        ('[budget]\nmax_steps = "ten"\n', "budget.max_steps", "integer or false", "string"),
        ("[budget]\nmax_steps = true\n", "budget.max_steps", "integer or false", "boolean"),
        ("[budget]\nmax_steps = 1.5\n", "budget.max_steps", "integer or false", "float"),
        ('[sandbox]\nnetwork = "yes"\n', "sandbox.network", "boolean", "string"),
        ("[policy]\ndeny_read = [1, 2]\n", "policy.deny_read", "array of strings", "array"),
        ('[policy]\ndeny_read = "secrets/**"\n', "policy.deny_read", "array of strings", "string"),
        ("[provider]\nmodel = 4\n", "provider.model", "string", "integer"),
        ('policy = "full"\n', "policy", "table", "string"),
        ('[contract]\nverify = "pytest"\n', "contract.verify", "array of tables", "string"),
        ("[prices]\nas_of = 2026-01-01T00:00:00Z\n", "prices.as_of", "date", "datetime"),
        ("[web]\nsearch = 1\n", "web.search", "boolean", "integer"),
    ],
)
def test_wrong_type_names_key_expected_type_scope_and_file(
    tmp_path: Path, text: str, key: str, expected: str, got: str
) -> None:
    message = _error(tmp_path, text)
    assert message.startswith(f"wrong type for '{key}' in project scope ({tmp_path / 'io.toml'})")
    assert f"expected {expected}" in message
    assert message.endswith(f"got {got}")


def test_malformed_toml_names_file_line_and_column(tmp_path: Path) -> None:
    message = _error(tmp_path, "[budget]\nmax_steps = 3\nwall_seconds = = 4\n")
    assert f"malformed TOML in project scope ({tmp_path / 'io.toml'})" in message
    assert "at line 3, column 16" in message


def test_file_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_bytes(b'[contract]\ngoal = "\xff"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load(tmp_path, env=_env(tmp_path))


def test_unset_env_names_variable_key_scope_and_file(tmp_path: Path) -> None:
    # A provider key is resolved when the provider is built, not at load (#23).
    config = _load_project(
        tmp_path, '[provider]\nkind = "openai"\nmodel = "m"\napi_key = "${env:NOPE_KEY}"\n')
    with pytest.raises(ConfigError) as info:
        config.provider_for_run()
    message = str(info.value)
    assert "'provider.api_key'" in message
    assert f"project scope ({tmp_path / 'io.toml'})" in message
    assert "NOPE_KEY is not set" in message


def test_empty_env_value_is_an_error_not_an_empty_string(tmp_path: Path) -> None:
    message = _error(tmp_path, '[policy]\ndeny_read = ["${env:EMPTY}"]\n', EMPTY="")
    assert "'policy.deny_read[0]'" in message
    assert "${env:EMPTY} resolves to an empty value" in message


def test_unreadable_file_substitution_names_the_path(tmp_path: Path) -> None:
    message = _error(tmp_path, '[contract]\ngoal = "${file:missing/goal.txt}"\n')
    assert "'contract.goal'" in message
    assert str(tmp_path / "missing" / "goal.txt") in message
    assert "No such file" in message


def test_file_substitution_of_a_directory_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    assert "cannot read ${file:adir}" in _error(tmp_path, '[contract]\ngoal = "${file:adir}"\n')


def test_file_holding_only_a_newline_is_empty(tmp_path: Path) -> None:
    (tmp_path / "key.txt").write_text("\n", encoding="utf-8")
    text = '[provider]\nkind = "openai"\nmodel = "m"\napi_key = "${file:key.txt}"\n'
    config = _load_project(tmp_path, text)
    with pytest.raises(ConfigError, match=r"\$\{file:key.txt\} resolves to an empty value"):
        config.provider_for_run()


def test_file_substitution_that_is_not_utf8_does_not_echo_bytes(tmp_path: Path) -> None:
    (tmp_path / "key.bin").write_bytes(SECRET.encode() + b"\xff")
    message = _error(tmp_path, '[contract]\ngoal = "${file:key.bin}"\n')
    assert "is not UTF-8 text" in message


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("${nope:X}", "unknown substitution '${nope:X}'"),
        ("${env:}", "unknown substitution '${env:}'"),
        ("${HOME}", "unknown substitution '${HOME}'"),
        ("abc ${env:HOME", "unterminated '${'"),
    ],
)
def test_malformed_substitution_is_an_error(tmp_path: Path, value: str, fragment: str) -> None:
    assert fragment in _error(tmp_path, f'[contract]\ngoal = "{value}"\n')


def test_missing_as_of_in_prices_is_an_error(tmp_path: Path) -> None:
    text = '[prices.models."m"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n'
    message = _error(tmp_path, text)
    assert "missing key 'prices.as_of'" in message
    assert f"project scope ({tmp_path / 'io.toml'})" in message


def test_price_without_output_price_is_an_error(tmp_path: Path) -> None:
    text = '[prices]\nas_of = "2026-01-01"\n[prices.models."m"]\ninput_per_mtok = 1.0\n'
    assert "missing key 'prices.models.m.output_per_mtok'" in _error(tmp_path, text)


def test_as_of_string_must_be_a_date(tmp_path: Path) -> None:
    assert "YYYY-MM-DD" in _error(tmp_path, '[prices]\nas_of = "November 2026"\n')


def test_config_flag_pointing_to_missing_file_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.toml"
    with pytest.raises(ConfigError, match="does not exist") as info:
        load(tmp_path, config_file=missing, env=_env(tmp_path))
    assert str(missing) in str(info.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('[policy]\ntier = "sometimes"\n', "'policy.tier' in project scope"),
        ('[policy]\napproval = "maybe"\n', "is not one of ask, deny"),
        ('[provider]\nkind = "gemini"\n', "is not one of anthropic, openai, openai-responses, openrouter, scripted"),
        ('[sandbox]\nbackend = "docker"\n', "is not one of auto, native, floor, off"),
        ('[[contract.verify]]\nkind = "vibes"\n', "'contract.verify[0].kind'"),
    ],
)
def test_value_outside_its_choices_is_an_error(tmp_path: Path, text: str, fragment: str) -> None:
    assert fragment in _error(tmp_path, text)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[budget]\nmax_steps = 0\n", "budget.max_steps"),
        ("[provider]\nmax_retries = -1\n", "provider.max_retries"),
        ("[run]\nstall_window = 1\n", "run.stall_window"),
        ("[budget]\nmax_cost_usd = -0.5\n", "budget.max_cost_usd"),
        ("[budget]\nmax_cost_usd = nan\n", "budget.max_cost_usd"),
        ("[sandbox]\nwall_seconds = inf\n", "sandbox.wall_seconds"),
    ],
)
def test_number_below_its_minimum_is_an_error(tmp_path: Path, text: str, key: str) -> None:
    assert f"'{key}' in project scope" in _error(tmp_path, text)


def test_substituted_secret_never_appears_in_an_error(tmp_path: Path) -> None:
    message = _error(tmp_path, '[policy]\ntier = "${env:TIER}"\n', TIER=SECRET)
    assert "***" in message


def test_secret_in_a_bad_pattern_never_appears_in_an_error(tmp_path: Path) -> None:
    message = _error(tmp_path, '[policy]\ndeny_read = ["${env:P}["]\n', P=SECRET)
    assert "'policy.deny_read[0]' in project scope" in message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('[provider]\nmodel = "m"\n', "missing key 'provider.kind'"),
        ('[provider]\nkind = "anthropic"\n', "missing key 'provider.model'"),
        ('[provider]\nkind = "scripted"\n', "missing key 'provider.script'"),
        (
            '[provider]\nkind = "scripted"\nscript = "r.jsonl"\n[[provider.fallback]]\nkind = "openai"\n',
            "missing key 'provider.fallback[0].model'",
        ),
        ("[[contract.verify]]\ntimeout_seconds = 5\n", "missing key 'contract.verify[0].command'"),
        ('[[mcp]]\nname = "x"\n', "missing key 'mcp[0].command'"),
        ('[[mcp]]\ncommand = "x"\n', "missing key 'mcp[0].name'"),
    ],
)
def test_missing_required_key_is_an_error(tmp_path: Path, text: str, fragment: str) -> None:
    message = _error(tmp_path, text)
    assert fragment in message
    assert f"project scope ({tmp_path / 'io.toml'})" in message


def test_two_mcp_servers_with_one_name_is_an_error(tmp_path: Path) -> None:
    text = '[[mcp]]\nname = "a"\ncommand = "x"\n[[mcp]]\nname = "a"\ncommand = "y"\n'
    assert "two [[mcp]] servers are named 'a'" in _error(tmp_path, text)


def test_malformed_policy_pattern_names_key_scope_and_file(tmp_path: Path) -> None:
    message = _error(tmp_path, '[policy]\ndeny_write = ["ok/**", "bad["]\n')
    assert message.startswith(f"'policy.deny_write[1]' in project scope ({tmp_path / 'io.toml'})")


def test_empty_path_value_is_an_error(tmp_path: Path) -> None:
    assert "must not be empty" in _error(tmp_path, '[store]\npath = ""\n')


def test_first_problem_is_reported_from_the_lowest_scope(tmp_path: Path) -> None:
    system = tmp_path / "system.toml"
    system.write_text("[budget]\nmax_stepz = 1\n", encoding="utf-8")
    (tmp_path / "io.toml").write_text("[budget]\nmax_stepx = 1\n", encoding="utf-8")
    env = _env(tmp_path, IO_SYSTEM_CONFIG=str(system))
    with pytest.raises(ConfigError) as info:
        load(tmp_path, env=env)
    assert str(info.value) == f"unknown key 'budget.max_stepz' in system scope ({system})"


def test_no_store_location_at_all_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot place the store"):
        load(tmp_path, env={"IO_SYSTEM_CONFIG": str(tmp_path / "none")})


def test_scope_file_that_cannot_be_read_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "io.toml").mkdir()
    with pytest.raises(ConfigError) as info:
        load(tmp_path, env=_env(tmp_path))
    assert str(info.value).startswith(f"cannot read project scope ({tmp_path / 'io.toml'})")
