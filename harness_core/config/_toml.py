"""io.toml written out with tomli-w: a commented starter file, and a merged config.

`starter_config` writes the file `io config init` creates: values through tomli-w, and
the comment above each table and key taken from the models' descriptions, so the
starter says what the schema says. `merged_toml` writes what `io config show --toml`
prints: the four scopes merged into one document, every secret as ``***``, that
`io config check` accepts. Neither writes to disk; the CLI does.
"""

from __future__ import annotations

import datetime as dt
import textwrap
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from harness_core.config._scopes import ConfigFile
from harness_core.config._show import REDACTED, redact
from harness_core.config._tree import Node, Sourced
from harness_core.errors import ConfigError
from harness_core.toolchain import Toolchain
from harness_core.toolchain import detect as detect_toolchain
from harness_core.workspace import Workspace

__all__ = ["STARTER_PROVIDERS", "STARTER_SCRIPT", "merged_toml", "starter_config"]

_WIDTH = 88


def _comment(text: str, indent: str = "") -> list[str]:
    return [f"{indent}# {line}" for line in textwrap.wrap(" ".join(text.split()), _WIDTH - 2)]


def _value_line(key: str, value: Any) -> str:
    import tomli_w

    return tomli_w.dumps({key: value}).strip()


STARTER_PROVIDERS: dict[str, dict[str, Any]] = {
    "anthropic": {"kind": "anthropic", "model": "claude-sonnet-4-5",
                  "api_key": "${env:ANTHROPIC_API_KEY}", "max_tokens": 4096},
    "openai": {"kind": "openai", "model": "gpt-5", "api_key": "${env:OPENAI_API_KEY}",
               "max_tokens": 4096},
    "openrouter": {"kind": "openrouter", "model": "anthropic/claude-sonnet-4.5",
                   "api_key": "${env:OPENROUTER_API_KEY}", "max_tokens": 4096},
    "scripted": {"kind": "scripted", "script": "replay.jsonl"},
}
"""The `[provider]` table `io config init --provider KIND` writes for each kind."""

STARTER_SCRIPT = ('{"text": "Nothing to do yet: this recorded answer ends the run. Put one'
                  ' completion per line here to replay them."}\n')
"""The `replay.jsonl` written beside a scripted starter (one completion: no tool call)."""


def _starter_tables(toolchain: Toolchain, provider: str = "anthropic"
                    ) -> list[tuple[str, bool, dict[str, Any]]]:
    """(table path, is an array item, values) of the starter, in file order."""
    allow_exec = ["git status*", "git diff*", "git log*"]
    for command in (toolchain.lint, toolchain.test):
        if command:
            allow_exec.insert(0, command + "*")
    tables: list[tuple[str, bool, dict[str, Any]]] = [
        ("provider", False, dict(STARTER_PROVIDERS[provider])),
        ("policy", False, {
            "tier": "workspace-write",
            "approval": "ask",
            "deny_read": ["secrets/**", "**/*.pem", ".env"],
            "allow_exec": list(dict.fromkeys(allow_exec)),
            "deny_exec": ["git push*", "rm -rf*"],
        }),
        ("sandbox", False, {"backend": "auto"}),
        ("budget", False, {"max_steps": 50, "wall_seconds": 1800}),
    ]
    if toolchain.test:
        tables.append(("contract.verify", True, {"command": toolchain.test}))
    return tables


def starter_config(workspace: Path, provider: str = "anthropic") -> str:
    """A commented starter io.toml for the toolchain detected in `workspace`.

    The test command found (if any) becomes a verification gate and is allowed to run;
    the rest is a cautious boundary: writes inside the workspace, approval for anything
    else, pushes and `rm -rf` refused, credentials unreadable.

    Args:
        workspace: The workspace whose marker files (pyproject.toml, package.json, ...)
            are read.
        provider: The `[provider]` kind: ``anthropic``, ``openai``, ``openrouter`` or
            ``scripted`` (a replay of `replay.jsonl` beside the file: `STARTER_SCRIPT`).

    Returns:
        The file's text; `io config check` accepts it (an unset key variable is a
        warning until a run needs it).

    Raises:
        ConfigError: `provider` is not one of those kinds.
    """
    from harness_core.config._fields import specs, table_model

    if provider not in STARTER_PROVIDERS:
        raise ConfigError(f"no starter for provider {provider!r}",
                          hint="choose one of: " + ", ".join(STARTER_PROVIDERS))

    toolchain = detect_toolchain(Workspace(workspace))
    found = toolchain.ecosystem or "no toolchain"
    lines = [
        "# io.toml: what an agent run may do here. Written by `io config init`",
        f"# (detected: {found}; `io toolchain` shows what and why). `io config check`",
        "# validates it, `io config schema` prints every key, and io.toml.example",
        "# documents each key with its reason.",
    ]
    for path, is_item, values in _starter_tables(toolchain, provider):
        model = table_model(path)
        lines.append("")
        lines += _comment(" ".join((model.__doc__ or "").split()))
        lines.append(f"[[{path}]]" if is_item else f"[{path}]")
        fields = specs(model)
        for key, value in values.items():
            lines += _comment(fields[key].description)
            lines.append(_value_line(key, value))
    return "\n".join(lines) + "\n"


def _plain(value: Any, secret: bool, secrets: Collection[str]) -> Any:
    if secret:
        if isinstance(value, Mapping):
            return {str(k): REDACTED for k in value}
        return REDACTED
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Path):
        return redact(str(value), secrets)
    if isinstance(value, tuple | list):
        return [_plain(v, False, secrets) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v, False, secrets) for k, v in value.items()}
    if isinstance(value, dt.date | bool | int | float):
        return value
    return str(value)


def _document(tree: Mapping[str, Node], secrets: Collection[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, node in tree.items():
        if isinstance(node, dict):
            out[key] = _document(node, secrets)
        elif isinstance(node.value, list):  # an array of tables
            out[key] = [_document(item, secrets) for item in node.value]
        else:
            out[key] = _plain(node.value, node.secret, secrets)
    return out


def merged_toml(
    merged: Mapping[str, Node],
    rules: tuple[tuple[ConfigFile, Mapping[str, Node]], ...],
    files: tuple[ConfigFile, ...],
    secrets: Collection[str],
) -> str:
    """The merged configuration as one TOML document, every secret as ``***``.

    Each scope's policy rules are concatenated, lowest scope first: a deny anywhere
    still beats an allow anywhere, so the document decides as the scopes did (the
    rules' layer becomes the one file's scope). Paths are absolute.
    """
    import tomli_w

    document = _document(merged, secrets)
    policy: dict[str, Any] = document.setdefault("policy", {})
    for _cf, found in rules:
        for key, node in found.items():
            if isinstance(node, Sourced):
                policy.setdefault(key, []).extend(_plain(node.value, False, secrets))
    if not policy:
        del document["policy"]
    header = ["# The merged io.toml (`io config show --toml`); secrets are shown as ***."]
    header += [f"# {cf.scope.value}: {cf.path}" for cf in files] or ["# (no io.toml found)"]
    return "\n".join(header) + "\n\n" + tomli_w.dumps(document)
