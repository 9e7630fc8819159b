"""Run one hook's process: JSON on stdin, the answer read from its exit status and stdout.

A project-scope hook runs through the run's sandboxed launcher (the one verification
gates use, so it is confined even when `[sandbox] commands = false`), in the workspace,
with a Python interpreter it starts put in safe-path mode (its script's folder comes
after the standard library, so a `json.py` beside it is never imported). A user- or
system-scope hook runs on the host through `harness_core.host`: in a private folder the
agent cannot write, never the workspace (whose path is in the payload and in
`IO_WORKSPACE`), and only when nothing it names lies in the workspace. Both get the
scrubbed environment every command gets (provider keys never reach a hook).

A hook whose program or script does not exist, or that names something the agent can
write, cannot start: that is an error answer, which refuses where hooks fail closed.
A hook that is killed at its timeout or leaves output io cannot read is an error answer
too; this module never raises for the hook's own failure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_core.errors import HarnessError, HostBoundaryError
from harness_core.hooks._answer import HookAnswer, HookDecision, read_answer
from harness_core.hooks._config import HookConfig
from harness_core.host import (
    check_host_command,
    host_dir,
    host_environment,
    host_launcher,
    missing_files,
    safe_python_argv,
)
from harness_core.sandbox import LaunchRequest, ProcessLauncher, run_command

__all__ = ["HOOK_SCHEMA", "HookProcesses", "check_hook_command"]

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

    def command(self, hook: HookConfig) -> tuple[ProcessLauncher, LaunchRequest]:
        """How `hook` starts: its launcher and request, after checking what it names.

        Raises:
            HostBoundaryError: Its program or script does not exist, or a host hook
                names something in the workspace.
        """
        check_hook_command(hook, self.workspace, self._env)
        if hook.sandboxed:
            return self._sandboxed, LaunchRequest(argv=safe_python_argv(hook.command),
                                                  cwd=self.workspace)
        if self._host is None:
            self._host = host_launcher(self._env, self.workspace)
        return self._host, LaunchRequest(argv=list(hook.command),
                                         cwd=host_dir(self.workspace))

    def run(self, hook: HookConfig, payload: dict[str, Any]) -> HookAnswer:
        """Run `hook` with `payload` on its stdin and read its answer."""
        data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8",
                                                                          "surrogateescape")
        try:
            launcher, request = self.command(hook)
            result = run_command(launcher, request, timeout=hook.timeout_s,
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


def check_hook_command(hook: HookConfig, workspace: Path, env: Mapping[str, str]) -> None:
    """Refuse a hook that cannot start safely: what `io config check` and every call run.

    A project-scope hook (sandboxed) must name a program and scripts that exist: the
    sandbox binds an empty placeholder over a missing path, and an interpreter would run
    it and answer "no objection". A user- or system-scope hook (on the host) must also
    name nothing in the workspace and no relative path (`harness_core.host`).

    Raises:
        HostBoundaryError: The first problem, naming the hook.
    """
    what = f"hook {hook.name!r}"
    if hook.sandboxed:
        missing = missing_files(hook.command, env, workspace)
        if missing:
            raise HostBoundaryError(f"{what}: {', '.join(map(repr, missing))} does not exist"
                                    " (a hook that cannot run refuses every call it sees)",
                                    hint="fix the path in [[hooks]] command")
        return
    check_host_command(hook.command, host_environment(env, workspace), workspace=workspace,
                       what=what)
