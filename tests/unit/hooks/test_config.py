"""[[hooks]] in io.toml: the schema, every scope kept, names, matchers, protected files."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core.config import load
from harness_core.errors import ConfigError
from harness_core.hooks import HookConfig, HookEvent, hook_files, tool_names


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
            "IO_SYSTEM_CONFIG": str(home / "none.toml"), "IO_STORE": str(home / "s.db")}


@pytest.mark.parametrize(("tool", "matcher", "matches"), [
    ("shell", "shell", True),
    ("shell", "sh*", True),
    ("shell_start", "shell", False),
    ("write_file", "*_file", True),
    ("mcp__github__create_issue", "github/*", True),
    ("mcp__github__create_issue", "mcp__github__*", True),
    ("mcp__github__create_issue", "gitlab/*", False),
    ("mcp__github__create_issue", "*/create_issue", True),
    ("github/create_issue", "github/*", True),
])
def test_a_matcher_is_a_glob_on_the_tool_name(tool: str, matcher: str, matches: bool) -> None:
    hook = HookConfig(HookEvent.PRE_TOOL, ("x",), name="h", matcher=matcher)
    assert hook.matches(tool) is matches


def test_an_mcp_tool_is_also_named_server_slash_tool() -> None:
    assert tool_names("mcp__time__now") == ("mcp__time__now", "time/now")
    assert tool_names("mcp__odd") == ("mcp__odd",)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"command": ()}, "`command` must name a program"),
    ({"command": ("",)}, "`command` must name a program"),
    ({"timeout_s": 0.0}, "`timeout_s` must be more than 0"),
    ({"event": HookEvent.STOP, "matcher": "shell"}, "`matcher` applies to pre_tool and"),
])
def test_a_malformed_hook_is_refused(kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"event": HookEvent.PRE_TOOL, "command": ("x",), "name": "h"}
    fields.update(kwargs)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        HookConfig(**fields)  # type: ignore[arg-type]


def test_hook_files_are_the_workspace_files_a_command_names(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "hooks").mkdir(parents=True)
    (ws / "hooks" / "check.py").write_text("")
    (ws / "src").mkdir()
    (ws / "lint.toml").write_text("")
    (ws / "link.py").symlink_to(ws / "hooks" / "check.py")
    hooks = [
        HookConfig(HookEvent.PRE_TOOL, ("python3", "hooks/check.py", "--flag", "src"), name="a"),
        HookConfig(HookEvent.POST_TOOL, ("./run.sh", "lint.toml", "../outside.py"), name="b"),
        HookConfig(HookEvent.STOP, (str(ws / "hooks" / "later.sh"), str(tmp_path / "x.py")),
                   name="c"),
        HookConfig(HookEvent.STOP, ("link.py",), name="d"),
    ]
    # a script's folder is protected whole (a module planted beside it must not load)
    assert hook_files(ws, hooks) == ("hooks/check.py", "hooks/**", "run.sh", "lint.toml",
                                     "hooks/later.sh", "link.py")


def test_hooks_of_every_scope_are_kept_with_their_scope(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "config" / "io").mkdir(parents=True)
    (home / "config" / "io" / "io.toml").write_text(
        '[[hooks]]\nevent = "pre_tool"\ncommand = ["/opt/guard"]\nmatcher = "shell"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(
        '[[hooks]]\nevent = "post_tool"\ncommand = ["python3", "hooks/fmt.py"]\n'
        'timeout_s = 5\n\n[[hooks]]\nevent = "stop"\ncommand = ["./check.sh"]\nname = "check"\n')
    (ws / "io.local.toml").write_text('[[hooks]]\nevent = "run_start"\ncommand = ["true"]\n')
    config = load(ws, env=_env(home))
    assert [(h.name, h.scope, h.event.value, h.sandboxed) for h in config.hooks] == [
        ("user.hooks[0]", "user", "pre_tool", False),
        ("project.hooks[0]", "project", "post_tool", True),
        ("check", "project", "stop", True),
        ("local.hooks[0]", "local", "run_start", True),
    ]
    assert config.hooks[0].matcher == "shell" and config.hooks[1].timeout_s == 5.0
    assert {"hooks/fmt.py", "check.sh"} <= set(config.policy.protected)
    shown = {v.key: v.scope.value for v in config.show() if v.key.startswith("hooks")}
    assert shown["hooks[0].command"] == "user" and shown["hooks[3].event"] == "local"


@pytest.mark.parametrize(("toml", "message"), [
    ('[[hooks]]\nevent = "pre_toll"\ncommand = ["x"]\n', "'hooks[0].event' in project scope"),
    ('[[hooks]]\ncommand = ["x"]\n', "missing key 'hooks[0].event'"),
    ('[[hooks]]\nevent = "stop"\n', "missing key 'hooks[0].command'"),
    ('[[hooks]]\nevent = "stop"\ncommand = "x"\n', "wrong type for 'hooks[0].command'"),
    ('[[hooks]]\nevent = "stop"\ncommand = ["x"]\nmatcher = "shell"\n',
     "'hooks[0]' in project scope|`matcher` applies to pre_tool and post_tool hooks only"),
    ('[[hooks]]\nevent = "stop"\ncommand = ["x"]\ntimeout_s = 0\n',
     "'hooks[0].timeout_s' in project scope"),
    ('[[hooks]]\nevent = "stop"\ncommand = ["x"]\nname = "a"\n'
     '[[hooks]]\nevent = "pre_tool"\ncommand = ["y"]\nname = "a"\n', "two hooks are named 'a'"),
    ('[[hooks]]\nevent = "stop"\ncommand = ["x"]\nwhen = 1\n', "unknown key 'hooks[0].when'"),
])
def test_a_bad_hooks_table_is_a_config_error_naming_it(tmp_path: Path, toml: str,
                                                       message: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(toml)
    with pytest.raises(ConfigError) as raised:
        load(ws, env=_env(tmp_path / "home"))
    assert all(part in raised.value.message for part in message.split("|")), raised.value
