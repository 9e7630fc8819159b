"""Every key of the schema reaches a typed field; substitution lands where it should."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness_core.agents import AgentDef
from harness_core.config import Config, load, schema_keys
from harness_core.mcp import McpOAuth
from harness_core.policy import Act, ActKind, Effect, Policy, Rule, Tier, Verdict
from harness_core.providers import ProviderConfig, WebAccess
from harness_core.sandbox import BackendChoice
from harness_core.telemetry import TelemetryConfig
from harness_core.verification import CriterionKind

EVERY_KEY = """
[provider]
kind = "scripted"
model = "m-primary"
api_key = "${env:PRIMARY_KEY}"
base_url = "http://127.0.0.1:9/v1"
max_tokens = 111
script = "replay.jsonl"
stream = false
timeout_seconds = 12.5
max_retries = 7
ca_bundle = "ca.pem"
system_role = "developer"
previous_response_id = true

[[provider.fallback]]
kind = "openai"
model = "m-fallback"
api_key = "fallback-literal-key"
base_url = "http://127.0.0.1:8/v1"
max_tokens = 222
script = "other.jsonl"
stream = true
timeout_seconds = 3
max_retries = 0
ca_bundle = "/etc/corp/ca.pem"
system_role = "system"
previous_response_id = false

[policy]
tier = "read-only"
approval = "deny"
allow_read = ["ar"]
deny_read = ["dr"]
allow_write = ["aw"]
deny_write = ["dw"]
allow_exec = ["ae*"]
deny_exec = ["de*"]
allow_net = ["an.example"]
deny_net = ["dn.example"]
allow_mcp = ["srv/*"]
deny_mcp = ["srv/drop_*"]

[sandbox]
backend = "floor"
memory_mb = 1
cpu_seconds = 2
wall_seconds = 3.5
max_processes = 4
open_files = 5
network = true
commands = false
env_allow = ["LANG"]
read_paths = ["~/.config/git"]

[budget]
max_steps = 6
max_tokens = 7
max_cost_usd = 0.25
cache_read_weight = 0.25
wall_seconds = 9

[contract]
goal = "the goal"
constraints = ["c1", "c2"]
[[contract.verify]]
kind = "command"
command = "python -m pytest -q"
timeout_seconds = 10
inputs = ["tests/**", "pyproject.toml"]
editable = true
[[contract.verify]]
kind = "document_contains"
path = "out/report.pdf"
text = "Total"
page = 2
[[contract.verify]]
kind = "document_contains"
path = "out/book.xlsx"
regex = "Sum: [0-9]+"
sheet = "Summary"

[context]
max_tokens = 12000
strategy = "compact"
threshold = 0.7
window = 50000
keep_steps = 3
compact_template = "summary"

[rewind]
enabled = false
max_bytes = 4096

[toolchain]
test = "t"
build = "b"
lint = "l"

[git]
author = "Someone <someone@example.com>"
author_name = "Agent"
author_email = "agent@example.com"
timeout_seconds = 30
history_depth = 50

[documents]
max_member_bytes = 1048576
max_total_bytes = 4194304
max_ratio = 50
max_members = 500

[prices]
as_of = "2026-11-01"
[prices.models."model.one"]
input_per_mtok = 1
output_per_mtok = 2.5
cache_read_per_mtok = 0.1
cache_write_per_mtok = 0.2

[web]
search = true
fetch = true
allowed_domains = ["ok.example"]
blocked_domains = ["no.example"]
max_uses = 3

[[mcp]]
name = "srv"
command = "server-bin"
args = ["--a", "b"]
env = { TOKEN = "${env:MCP_TOKEN}", MODE = "x" }
cwd = "tools"
optional = true
elicitation = "defaults"

