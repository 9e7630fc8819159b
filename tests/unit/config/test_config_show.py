"""`show()` and `redact()`: every value with its scope, and no secret anywhere."""

from __future__ import annotations

import json
from pathlib import Path

from harness_core.config import Config, Scope, load, render

KEY = "sk-live-0123456789abcdef"
TOKEN = "ghp_mcp_token_value_42"


def _load(tmp_path: Path, text: str, **extra: str) -> Config:
    (tmp_path / "io.toml").write_text(text, encoding="utf-8")
    env = {"IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path / "home"), **extra}
    return load(tmp_path, env=env)


TEXT = """
[provider]
kind = "openai"
model = "m"
api_key = "${env:KEY}"
base_url = "https://${env:HOSTNAME_SECRET}/v1"
[[mcp]]
name = "gh"
command = "gh-mcp"
env = { GITHUB_TOKEN = "${env:TOKEN}", LITERAL = "literal-credential" }
"""


def test_show_reports_every_value_with_scope_and_file(tmp_path: Path) -> None:
    config = _load(tmp_path, TEXT, KEY=KEY, TOKEN=TOKEN, HOSTNAME_SECRET="internal-gw")
    shown = {v.key: v for v in config.show()}
    assert shown["provider.model"].value == "m"
    assert shown["provider.model"].scope is Scope.PROJECT
    assert shown["provider.model"].file == tmp_path / "io.toml"
    assert shown["mcp[0].name"].value == "gh"


def test_secrets_are_redacted_in_show(tmp_path: Path) -> None:
    config = _load(tmp_path, TEXT, KEY=KEY, TOKEN=TOKEN, HOSTNAME_SECRET="internal-gw")
    shown = {v.key: v.value for v in config.show()}
    assert shown["provider.api_key"] == "***"
    assert shown["provider.base_url"] == "https://***/v1"
    assert shown["mcp[0].env"] == {"GITHUB_TOKEN": "***", "LITERAL": "***"}
    text = render(config.show()) + json.dumps([v.to_json() for v in config.show()])
    for secret in (KEY, TOKEN, "internal-gw", "literal-credential"):
        assert secret not in text
        assert secret not in repr(config)


def test_resolved_values_are_kept_for_the_caller(tmp_path: Path) -> None:
    config = _load(tmp_path, TEXT, KEY=KEY, TOKEN=TOKEN, HOSTNAME_SECRET="internal-gw")
    assert config.provider is not None and config.provider_for_run().api_key == KEY
    assert config.mcp[0].env["GITHUB_TOKEN"] == TOKEN
    assert {TOKEN, "internal-gw", "literal-credential"} <= config.secrets
    assert config.redact(KEY) == "***"  # resolved when the provider is (#23), still a secret


def test_redact_removes_every_secret_from_free_text(tmp_path: Path) -> None:
    config = _load(tmp_path, TEXT, KEY=KEY, TOKEN=TOKEN, HOSTNAME_SECRET="internal-gw")
    line = f"Authorization: Bearer {KEY}; token={TOKEN}; url=https://internal-gw/v1"
    assert config.redact(line) == "Authorization: Bearer ***; token=***; url=https://***/v1"


def test_short_values_are_not_scrubbed_from_free_text_but_hidden_under_secret_keys(
    tmp_path: Path,
) -> None:
    text = '[[mcp]]\nname = "t"\ncommand = "x"\nenv = { TZ = "UTC" }\nargs = ["UTC"]\n'
    config = _load(tmp_path, text)
    shown = {v.key: v.value for v in config.show()}
    assert shown["mcp[0].env"] == {"TZ": "***"}
    assert shown["mcp[0].args"] == ["UTC"]
    assert config.redact("UTC 12:00") == "UTC 12:00"


def test_show_is_json_able(tmp_path: Path) -> None:
    text = '[prices]\nas_of = 2026-01-02\n[store]\npath = "s.db"\n[budget]\nmax_steps = false\n'
    config = _load(tmp_path, text)
    values = {v.key: v.value for v in config.show()}
    assert values["prices.as_of"] == "2026-01-02"
    assert values["store.path"] == str(tmp_path / "s.db")
    assert values["budget.max_steps"] is None
    json.dumps([v.to_json() for v in config.show()])


def test_to_toml_round_trips_to_the_same_typed_config(tmp_path: Path) -> None:
    user = tmp_path / "xdg" / "io"
    user.mkdir(parents=True)
    (user / "io.toml").write_text('[policy]\ndeny_exec = ["git push*"]\ntier = "read-only"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "replay.jsonl").write_text("{}\n")
    (ws / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n'
        '[policy]\nallow_exec = ["pytest*"]\ntier = "full"\n'
        "[budget]\nmax_steps = false\nmax_tokens = 99\n"
        '[prices]\nas_of = 2026-01-02\n[prices.models."a.b"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n'
        '[[contract.verify]]\ncommand = "true"\n[agents]\nparallel = 2\n[agents.rev]\nrole = "r"\n'
    )
    env = {"IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path / "home"),
           "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    first = load(ws, env=env)
    merged = tmp_path / "merged.toml"
    merged.write_text(first.to_toml())
    other = tmp_path / "other"
    other.mkdir()
    second = load(other, config_file=merged, env={**env, "XDG_CONFIG_HOME": str(tmp_path / "no")})
    assert second.budget == first.budget and second.prices == first.prices
    assert second.provider == first.provider and second.contract == first.contract
    assert second.agents == first.agents and second.agent_limits == first.agent_limits
    # One file now holds every scope's rules; order does not decide (a deny always wins).
    assert {(r.effect, r.kind, r.pattern) for r in second.policy.rules} == {
        (r.effect, r.kind, r.pattern) for r in first.policy.rules}
    assert second.policy.tier == first.policy.tier
