"""Hooks: operator programs run at points of a run, that can only narrow what it does.

`[[hooks]]` in io.toml names a program for an event (`run_start`, `pre_tool`,
`post_tool`, `pre_compact`, `stop`, `child_stop`). The program reads one JSON object on
stdin and answers with its exit status and, optionally, a JSON object on stdout. A
`pre_tool` hook may deny a call or send it to approval, never allow what the policy
refuses; an error, a timeout or unreadable output is a refusal. Project-scope hooks run
in the sandbox, user- and system-scope hooks on the host. See docs/guide/hooks.md.

Importing this package stays cheap (config loading names `HookConfig`): the runner and
the process launcher, with the store and sandbox they import, load on first use of
their names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from harness_core.hooks._answer import DENY_EXIT_STATUS, HookAnswer, HookDecision, read_answer
from harness_core.hooks._config import HOOK_LAYER, HookConfig, HookEvent, hook_files, tool_names

_LAZY = {
    "HOOK_SCHEMA": "harness_core.hooks._invoke",
    "HookProcesses": "harness_core.hooks._invoke",
    "check_hook_command": "harness_core.hooks._invoke",
    "CallAct": "harness_core.hooks._runner",
    "CompactVerdict": "harness_core.hooks._runner",
    "HookRunner": "harness_core.hooks._runner",
    "StartVerdict": "harness_core.hooks._runner",
    "recorded_act": "harness_core.hooks._runner",
}

if TYPE_CHECKING:
    from harness_core.hooks._invoke import HOOK_SCHEMA, HookProcesses, check_hook_command
    from harness_core.hooks._runner import (
        CallAct,
        CompactVerdict,
        HookRunner,
        StartVerdict,
        recorded_act,
    )

__all__ = [
    "DENY_EXIT_STATUS",
    "HOOK_LAYER",
    "HOOK_SCHEMA",
    "CallAct",
    "CompactVerdict",
    "HookAnswer",
    "HookConfig",
    "HookDecision",
    "HookEvent",
    "HookProcesses",
    "HookRunner",
    "StartVerdict",
    "check_hook_command",
    "hook_files",
    "read_answer",
    "recorded_act",
    "tool_names",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness_core.hooks' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
