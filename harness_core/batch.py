"""Batches: many runs described in one JSON-lines file, and the narrowing each may ask.

A line of ``TASKS.jsonl`` is one run::

    {"goal": "fix the failing test", "workspace": "repos/a"}
    {"template": "migrate", "vars": {"module": "billing"}, "arguments": ["--fast"],
     "git": {"url": "https://example.org/r.git", "ref": "v1.2"},
     "config": {"policy": {"deny_write": ["migrations/**"]}, "budget": {"max_steps": 20}}}

`goal` or `template` (with `vars` and `arguments`) says what to do; `workspace` (a
directory, relative to the tasks file) or `git` (a URL and a ref, cloned per task) says
where; `config` may only narrow: deny rules are added, a tier or approval mode only
applies when stricter, and budget values only when lower. Anything that could widen the
boundary (an `allow_*` rule, a looser tier, a higher budget, any other table) is refused
with the line number. This module parses and narrows; it starts nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import Any

from harness_core._record import record
from harness_core.errors import ConfigError, PolicyError, UsageError
from harness_core.policy import ApprovalMode, Policy, Tier
from harness_core.run._budget import Budget

__all__ = ["BATCH_LAYER", "BatchTask", "load_tasks", "narrow_run"]

_TASK_KEYS = frozenset({"goal", "template", "vars", "arguments", "workspace", "git", "config"})
_POLICY_KEYS = frozenset({"deny_read", "deny_write", "deny_exec", "deny_net", "tier", "approval"})
_BUDGET_KEYS = frozenset({"max_steps", "max_tokens", "max_cost_usd", "wall_seconds"})
_TIER_RANK = {Tier.READ_ONLY: 0, Tier.WORKSPACE_WRITE: 1, Tier.FULL: 2}
BATCH_LAYER = "batch"
"""The policy layer a task's deny rules are recorded under."""


@record
class BatchTask:
    """One line of a tasks file.

    Attributes:
        index: Its 0-based line number among the tasks (blank lines skipped).
        goal: The goal text, or None when a template gives it.
        template: A template name (`io run --template`), or None.
        vars: The template's ``KEY=VALUE`` values.
        arguments: The template's `$ARGUMENTS`.
        workspace: The workspace directory (absolute), or None when `git` gives it.
        git_url: A repository to clone for this task, or None.
        git_ref: The ref to check out (None: the default branch).
        config: The narrowing overrides, as written.
    """

    index: int
    goal: str | None = None
    template: str | None = None
    vars: Mapping[str, str] = field(default_factory=lambda: {})
    arguments: tuple[str, ...] = ()
    workspace: Path | None = None
    git_url: str | None = None
    git_ref: str | None = None
    config: Mapping[str, Any] = field(default_factory=lambda: {})

    def to_json(self) -> dict[str, Any]:
        """The task as recorded with its batch (paths absolute)."""
        return {"index": self.index, "goal": self.goal, "template": self.template,
                "vars": dict(self.vars), "arguments": list(self.arguments),
                "workspace": None if self.workspace is None else str(self.workspace),
                "git_url": self.git_url, "git_ref": self.git_ref, "config": dict(self.config)}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> BatchTask:
        """Read back what `to_json` wrote."""
        return BatchTask(
            index=int(data["index"]), goal=data.get("goal"), template=data.get("template"),
            vars={str(k): str(v) for k, v in (data.get("vars") or {}).items()},
            arguments=tuple(str(a) for a in data.get("arguments") or ()),
            workspace=Path(data["workspace"]) if data.get("workspace") else None,
            git_url=data.get("git_url"), git_ref=data.get("git_ref"),
            config=dict(data.get("config") or {}),
        )


def load_tasks(path: Path) -> tuple[BatchTask, ...]:
    """Parse and check a tasks file (every line, before anything runs).

    Raises:
        UsageError: The file cannot be read, is empty, or a line is not a valid task
            (the message names the line).
    """
    try:
        if not path.is_file():
            raise UsageError(f"tasks file {str(path)!r} is not a regular file")
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"tasks file {str(path)!r} is not UTF-8") from exc
    except OSError as exc:
        raise UsageError(f"cannot read tasks file {str(path)!r}: {exc.strerror}") from exc
    tasks: list[BatchTask] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            tasks.append(_task(json.loads(line), len(tasks), path.parent.resolve()))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path.name} line {number}: not JSON ({exc.msg})") from exc
        except (UsageError, ConfigError, PolicyError) as exc:
            raise UsageError(f"{path.name} line {number}: {exc.message}") from exc
    if not tasks:
        raise UsageError(f"tasks file {str(path)!r} holds no task")
    return tuple(tasks)


def _task(data: object, index: int, base: Path) -> BatchTask:
    if not isinstance(data, dict):
        raise UsageError("a task is a JSON object")
    task: dict[str, Any] = {str(k): v for k, v in data.items()}  # pyright: ignore[reportUnknownVariableType]
    unknown = sorted(set(task) - _TASK_KEYS)
    if unknown:
        raise UsageError(f"unknown key(s) {', '.join(unknown)} (known: "
                         f"{', '.join(sorted(_TASK_KEYS))})")
    goal, template = task.get("goal"), task.get("template")
    if (goal is None) == (template is None):
        raise UsageError("give exactly one of `goal` and `template`")
    if goal is not None and (not isinstance(goal, str) or not goal.strip()):
        raise UsageError("`goal` must be a non-empty string")
    if template is not None and (not isinstance(template, str) or not template.strip()):
        raise UsageError("`template` must be a non-empty string")
    workspace, git_url, git_ref = _where(task, base)
    config = task.get("config") or {}
    narrow_run(Policy(), Budget(), config)  # refuse a widening line before anything runs
    return BatchTask(index=index, goal=goal, template=template, vars=_vars(task.get("vars")),
                     arguments=_strings(task.get("arguments"), "arguments"),
                     workspace=workspace, git_url=git_url, git_ref=git_ref, config=config)