[[mcp]]
name = "far"
url = "https://mcp.example/mcp"
headers = { X-Key = "${env:MCP_TOKEN}" }
[mcp.oauth]
grant = "client_credentials"
client_id = "cid"
client_secret = "${env:MCP_TOKEN}"
private_key = "pem"
signing_algorithm = "ES256"
scopes = ["read", "write"]
client_metadata_url = "https://io.example/client.json"
issuer = "https://auth.example"
redirect_port = 8765
authorize_timeout_seconds = 60.0

[[hooks]]
event = "pre_tool"
command = ["python3", "hooks/guard.py"]
matcher = "shell"
timeout_s = 7
name = "guard"

[agents]
max_depth = 2
max_children = 5
parallel = 3

[templates]
dir = "tpl"

[agents.rev]
model = "m-agent"
role = "the role"
deny_write = ["**"]
deny_net = ["*"]

[store]
path = "state/io.db"
url = "postgresql://io@db.internal:5432/io"

[run]
output_cap_bytes = 4096
exec_timeout_seconds = 30
stall_window = 6

[telemetry]
otlp_endpoint = "http://127.0.0.1:4318/"
include_content = true
headers = { authorization = "Bearer t" }
service_name = "io-test"
timeout_seconds = 3
"""


def _oauth(c: Config) -> McpOAuth:
    oauth = c.mcp[1].oauth
    assert oauth is not None
    return oauth


def _rule(effect: Effect, kind: ActKind, pattern: str) -> Callable[[Config], object]:
    return lambda c: Rule(effect, kind, pattern, "project") in c.policy.rules


def _prov(c: Config) -> ProviderConfig:
    assert c.provider is not None
    return c.provider


def _fb(c: Config) -> ProviderConfig:
    return _prov(c).fallback[0]


def _price(c: Config, attr: str) -> Any:
    assert c.prices is not None
    return getattr(c.prices.models["model.one"], attr)


def _web(c: Config) -> WebAccess:
    assert c.web is not None
    return c.web


def _tel(c: Config) -> TelemetryConfig:
    assert c.telemetry is not None
    return c.telemetry


def _projections(ws: Path) -> dict[str, tuple[Callable[[Config], object], object]]:
    return {
        "provider.kind": (lambda c: _prov(c).kind, "scripted"),
        "provider.model": (lambda c: _prov(c).model, "m-primary"),
        "provider.api_key": (lambda c: c.provider_for_run().api_key, "primary-secret-key"),
        "provider.base_url": (lambda c: _prov(c).base_url, "http://127.0.0.1:9/v1"),
        "provider.max_tokens": (lambda c: _prov(c).max_tokens, 111),
        "provider.script": (lambda c: _prov(c).script, ws / "replay.jsonl"),
        "provider.stream": (lambda c: _prov(c).stream, False),
        "provider.timeout_seconds": (lambda c: _prov(c).timeout_seconds, 12.5),
        "provider.max_retries": (lambda c: _prov(c).max_retries, 7),
        "provider.ca_bundle": (lambda c: _prov(c).ca_bundle, ws / "ca.pem"),
        "provider.system_role": (lambda c: _prov(c).system_role, "developer"),
        "provider.previous_response_id": (lambda c: _prov(c).previous_response_id, True),
        "provider.fallback.kind": (lambda c: _fb(c).kind, "openai"),
        "provider.fallback.model": (lambda c: _fb(c).model, "m-fallback"),
        "provider.fallback.api_key": (lambda c: _fb(c).api_key, "fallback-literal-key"),
        "provider.fallback.base_url": (lambda c: _fb(c).base_url, "http://127.0.0.1:8/v1"),
        "provider.fallback.max_tokens": (lambda c: _fb(c).max_tokens, 222),
        "provider.fallback.script": (lambda c: _fb(c).script, ws / "other.jsonl"),
        "provider.fallback.stream": (lambda c: _fb(c).stream, True),
        "provider.fallback.timeout_seconds": (lambda c: _fb(c).timeout_seconds, 3.0),
        "provider.fallback.max_retries": (lambda c: _fb(c).max_retries, 0),
        "provider.fallback.ca_bundle": (lambda c: _fb(c).ca_bundle, Path("/etc/corp/ca.pem")),
        "provider.fallback.system_role": (lambda c: _fb(c).system_role, "system"),
        "provider.fallback.previous_response_id": (
            lambda c: _fb(c).previous_response_id,
            False,
        ),
        "policy.tier": (lambda c: c.policy.tier, Tier.READ_ONLY),
        "policy.approval": (lambda c: c.policy.approval.value, "deny"),
        "policy.allow_read": (_rule(Effect.ALLOW, ActKind.READ, "ar"), True),
        "policy.deny_read": (_rule(Effect.DENY, ActKind.READ, "dr"), True),
        "policy.allow_write": (_rule(Effect.ALLOW, ActKind.WRITE, "aw"), True),
        "policy.deny_write": (_rule(Effect.DENY, ActKind.WRITE, "dw"), True),
        "policy.allow_exec": (_rule(Effect.ALLOW, ActKind.EXEC, "ae*"), True),
        "policy.deny_exec": (_rule(Effect.DENY, ActKind.EXEC, "de*"), True),
        "policy.allow_net": (_rule(Effect.ALLOW, ActKind.NET, "an.example"), True),
        "policy.deny_net": (_rule(Effect.DENY, ActKind.NET, "dn.example"), True),
        "policy.allow_mcp": (_rule(Effect.ALLOW, ActKind.MCP, "srv/*"), True),
        "policy.deny_mcp": (_rule(Effect.DENY, ActKind.MCP, "srv/drop_*"), True),
        "sandbox.backend": (lambda c: c.sandbox.backend, BackendChoice.FLOOR),
        "sandbox.memory_mb": (lambda c: c.sandbox.limits.memory_mb, 1),
        "sandbox.cpu_seconds": (lambda c: c.sandbox.limits.cpu_seconds, 2),
        "sandbox.wall_seconds": (lambda c: c.sandbox.limits.wall_seconds, 3.5),
        "sandbox.max_processes": (lambda c: c.sandbox.limits.max_processes, 4),
        "sandbox.open_files": (lambda c: c.sandbox.limits.open_files, 5),
        "sandbox.network": (lambda c: c.sandbox.network, True),
        "sandbox.commands": (lambda c: c.sandbox.commands, False),
        "sandbox.env_allow": (lambda c: c.sandbox.env_allow, ("LANG",)),
        "sandbox.read_paths": (lambda c: c.sandbox.read_paths, ("~/.config/git",)),
        "budget.max_steps": (lambda c: c.budget.max_steps, 6),
        "budget.max_tokens": (lambda c: c.budget.max_tokens, 7),
        "budget.max_cost_usd": (lambda c: c.budget.max_cost_usd, 0.25),
        "budget.wall_seconds": (lambda c: c.budget.wall_seconds, 9.0),
        "budget.cache_read_weight": (lambda c: c.budget.cache_read_weight, 0.25),
        "contract.goal": (lambda c: c.contract.goal, "the goal"),
        "contract.constraints": (lambda c: c.contract.constraints, ("c1", "c2")),
        "contract.verify.kind": (lambda c: c.contract.verify[0].kind, CriterionKind.COMMAND),
        "contract.verify.command": (lambda c: c.contract.verify[0].command, "python -m pytest -q"),
        "contract.verify.timeout_seconds": (lambda c: c.contract.verify[0].timeout_seconds, 10.0),
        "contract.verify.path": (lambda c: c.contract.verify[1].path, "out/report.pdf"),
        "contract.verify.text": (lambda c: c.contract.verify[1].text, "Total"),
        "contract.verify.page": (lambda c: c.contract.verify[1].page, 2),
        "contract.verify.regex": (lambda c: c.contract.verify[2].regex, "Sum: [0-9]+"),
        "contract.verify.sheet": (lambda c: c.contract.verify[2].sheet, "Summary"),
        "contract.verify.inputs": (lambda c: c.contract.verify[0].inputs,
                                   ("tests/**", "pyproject.toml")),
        "contract.verify.editable": (lambda c: c.contract.verify[0].editable, True),
        "context.max_tokens": (lambda c: c.context_max_tokens, 12000),
        "context.strategy": (lambda c: c.context.strategy, "compact"),
        "context.threshold": (lambda c: c.context.threshold, 0.7),
        "context.window": (lambda c: c.context.window, 50000),
        "context.keep_steps": (lambda c: c.context.keep_steps, 3),
        "context.compact_template": (lambda c: c.context.compact_template, "summary"),
        "rewind.enabled": (lambda c: c.rewind.enabled, False),
        "rewind.max_bytes": (lambda c: c.rewind.max_bytes, 4096),
        "toolchain.test": (lambda c: c.toolchain.test, "t"),
        "toolchain.build": (lambda c: c.toolchain.build, "b"),
        "toolchain.lint": (lambda c: c.toolchain.lint, "l"),
        "git.author": (lambda c: c.git.author_name, "Agent"),
        "git.author_name": (lambda c: c.git.author_name, "Agent"),
        "git.author_email": (lambda c: c.git.author_email, "agent@example.com"),
        "git.timeout_seconds": (lambda c: c.git.timeout_seconds, 30.0),
        "git.history_depth": (lambda c: c.git.history_depth, 50),
        "documents.max_member_bytes": (lambda c: c.documents.max_member_bytes, 1 << 20),
        "documents.max_total_bytes": (lambda c: c.documents.max_total_bytes, 1 << 22),
        "documents.max_ratio": (lambda c: c.documents.max_ratio, 50.0),
        "documents.max_members": (lambda c: c.documents.max_members, 500),
        "prices.as_of": (lambda c: c.prices and c.prices.as_of, dt.date(2026, 11, 1)),
        "prices.models.*.input_per_mtok": (lambda c: _price(c, "input_per_mtok"), 1.0),
        "prices.models.*.output_per_mtok": (lambda c: _price(c, "output_per_mtok"), 2.5),
        "prices.models.*.cache_read_per_mtok": (lambda c: _price(c, "cache_read_per_mtok"), 0.1),
        "prices.models.*.cache_write_per_mtok": (lambda c: _price(c, "cache_write_per_mtok"), 0.2),
        "web.search": (lambda c: _web(c).search, True),
        "web.fetch": (lambda c: _web(c).fetch, True),
        "web.allowed_domains": (lambda c: _web(c).allowed_domains, ("ok.example",)),
        "web.blocked_domains": (lambda c: _web(c).blocked_domains, ("no.example",)),
        "web.max_uses": (lambda c: _web(c).max_uses, 3),
        "mcp.name": (lambda c: c.mcp[0].name, "srv"),
        "mcp.command": (lambda c: c.mcp[0].command, "server-bin"),
        "mcp.args": (lambda c: c.mcp[0].args, ("--a", "b")),
        "mcp.env": (lambda c: dict(c.mcp[0].env), {"TOKEN": "mcp-token-value", "MODE": "x"}),
        "mcp.cwd": (lambda c: c.mcp[0].cwd, ws / "tools"),
        "mcp.optional": (lambda c: c.mcp[0].optional, True),
        "mcp.elicitation": (lambda c: c.mcp[0].elicitation.value, "defaults"),
        "mcp.url": (lambda c: c.mcp[1].url, "https://mcp.example/mcp"),
        "mcp.headers": (lambda c: dict(c.mcp[1].headers), {"X-Key": "mcp-token-value"}),
        "mcp.oauth.grant": (lambda c: _oauth(c).grant.value, "client_credentials"),
        "mcp.oauth.client_id": (lambda c: _oauth(c).client_id, "cid"),
        "mcp.oauth.client_secret": (lambda c: _oauth(c).client_secret, "mcp-token-value"),
        "mcp.oauth.private_key": (lambda c: _oauth(c).private_key, "pem"),
        "mcp.oauth.signing_algorithm": (lambda c: _oauth(c).signing_algorithm, "ES256"),
        "mcp.oauth.scopes": (lambda c: _oauth(c).scopes, ("read", "write")),
        "mcp.oauth.client_metadata_url": (lambda c: _oauth(c).client_metadata_url,
                                          "https://io.example/client.json"),
        "mcp.oauth.issuer": (lambda c: _oauth(c).issuer, "https://auth.example"),
        "mcp.oauth.redirect_port": (lambda c: _oauth(c).redirect_port, 8765),
        "mcp.oauth.authorize_timeout_seconds": (lambda c: _oauth(c).authorize_timeout, 60.0),
        "hooks.event": (lambda c: c.hooks[0].event.value, "pre_tool"),
        "hooks.command": (lambda c: c.hooks[0].command, ("python3", "hooks/guard.py")),
        "hooks.matcher": (lambda c: c.hooks[0].matcher, "shell"),
        "hooks.timeout_s": (lambda c: c.hooks[0].timeout_s, 7.0),
        "hooks.name": (lambda c: c.hooks[0].name, "guard"),
        "agents.max_depth": (lambda c: c.agent_limits.max_depth, 2),
        "agents.max_children": (lambda c: c.agent_limits.max_children, 5),
        "agents.parallel": (lambda c: c.agent_limits.parallel, 3),
        "templates.dir": (lambda c: c.templates_dir, ws / "tpl"),
        "agents.*.model": (lambda c: c.agents["rev"].model, "m-agent"),
        "agents.*.role": (lambda c: c.agents["rev"].role, "the role"),
        "agents.*.deny_write": (lambda c: c.agents["rev"].deny_write, ("**",)),
        "agents.*.deny_net": (lambda c: c.agents["rev"].deny_net, ("*",)),
        "store.path": (lambda c: c.store_path, ws / "state" / "io.db"),
        "store.url": (lambda c: c.store_url, "postgresql://io@db.internal:5432/io"),
        "run.output_cap_bytes": (lambda c: c.run.output_cap_bytes, 4096),
        "run.exec_timeout_seconds": (lambda c: c.run.exec_timeout_seconds, 30.0),
        "run.stall_window": (lambda c: c.run.stall_window, 6),
        "telemetry.otlp_endpoint": (lambda c: _tel(c).endpoint, "http://127.0.0.1:4318/v1/traces"),
        "telemetry.include_content": (lambda c: _tel(c).include_content, True),
        "telemetry.headers": (lambda c: dict(_tel(c).headers), {"authorization": "Bearer t"}),
        "telemetry.service_name": (lambda c: _tel(c).service_name, "io-test"),
        "telemetry.timeout_seconds": (lambda c: _tel(c).timeout_seconds, 3.0),
    }


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    # XDG_STATE_HOME outside the workspace (tmp_path): where MCP OAuth tokens go.
    return {"IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path / "home"),
            "XDG_STATE_HOME": str(tmp_path.parent / f"{tmp_path.name}-state"), **extra}


def test_every_schema_key_reaches_a_typed_field(tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_text(EVERY_KEY, encoding="utf-8")
    env = _env(tmp_path, PRIMARY_KEY="primary-secret-key", MCP_TOKEN="mcp-token-value")
    config = load(tmp_path, env=env)
    projections = _projections(tmp_path)
    assert set(projections) == schema_keys()
    wrong = {
        key: (read(config), expected)
        for key, (read, expected) in projections.items()
        if read(config) != expected
    }
    assert wrong == {}


def test_web_table_reaches_every_provider(tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_text(EVERY_KEY, encoding="utf-8")
    env = _env(tmp_path, PRIMARY_KEY="k1", MCP_TOKEN="k2")
    config = load(tmp_path, env=env)
    assert _prov(config).web == config.web
    assert _fb(config).web == config.web


def test_no_file_gives_the_typed_defaults(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = load(workspace, env=_env(tmp_path))
    assert config.files == ()
    assert config.provider is None and config.prices is None and config.web is None
    assert config.policy == Policy()
    assert config.budget.max_steps == 50
    assert config.budget.max_tokens is None and config.budget.cache_read_weight == 0.1
    assert config.mcp == () and dict(config.agents) == {}
    assert config.show() == []


def test_false_removes_a_ceiling(tmp_path: Path) -> None:
    text = "[budget]\nmax_steps = false\nmax_cost_usd = false\n[sandbox]\nmemory_mb = false\n"
    (tmp_path / "io.toml").write_text(text, encoding="utf-8")
    config = load(tmp_path, env=_env(tmp_path))
    assert config.budget.max_steps is None
    assert config.budget.max_cost_usd is None
    assert config.sandbox.limits.memory_mb is None


def test_relative_paths_resolve_against_the_file_that_names_them(tmp_path: Path) -> None:
    user_dir = tmp_path / "xdg" / "io"
    user_dir.mkdir(parents=True)
    (user_dir / "key.txt").write_text("user-file-secret\n", encoding="utf-8")
    (user_dir / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "../replays/r.jsonl"\n'
        'api_key = "${file:key.txt}"\n',
        encoding="utf-8",
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    config = load(ws, env=_env(tmp_path, XDG_CONFIG_HOME=str(tmp_path / "xdg")))
    provider = _prov(config)
    assert provider.script == tmp_path / "xdg" / "replays" / "r.jsonl"
    assert config.provider_for_run().api_key == "user-file-secret"
    assert provider.model == "scripted"


def test_substitution_works_inside_lists_and_strings(tmp_path: Path) -> None:
    text = (
        '[policy]\ndeny_read = ["${env:SECRET_DIR}/**", "${env:SECRET_DIR}/${env:SECRET_DIR}"]\n'
        '[contract]\ngoal = "fix $${not_a_var} in ${env:MODULE}"\n'
    )
    (tmp_path / "io.toml").write_text(text, encoding="utf-8")
    config = load(tmp_path, env=_env(tmp_path, SECRET_DIR="vault", MODULE="${env:NOT_READ}"))
    patterns = [r.pattern for r in config.policy.rules]
    assert patterns == ["vault/**", "vault/vault"]
    # `$${` is a literal and a substituted value is never re-read.
    assert config.contract.goal == "fix ${not_a_var} in ${env:NOT_READ}"


def test_config_never_reads_os_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONLY_IN_OS_ENVIRON", "value")
    (tmp_path / "io.toml").write_text(
        '[contract]\ngoal = "${env:ONLY_IN_OS_ENVIRON}"\n', encoding="utf-8"
    )
    from harness_core.errors import ConfigError

    with pytest.raises(ConfigError, match="ONLY_IN_OS_ENVIRON is not set"):
        load(tmp_path, env=_env(tmp_path))


def test_agent_definition_only_narrows(tmp_path: Path) -> None:
    base = Policy(tier=Tier.FULL)
    agent = AgentDef(name="rev", deny_write=("src/**",), deny_net=("*",))
    narrowed = agent.narrow(base)
    refused = narrowed.check(Act.write("src/a.py"))
    assert refused.verdict is Verdict.DENY and refused.layer == "agent:rev"
    assert narrowed.check(Act.net("pypi.org")).verdict is Verdict.DENY
    assert narrowed.check(Act.write("docs/a.md")).verdict is Verdict.ALLOW
    assert narrowed.tier is Tier.FULL


def test_agent_definition_swaps_only_the_model() -> None:
    base = ProviderConfig(kind="openai", model="big", max_tokens=9)
    assert AgentDef(name="a", model="small").provider(base).model == "small"
    assert AgentDef(name="a").provider(base) is base
