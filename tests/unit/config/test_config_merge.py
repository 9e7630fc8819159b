"""Four real scope files: discovery, precedence, merging, policy layers, the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core.config import ConfigFile, Scope, discover, load
from harness_core.errors import ConfigError
from harness_core.policy import Act, Verdict


class Scopes:
    """Four scope files in tmp_path, placed the way an operator's machine has them."""

    def __init__(self, tmp_path: Path) -> None:
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir()
        self.system = tmp_path / "etc" / "io.toml"
        self.xdg = tmp_path / "xdg"
        self.user = self.xdg / "io" / "io.toml"
        self.project = self.workspace / "io.toml"
        self.local = self.workspace / "io.local.toml"
        self.env = {
            "IO_SYSTEM_CONFIG": str(self.system),
            "XDG_CONFIG_HOME": str(self.xdg),
            "HOME": str(tmp_path / "home"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
        }

    def write(self, scope: Scope, text: str) -> Path:
        path = {
            Scope.SYSTEM: self.system,
            Scope.USER: self.user,
            Scope.PROJECT: self.project,
            Scope.LOCAL: self.local,
        }[scope]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


@pytest.fixture
def scopes(tmp_path: Path) -> Scopes:
    return Scopes(tmp_path)


def test_discover_returns_only_existing_files_lowest_first(scopes: Scopes) -> None:
    assert discover(scopes.workspace, env=scopes.env) == ()
    scopes.write(Scope.LOCAL, "")
    scopes.write(Scope.SYSTEM, "")
    found = discover(scopes.workspace, env=scopes.env)
    assert found == (
        ConfigFile(Scope.SYSTEM, scopes.system),
        ConfigFile(Scope.LOCAL, scopes.local),
    )


def test_user_scope_defaults_to_home_dot_config(scopes: Scopes, tmp_path: Path) -> None:
    user = tmp_path / "home" / ".config" / "io" / "io.toml"
    user.parent.mkdir(parents=True)
    user.write_text("", encoding="utf-8")
    env = {k: v for k, v in scopes.env.items() if k != "XDG_CONFIG_HOME"}
    assert discover(scopes.workspace, env=env) == (ConfigFile(Scope.USER, user),)


def test_relative_xdg_config_home_is_ignored(scopes: Scopes, tmp_path: Path) -> None:
    user = tmp_path / "home" / ".config" / "io" / "io.toml"
    user.parent.mkdir(parents=True)
    user.write_text("", encoding="utf-8")
    env = {**scopes.env, "XDG_CONFIG_HOME": "relative/dir"}
    assert discover(scopes.workspace, env=env) == (ConfigFile(Scope.USER, user),)


def test_config_flag_replaces_the_project_file_and_keeps_local(
    scopes: Scopes, tmp_path: Path
) -> None:
    scopes.write(Scope.PROJECT, "[budget]\nmax_steps = 3\n")
    scopes.write(Scope.LOCAL, "[budget]\nmax_tokens = 99\n")
    other = tmp_path / "ci.toml"
    other.write_text("[budget]\nmax_steps = 7\n", encoding="utf-8")
    config = load(scopes.workspace, config_file=other, env=scopes.env)
    assert [f.path for f in config.files] == [other, scopes.local]
    assert config.budget.max_steps == 7
    assert config.budget.max_tokens == 99


def test_higher_scope_wins_each_scalar_and_tables_merge_key_by_key(scopes: Scopes) -> None:
    scopes.write(Scope.SYSTEM, "[budget]\nmax_steps = 1\nmax_tokens = 10\nwall_seconds = 5\n")
    scopes.write(Scope.USER, "[budget]\nmax_steps = 2\nmax_tokens = 20\n")
    scopes.write(Scope.PROJECT, "[budget]\nmax_steps = 3\n")
    scopes.write(Scope.LOCAL, "[budget]\nmax_steps = 4\n[sandbox]\nmemory_mb = 64\n")
    config = load(scopes.workspace, env=scopes.env)
    assert config.budget.max_steps == 4
    assert config.budget.max_tokens == 20
    assert config.budget.wall_seconds == 5.0
    assert config.sandbox.limits.memory_mb == 64
    assert config.sandbox.limits.cpu_seconds == 300  # the typed default
    shown = {(v.key, v.scope, v.file) for v in config.show()}
    assert ("budget.max_steps", Scope.LOCAL, scopes.local) in shown
    assert ("budget.max_tokens", Scope.USER, scopes.user) in shown
    assert ("budget.wall_seconds", Scope.SYSTEM, scopes.system) in shown
    assert not any(
        v.key == "budget.max_steps" and v.scope is not Scope.LOCAL for v in config.show()
    )


def test_array_of_tables_is_replaced_wholesale_by_the_higher_scope(scopes: Scopes) -> None:
    scopes.write(
        Scope.USER,
        '[[contract.verify]]\ncommand = "a"\n[[contract.verify]]\ncommand = "b"\n'
        '[[mcp]]\nname = "one"\ncommand = "x"\n',
    )
    scopes.write(Scope.PROJECT, '[contract]\ngoal = "g"\n[[contract.verify]]\ncommand = "c"\n')
    config = load(scopes.workspace, env=scopes.env)
    assert [g.command for g in config.contract.verify] == ["c"]
    assert config.contract.goal == "g"
    assert [s.name for s in config.mcp] == ["one"]


def test_provider_fallback_is_replaced_wholesale(scopes: Scopes) -> None:
    scopes.write(
        Scope.USER,
        '[provider]\nkind = "openai"\nmodel = "u"\n'
        '[[provider.fallback]]\nkind = "openai"\nmodel = "f1"\n'
        '[[provider.fallback]]\nkind = "openai"\nmodel = "f2"\n',
    )
    scopes.write(
        Scope.LOCAL,
        '[provider]\nmodel = "l"\n[[provider.fallback]]\nkind = "anthropic"\nmodel = "f3"\n',
    )
    provider = load(scopes.workspace, env=scopes.env).provider
    assert provider is not None
    assert (provider.kind, provider.model) == ("openai", "l")
    assert [(f.kind, f.model) for f in provider.fallback] == [("anthropic", "f3")]


def test_policy_rules_of_every_scope_are_kept_with_their_layer(scopes: Scopes) -> None:
    scopes.write(Scope.SYSTEM, '[policy]\ndeny_exec = ["git push*"]\n')
    scopes.write(Scope.USER, '[policy]\nallow_exec = ["pytest*"]\n')
    scopes.write(Scope.PROJECT, '[policy]\nallow_exec = ["make*"]\ntier = "read-only"\n')
    scopes.write(Scope.LOCAL, '[policy]\nallow_exec = ["git push*"]\ntier = "full"\n')
    policy = load(scopes.workspace, env=scopes.env).policy
    assert [(r.effect.value, r.pattern, r.layer) for r in policy.rules] == [
        ("deny", "git push*", "system"),
        ("allow", "pytest*", "user"),
        ("allow", "make*", "project"),
        ("allow", "git push*", "local"),
    ]
    assert policy.tier.value == "full"


def test_deny_in_a_lower_scope_beats_allow_in_a_higher_one(scopes: Scopes) -> None:
    scopes.write(Scope.SYSTEM, '[policy]\ndeny_exec = ["git push*"]\ndeny_net = ["evil.example"]\n')
    scopes.write(
        Scope.LOCAL,
        '[policy]\ntier = "full"\nallow_exec = ["git*"]\nallow_net = ["*"]\n',
    )
    policy = load(scopes.workspace, env=scopes.env).policy
    push = policy.check(Act.exec(["git", "push", "origin"]))
    assert push.verdict is Verdict.DENY
    assert (push.rule, push.layer) == ("git push*", "system")
    assert policy.check(Act.exec(["git", "status"])).verdict is Verdict.ALLOW
    assert policy.check(Act.net("evil.example")).layer == "system"
    assert policy.check(Act.net("pypi.org")).verdict is Verdict.ALLOW


def test_show_lists_policy_rules_once_per_scope(scopes: Scopes) -> None:
    scopes.write(Scope.USER, '[policy]\ndeny_read = ["a"]\n')
    scopes.write(Scope.PROJECT, '[policy]\ndeny_read = ["b"]\n')
    shown = [
        (v.value, v.scope)
        for v in load(scopes.workspace, env=scopes.env).show()
        if v.key == "policy.deny_read"
    ]
    assert shown == [(["a"], Scope.USER), (["b"], Scope.PROJECT)]


def test_agent_definitions_merge_key_by_key(scopes: Scopes) -> None:
    scopes.write(Scope.USER, '[agents.rev]\nmodel = "m1"\nrole = "r"\n')
    scopes.write(Scope.PROJECT, '[agents.rev]\nmodel = "m2"\n[agents.other]\ndeny_net = ["*"]\n')
    agents = load(scopes.workspace, env=scopes.env).agents
    assert (agents["rev"].model, agents["rev"].role) == ("m2", "r")
    assert agents["other"].deny_net == ("*",)


def test_prices_merge_per_model(scopes: Scopes) -> None:
    scopes.write(
        Scope.USER,
        "[prices]\nas_of = 2026-01-01\n[prices.models.a]\ninput_per_mtok = 1\noutput_per_mtok = 2\n",
    )
    scopes.write(Scope.PROJECT, "[prices.models.b]\ninput_per_mtok = 3\noutput_per_mtok = 4\n")
    prices = load(scopes.workspace, env=scopes.env).prices
    assert prices is not None
    assert sorted(prices.models) == ["a", "b"]
    assert str(prices.as_of) == "2026-01-01"


def test_store_path_precedence(scopes: Scopes, tmp_path: Path) -> None:
    env = dict(scopes.env)
    assert load(scopes.workspace, env=env).store_path == tmp_path / "state" / "io" / "state.db"
    del env["XDG_STATE_HOME"]
    expected = tmp_path / "home" / ".local" / "state" / "io" / "state.db"
    assert load(scopes.workspace, env=env).store_path == expected
    scopes.write(Scope.USER, '[store]\npath = "stores/s.db"\n')
    assert load(scopes.workspace, env=env).store_path == scopes.user.parent / "stores" / "s.db"
    env["IO_STORE"] = str(tmp_path / "forced.db")
    assert load(scopes.workspace, env=env).store_path == tmp_path / "forced.db"


def test_store_inside_workspace_is_protected_from_writes(scopes: Scopes) -> None:
    scopes.write(Scope.PROJECT, '[store]\npath = ".io/state.db"\n[policy]\nallow_write = ["**"]\n')
    config = load(scopes.workspace, env=scopes.env)
    assert config.store_path == scopes.workspace / ".io" / "state.db"
    for name in (".io/state.db", ".io/state.db-wal", ".io/state.db-shm"):
        assert name in config.policy.protected
        assert config.policy.check(Act.write(name)).verdict is Verdict.DENY
    assert config.policy.check(Act.write("src/x.py")).verdict is Verdict.ALLOW


def test_store_outside_workspace_adds_no_protected_path(scopes: Scopes) -> None:
    assert load(scopes.workspace, env=scopes.env).policy.protected == ()


def test_config_flag_file_inside_workspace_is_protected(scopes: Scopes) -> None:
    ci = scopes.workspace / "ci" / "io-ci.toml"
    ci.parent.mkdir()
    ci.write_text("[policy]\nallow_write = ['**']\n", encoding="utf-8")
    policy = load(scopes.workspace, config_file=ci, env=scopes.env).policy
    assert policy.check(Act.write("ci/io-ci.toml")).verdict is Verdict.DENY


def test_missing_config_flag_file_fails_discovery(scopes: Scopes) -> None:
    with pytest.raises(ConfigError):
        discover(scopes.workspace, config_file=scopes.workspace / "nope.toml", env=scopes.env)
