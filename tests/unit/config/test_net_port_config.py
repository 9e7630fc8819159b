"""A net rule's port in io.toml: a bad one is a config error naming key, scope and file (#9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core.config import load
from harness_core.errors import ConfigError
from harness_core.policy import Act, Verdict
from tests.conftest import run_io


def env_for(tmp_path: Path) -> dict[str, str]:
    return {
        "IO_SYSTEM_CONFIG": str(tmp_path / "none.toml"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }


@pytest.mark.parametrize(
    ("rules", "key", "port"),
    [
        ('allow_net = ["pypi.org:0"]', "policy.allow_net[0]", "'0'"),
        ('allow_net = ["pypi.org", "pypi.org:65536"]', "policy.allow_net[1]", "'65536'"),
        ('deny_net = ["evil.example:http"]', "policy.deny_net[0]", "'http'"),
        ('deny_net = ["[::1]:70000"]', "policy.deny_net[0]", "'70000'"),
    ],
)
def test_a_bad_port_names_key_scope_and_file(
    tmp_path: Path, rules: str, key: str, port: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(f"[policy]\n{rules}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load(ws, env=env_for(tmp_path))
    message = caught.value.message
    assert f"'{key}'" in message
    assert f"project scope ({ws / 'io.toml'})" in message
    assert f"port {port}" in message
    assert caught.value.hint is not None and "1 to 65535" in caught.value.hint


def test_a_bad_port_in_the_local_scope_names_that_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text('[policy]\nallow_net = ["pypi.org:443"]\n', encoding="utf-8")
    (ws / "io.local.toml").write_text('[policy]\ndeny_net = ["x.example:0"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'policy\.deny_net\[0\]' in local scope \(.*io\.local\.toml\)"):
        load(ws, env=env_for(tmp_path))


def test_an_agent_deny_net_port_is_checked_at_load(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(
        '[agents.reviewer]\ndeny_net = ["*", "x.example:99999"]\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError) as caught:
        load(ws, env=env_for(tmp_path))
    assert "'agents.reviewer.deny_net[1]'" in caught.value.message
    assert f"project scope ({ws / 'io.toml'})" in caught.value.message
    assert "port '99999'" in caught.value.message


def test_an_agent_deny_write_glob_is_checked_at_load(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text('[agents.r]\ndeny_write = ["/abs/**"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'agents\.r\.deny_write\[0\]' in project scope"):
        load(ws, env=env_for(tmp_path))


def test_good_port_rules_load_and_decide(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(
        '[policy]\napproval = "deny"\nallow_net = ["pypi.org:443", "[::1]:8080"]\n'
        'deny_net = ["*:25"]\n[agents.r]\ndeny_net = ["pypi.org:443"]\n',
        encoding="utf-8",
    )
    config = load(ws, env=env_for(tmp_path))
    assert config.policy.check(Act.net("pypi.org", 443)).verdict is Verdict.ALLOW
    assert config.policy.check(Act.net("pypi.org", 80)).verdict is Verdict.DENY
    assert config.policy.check(Act.net("::1", 8080)).verdict is Verdict.ALLOW
    narrowed = config.agents["r"].narrow(config.policy)
    assert narrowed.check(Act.net("pypi.org", 443)).layer == "agent:r"


def test_io_config_check_reports_a_bad_port_with_exit_2(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text('[policy]\nallow_net = ["pypi.org:0"]\n', encoding="utf-8")
    result = run_io(["config", "check"], cwd=ws, env=env_for(tmp_path))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "'policy.allow_net[0]'" in result.stderr
    assert "port '0'" in result.stderr
    assert "Traceback" not in result.stderr
