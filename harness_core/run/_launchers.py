"""Derive the sandbox for a run from its policy and `[sandbox]` table.

`policy` decides and `sandbox` confines; this module is where the run joins them: it
turns the protected paths into read-only binds and the read refusals into masks, hides
the store and the rewind snapshots, passes the provider keys to the selection (so `auto` never degrades to a
backend that would leak them), and picks the launcher for commands and the one for
verification gates. A policy with net rules is refused under a backend that cannot
confine the network of commands (the floor), rather than pretending.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import replace
from pathlib import Path

from harness_core._record import record
from harness_core.errors import SandboxUnavailable
from harness_core.policy import PROTECTED_WRITE_PATTERNS, ActKind, Policy
from harness_core.run._egress import policy_decider, recording_decider
from harness_core.run._guard import Guard
from harness_core.run._masks import read_masks
from harness_core.run._spec import RunSpec
from harness_core.sandbox import (
    Backend,
    BackendChoice,
    EgressProxy,
    ProcessLauncher,
    SandboxConfig,
    SandboxSpec,
    Selected,
    activate_ledger,
    launcher,
    select,
)
from harness_core.store import Store

__all__ = ["Launchers", "build_launchers", "has_net_rules"]

_STORE_SIBLINGS = ("", "-wal", "-shm", "-journal")


@record
class Launchers:
    """The launchers of one run.

    Attributes:
        selected: The sandbox selected for gates (and commands, when `commands` holds).
        commands: Runs `exec`, `shell` and handles.
        gates: Runs verification gates (always sandboxed as selected).
        commands_sandboxed: Whether commands go through the sandbox.
        egress: The run's egress proxy (`[sandbox] network = true` under the native
            backend), or None.
    """

    selected: Selected
    commands: ProcessLauncher
    gates: ProcessLauncher
    commands_sandboxed: bool
    egress: EgressProxy | None = None

    def attach(self, guard: Guard, store: Store | None) -> None:
        """Let the egress proxy decide through `guard`, recording each refusal."""
        if self.egress is not None:
            self.egress.set_decide(recording_decider(guard, store))

    def note_run(self, run_id: str, store: Store) -> None:
        """Name the run these launchers start commands for, and its store (for a sweep)."""
        from harness_core.run._sweep import store_key

        activate_ledger().note_run(run_id, store_key(store))

    def close(self) -> None:
        """End the run's sandboxes (their resident launchers) and stop the egress proxy."""
        for used in {id(self.commands): self.commands, id(self.gates): self.gates}.values():
            close = getattr(used, "close", None)
            if close is not None:
                close()
        if self.egress is not None:
            self.egress.close()


def _read_only_paths(spec: RunSpec) -> tuple[Path, ...]:
    root = spec.workspace.root
    paths: list[Path] = []
    for pattern in PROTECTED_WRITE_PATTERNS:
        literal = pattern.removesuffix("/**")
        paths.append(root / literal)
    for extra in spec.protected_paths:
        path = Path(extra.removesuffix("/**"))  # a protected folder is bound read-only whole
        paths.append(path if path.is_absolute() else root / path)
    return tuple(paths)


def has_net_rules(policy: Policy) -> bool:
    """Whether `policy` (or a policy it is contained in) has an allow_net or deny_net rule."""
    pending = [policy]
    while pending:
        current = pending.pop()
        if any(rule.kind is ActKind.NET for rule in current.rules):
            return True
        pending.extend(current.within)
    return False


def _read_paths(config: SandboxConfig, env: dict[str, str] | None) -> tuple[Path, ...]:
    home = (env or {}).get("HOME", "")
    out: list[Path] = []
    for raw in config.read_paths:
        text = home + raw[1:] if raw.startswith("~") and home else raw
        out.append(Path(os.path.abspath(text)))
    return tuple(out)


def _hidden(spec: RunSpec) -> tuple[Path, ...]:
    """The store and its siblings, and the snapshot folder: masked in every command,
    wherever they are (a store inside the workspace is a supported layout, and the
    snapshots hold copies of the workspace's files)."""
    out: list[Path] = []
    if spec.store_path is not None:
        out += [Path(str(spec.store_path) + suffix) for suffix in _STORE_SIBLINGS]
    if spec.snapshot_dir is not None:
        # Made now, before any command: a mask covers only what exists when the run's
        # sandbox starts, and a folder io made cannot be one the agent planted.
        with contextlib.suppress(OSError):
            spec.snapshot_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        out.append(spec.snapshot_dir)
    return tuple(out)


def _refuse_unconfined_net(selected: Selected, spec: RunSpec) -> None:
    if selected.backend is not Backend.FLOOR or not has_net_rules(spec.policy):
        return
    raise SandboxUnavailable(
        "the policy has allow_net/deny_net rules, but the floor sandbox cannot confine "
        "the network of commands: they would reach any host",
        hint="install bubblewrap so the native sandbox runs (apt-get install bubblewrap), "
        'or remove the net rules, or set [sandbox] backend = "off" to run unconfined knowingly',
    )


def build_launchers(spec: RunSpec) -> Launchers:
    """Select the sandbox and build the launchers for `spec`.

    Raises:
        SandboxUnavailable: `backend = "native"` and the native backend cannot run here;
            `auto` would degrade to a floor that cannot keep a provider key from
            commands; or the floor was selected for a policy with net rules.
    """
    config = spec.sandbox
    activate_ledger()
    selected = select(config, env=spec.env, secrets=spec.provider_keys)
    _refuse_unconfined_net(selected, spec)
    egress = None
    if config.network and selected.backend is Backend.LINUX:
        egress = EgressProxy(policy_decider(spec.policy))
    sandbox_spec = SandboxSpec(
        workdir=spec.workspace.root,
        read_only=_read_only_paths(spec),
        network=config.network,
        limits=config.limits,
        env=spec.env,
        env_allow=config.env_allow,
        read_paths=_read_paths(config, dict(spec.env)),
        hidden=_hidden(spec),
        masked=read_masks(spec.workspace.root, spec.policy),
        egress=egress.socket_path if egress is not None else None,
    )
    gates = launcher(selected, sandbox_spec)
    if config.commands:
        commands = gates
        if spec.command_read_only:  # the gates' inputs: read-only for the agent, not the gate
            extra = tuple(spec.workspace.root / p for p in spec.command_read_only)
            commands = launcher(selected, replace(
                sandbox_spec, read_only=sandbox_spec.read_only + extra))
        return Launchers(selected, commands, gates, True, egress)
    off = select(SandboxConfig(backend=BackendChoice.OFF), env=spec.env)
    return Launchers(selected, launcher(off, sandbox_spec), gates, False, egress)
