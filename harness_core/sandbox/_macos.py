"""The macOS native backend: a `sandbox-exec` profile plus the unix rlimits.

Not exercised on this project's CI (it has no macOS runner): the profile text is
unit-tested as data, and the launcher shares all of its process handling with the
floor, which is exercised.

The profile denies by default, allows reads everywhere, process creation and the
usual system lookups, and allows writes only under the workdir and to a few
devices. SBPL applies the last matching rule, so the read-only protected paths are
denied after the workdir is allowed, and `subpath` matching covers a protected
path that does not exist yet. Renaming a directory that leads to a protected path
is denied as an unlink of that directory. The network is denied entirely
(including unix-domain sockets) unless the run allows it. `max_processes` is not
enforced on macOS. This module must not claim more than the profile says: its
entries in `Selected` are written in `_select` from the same facts.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from harness_core.sandbox._base import LaunchRequest, SandboxSpec, Selected
from harness_core.sandbox._process import Launch, PosixLauncher

__all__ = ["MacosLauncher", "profile_text"]

_WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/dtracehelper", "/dev/tty")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _spellings(path: Path) -> list[str]:
    """A path as given and as resolved (/tmp and /var are symlinks into /private)."""
    names = [str(path)]
    real = str(path.resolve())
    return names if real in names else [*names, real]


def _ancestors(workdir: Path, protected: Path) -> Iterable[Path]:
    try:
        rel = protected.relative_to(workdir)
    except ValueError:
        return []
    return [workdir.joinpath(*rel.parts[:depth]) for depth in range(1, len(rel.parts))]


def profile_text(spec: SandboxSpec) -> str:
    """The SBPL profile for one spec.

    Args:
        spec: The workdir, protected paths and network switch.

    Returns:
        Profile source for `sandbox-exec -p`.
    """
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec)",
        "(allow process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow process-info* (target same-sandbox))",
        "(allow file-read*)",
        "(allow file-ioctl)",
        "(allow sysctl-read)",
        "(allow mach-lookup)",
        "(allow ipc-posix-shm)",
    ]
    for name in _spellings(spec.workdir):
        lines.append(f"(allow file-write* (subpath {_quote(name)}))")
    devices = " ".join(f"(literal {_quote(device)})" for device in _WRITABLE_DEVICES)
    lines.append(f"(allow file-write* {devices})")
    for path in spec.read_only:
        absolute = path if path.is_absolute() else spec.workdir / path
        for name in _spellings(absolute):
            lines.append(f"(deny file-write* (subpath {_quote(name)}))")
        for ancestor in _ancestors(spec.workdir, absolute):
            lines.append(f"(deny file-write-unlink (literal {_quote(str(ancestor))}))")
    lines.append("(allow network*)" if spec.network else "(deny network*)")
    return "\n".join(lines) + "\n"


class MacosLauncher(PosixLauncher):
    """Starts each command under `sandbox-exec -p PROFILE` with the unix rlimits."""

    def __init__(self, selected: Selected, spec: SandboxSpec, *, sandbox_exec: str) -> None:
        super().__init__(selected, spec, apply_rlimits=True, pids=None)
        self._sandbox_exec = sandbox_exec
        self._profile = profile_text(spec)

    def _wrap(self, request: LaunchRequest, program: str, env: dict[str, str]) -> Launch:
        argv = [self._sandbox_exec, "-p", self._profile, program, *request.argv[1:]]
        return Launch(argv=argv, executable=None, env=env)
