"""Run one hook's process: JSON on stdin, the answer read from its exit status and stdout.

A project-scope hook runs through the run's sandboxed launcher (the one verification
gates use, so it is confined even when `[sandbox] commands = false`); a user- or
system-scope hook runs on the host, in its own session, with the scrubbed environment
every command gets (provider keys never reach a hook). The working directory is the
workspace. A hook that cannot start, is killed at its timeout or leaves output io cannot
read is an error answer; this module never raises for the hook's own failure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_core.errors import HarnessError
from harness_core.hooks._answer import HookAnswer, HookDecision, read_answer
from harness_core.hooks._config import HookConfig
from harness_core.sandbox import (
    BackendChoice,
    LaunchRequest,
    ProcessLauncher,
    SandboxConfig,
    SandboxSpec,
    launcher,
    run_command,
    select,
)

__all__ = ["HOOK_SCHEMA", "HookProcesses"]

HOOK_SCHEMA = 1
"""Version of the JSON object a hook reads on stdin; bumped only on an incompatible change."""

_MAX_OUTPUT = 256 * 1024
"""Bytes of a hook's stdout and stderr read; a longer answer is unreadable (a deny)."""


class HookProcesses:
    """Starts hooks for one run: sandboxed for the project scope, on the host otherwise.

    Args:
        workspace: The working directory of every hook.
        sandboxed: The run's sandboxed launcher (project-scope hooks).
        env: The environment passed to hooks after the launcher's scrub.
    """

    def __init__(self, workspace: Path, sandboxed: ProcessLauncher,
                 env: Mapping[str, str]) -> None:
        self.workspace = workspace
        self._sandboxed = sandboxed
        self._env = dict(env)
        self._host: ProcessLauncher | None = None

    def _launcher_for(self, hook: HookConfig) -> ProcessLauncher:
        if hook.sandboxed:
            return self._sandboxed
        if self._host is None:
            off = select(SandboxConfig(backend=BackendChoice.OFF), env=self._env)
            self._host = launcher(off, SandboxSpec(workdir=self.workspace, env=self._env))
        return self._host

    def run(self, hook: HookConfig, payload: dict[str, Any]) -> HookAnswer:
        """Run `hook` with `payload` on its stdin and read its answer."""
        data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8",
                                                                          "surrogateescape")
        request = LaunchRequest(argv=hook.command, cwd=self.workspace)
        try:
            result = run_command(self._launcher_for(hook), request, timeout=hook.timeout_s,
                                 stdin_data=data, max_output=_MAX_OUTPUT)
        except HarnessError as exc:
            return HookAnswer(HookDecision.ERROR, f"could not start: {exc.message}")
        if result.timed_out:
            return HookAnswer(HookDecision.ERROR, f"timed out after {hook.timeout_s:g}s",
                              exit_status=result.exit_status, timed_out=True)
        return read_answer(result.exit_status, result.stdout, result.stderr,
                           truncated=result.stdout_dropped > 0)

    def close(self) -> None:
        """End the host launcher (the sandboxed one is the run's to close)."""
        close = getattr(self._host, "close", None)
        if callable(close):
            close()