def _where(task: Mapping[str, Any], base: Path) -> tuple[Path | None, str | None, str | None]:
    workspace, git = task.get("workspace"), task.get("git")
    if workspace is not None and git is not None:
        raise UsageError("give `workspace` or `git`, not both")
    if git is not None:
        if not isinstance(git, dict) or not isinstance(git.get("url"), str) or not git["url"]:
            raise UsageError('`git` must be {"url": "...", "ref": "..."}')
        ref = git.get("ref")  # pyright: ignore[reportUnknownMemberType]
        if ref is not None and (not isinstance(ref, str) or not ref or ref.startswith("-")):
            raise UsageError("`git.ref` must be a ref name")
        url = str(git["url"])  # pyright: ignore[reportUnknownArgumentType]
        if url.startswith("-"):
            raise UsageError("`git.url` must be a repository URL")
        return None, url, ref
    if workspace is None:
        return base, None, None
    if not isinstance(workspace, str) or not workspace:
        raise UsageError("`workspace` must be a directory path")
    path = (base / workspace).resolve()
    if not path.is_dir():
        raise UsageError(f"workspace {workspace!r} is not a directory")
    return path, None, None


def _vars(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):  # pyright: ignore[reportUnknownVariableType]
        raise UsageError("`vars` must be an object of strings")
    return {str(k): str(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]


def _strings(value: object, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):  # pyright: ignore[reportUnknownVariableType]
        raise UsageError(f"`{name}` must be a list of strings")
    return tuple(str(v) for v in value)  # pyright: ignore[reportUnknownVariableType]


def narrow_run(policy: Policy, budget: Budget, config: object) -> tuple[Policy, Budget]:
    """`policy` and `budget` narrowed by a task's `config` overrides; never wider.

    The result's policy is `policy.contain(...)` of the narrowed one, so no act it
    refuses becomes allowed whatever the overrides say.

    Raises:
        ConfigError: A key could widen the boundary, or a value has the wrong type.
        PolicyError: A pattern is malformed.
    """
    if not isinstance(config, dict):
        raise ConfigError("`config` must be an object of tables")
    tables: dict[str, Any] = {str(k): v for k, v in config.items()}  # pyright: ignore[reportUnknownVariableType]
    unknown = sorted(set(tables) - {"policy", "budget"})
    if unknown:
        raise ConfigError(f"`config` may only narrow [policy] and [budget]; not: "
                          f"{', '.join(unknown)}")
    return _narrow_policy(policy, _table(tables, "policy", _POLICY_KEYS)), _narrow_budget(
        budget, _table(tables, "budget", _BUDGET_KEYS))


def _table(tables: Mapping[str, Any], name: str, allowed: frozenset[str]) -> dict[str, Any]:
    value = tables.get(name) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"`config.{name}` must be a table")
    out: dict[str, Any] = {str(k): v for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    extra = sorted(set(out) - allowed)
    if extra:
        raise ConfigError(f"`config.{name}` may only narrow; not accepted: {', '.join(extra)}"
                          f" (accepted: {', '.join(sorted(allowed))})")
    return out


def _narrow_policy(policy: Policy, table: Mapping[str, Any]) -> Policy:
    if not table:
        return policy
    extra = Policy.from_lists(
        tier=policy.tier, layer=BATCH_LAYER, deny_read=_patterns(table, "deny_read"),
        deny_write=_patterns(table, "deny_write"), deny_exec=_patterns(table, "deny_exec"),
        deny_net=_patterns(table, "deny_net")).rules
    tier = Tier.parse(str(table["tier"])) if "tier" in table else policy.tier
    tier = min(tier, policy.tier, key=_TIER_RANK.__getitem__)
    approval = policy.approval
    if "approval" in table and ApprovalMode.parse(str(table["approval"])) is ApprovalMode.DENY:
        approval = ApprovalMode.DENY
    return policy.contain(replace(policy, tier=tier, approval=approval,
                                  rules=policy.rules + extra))


def _patterns(table: Mapping[str, Any], key: str) -> Sequence[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):  # pyright: ignore[reportUnknownVariableType]
        raise ConfigError(f"`config.policy.{key}` must be a list of patterns")
    return [str(v) for v in value]  # pyright: ignore[reportUnknownVariableType]


def _narrow_budget(budget: Budget, table: Mapping[str, Any]) -> Budget:
    changes: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(f"`config.budget.{key}` must be a positive number")
        if key == "max_steps" and not isinstance(value, int):
            raise ConfigError("`config.budget.max_steps` must be an integer")
        current = getattr(budget, key)
        changes[key] = value if current is None else min(current, value)
    return replace(budget, **changes) if changes else budget
