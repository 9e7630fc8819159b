"""The four configuration scopes and where their files are found.

Discovery is fixed: four scopes, no include, no extends, no parent-directory search.
This module only looks at paths; it never reads a file's contents, and it reads the
environment only from the `env` mapping its caller passes (never `os.environ`).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from pathlib import Path

from harness_core._record import record
from harness_core.errors import ConfigError

__all__ = ["ConfigFile", "Scope", "discover"]

SYSTEM_DEFAULT = Path("/etc/io/io.toml")
"""The system scope's file when `IO_SYSTEM_CONFIG` is not set."""


class Scope(Enum):
    """A configuration scope, lowest precedence first. Closed: it will not grow."""

    SYSTEM = "system"
    """Machine-wide: `$IO_SYSTEM_CONFIG`, else `/etc/io/io.toml`."""
    USER = "user"
    """The operator's: `$XDG_CONFIG_HOME/io/io.toml`, else `~/.config/io/io.toml`."""
    PROJECT = "project"
    """The workspace's: `<workspace>/io.toml`, or the file given with `--config`."""
    LOCAL = "local"
    """Uncommitted overrides: `<workspace>/io.local.toml`."""

    @property
    def rank(self) -> int:
        """Precedence: a higher rank wins a scalar."""
        return _RANK[self]


_RANK = {Scope.SYSTEM: 0, Scope.USER: 1, Scope.PROJECT: 2, Scope.LOCAL: 3}


@record
class ConfigFile:
    """One scope's file, found on disk.

    Attributes:
        scope: Which scope it provides.
        path: Where it is (absolute).
    """

    scope: Scope
    path: Path

    def describe(self) -> str:
        """``project scope (/w/io.toml)``: how error messages name this file."""
        return f"{self.scope.value} scope ({self.path})"


def _nonempty(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    return value if value else None


def _user_file(env: Mapping[str, str]) -> Path | None:
    xdg = _nonempty(env, "XDG_CONFIG_HOME")
    # The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
    if xdg is not None and Path(xdg).is_absolute():
        return Path(xdg) / "io" / "io.toml"
    home = _nonempty(env, "HOME")
    if home is None:
        return None
    return Path(home) / ".config" / "io" / "io.toml"


def user_templates_dir(env: Mapping[str, str]) -> Path | None:
    """The user scope's template directory: `templates/` beside the user's io.toml."""
    user = _user_file(env)
    return user.parent / "templates" if user is not None else None


def discover(
    workspace: Path, *, config_file: Path | None = None, env: Mapping[str, str]
) -> tuple[ConfigFile, ...]:
    """Find the files of the four scopes, lowest precedence first.

    Only files that exist are returned, except that a `config_file` the operator
    named must exist. Setting `IO_SYSTEM_CONFIG` to a path that does not exist is
    the way to switch the system scope off (tests do).

    Args:
        workspace: The workspace root; the project and local files live in it.
        config_file: The `--config FILE` flag: replaces the project file.
        env: The environment to read `IO_SYSTEM_CONFIG`, `XDG_CONFIG_HOME` and
            `HOME` from.

    Returns:
        The existing scope files, system first, local last.

    Raises:
        ConfigError: `config_file` was given and does not exist.
    """
    workspace = workspace.absolute()
    system = _nonempty(env, "IO_SYSTEM_CONFIG")
    if config_file is not None:
        project = config_file.absolute()
        if not project.exists():
            raise ConfigError(
                f"config file {project} (given with --config) does not exist",
                hint="check the path, or drop --config to use <workspace>/io.toml",
            )
    else:
        project = workspace / "io.toml"
    candidates: list[tuple[Scope, Path | None]] = [
        (Scope.SYSTEM, Path(system).absolute() if system else SYSTEM_DEFAULT),
        (Scope.USER, _user_file(env)),
        (Scope.PROJECT, project),
        (Scope.LOCAL, workspace / "io.local.toml"),
    ]
    return tuple(
        ConfigFile(scope, path) for scope, path in candidates if path is not None and path.exists()
    )
