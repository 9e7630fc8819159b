"""`[[mcp]]` and the MCP policy rules in io.toml: each mistake is one ConfigError naming
the key and the file, never a traceback; the OAuth tokens' folder is never in the
workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core.config import Config, load
from harness_core.errors import ConfigError

REMOTE = '[[mcp]]\nname = "r"\nurl = "https://mcp.example/mcp"\n'


def _load(tmp_path: Path, toml: str, **env: str) -> Config:
    (tmp_path / "io.toml").write_text(toml)
    base = {"IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path.parent / "home")}
    return load(tmp_path, env={**base, **env})


@pytest.mark.parametrize(("toml", "words"), [
    (REMOTE + 'command = "srv"\n', ("'r'", "url and a local server's keys")),
    ('[[mcp]]\nname = "n"\n', ("mcp[0].command", "or url")),
    ('[[mcp]]\nname = "n"\ncommand = "srv"\nheaders = { A = "b" }\n', ("headers or oauth",)),
    ('[[mcp]]\nname = "n"\nurl = "ftp://mcp.example"\n', ("http(s) URL",)),
    ('[[mcp]]\nname = "a/b"\ncommand = "srv"\n', ("without '/'",)),
    (REMOTE + '[mcp.oauth]\ngrant = "client_credentials"\nclient_id = "c"\n',
     ("mcp[0].oauth", "client_secret")),
    (REMOTE + '[mcp.oauth]\ngrant = "device"\n', ("mcp",)),
    ('[policy]\nallow_mcp = ["github"]\n', ("policy.allow_mcp[0]", "server/tool")),
    ('[policy]\ndeny_mcp = [""]\n', ("policy.deny_mcp[0]", "empty pattern")),
])
def test_each_mcp_mistake_is_one_config_error_naming_the_key_and_file(
        tmp_path: Path, toml: str, words: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, toml)
    text = f"{caught.value.message} {caught.value.hint or ''}"
    for word in words:
        assert word in text
    assert "io.toml" in caught.value.message


def test_the_token_folder_is_beside_the_store_outside_the_workspace(tmp_path: Path) -> None:
    state = tmp_path.parent / f"{tmp_path.name}-state"
    config = _load(tmp_path, REMOTE, XDG_STATE_HOME=str(state))
    (server,) = config.mcp
    assert server.auth_dir == state / "io" / "mcp-auth"


def test_a_store_inside_the_workspace_sends_the_tokens_to_the_default_state_folder(
        tmp_path: Path) -> None:
    state = tmp_path.parent / f"{tmp_path.name}-state"
    config = _load(tmp_path, '[store]\npath = "state/io.db"\n' + REMOTE,
                   XDG_STATE_HOME=str(state))
    (server,) = config.mcp
    assert server.auth_dir == state / "io" / "mcp-auth"
    assert not server.auth_dir.is_relative_to(tmp_path)


def test_no_place_outside_the_workspace_for_tokens_is_refused(tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_text('[store]\npath = "state/io.db"\n' + REMOTE)
    env = {"IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path / "home")}
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, env=env)
    assert "outside the workspace" in caught.value.message


def test_a_local_server_needs_no_token_folder(tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_text('[store]\npath = "state/io.db"\n'
                                      '[[mcp]]\nname = "t"\ncommand = "srv"\n')
    env = {"IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path / "home")}
    (server,) = load(tmp_path, env=env).mcp
    assert server.auth_dir is None and not server.is_remote
